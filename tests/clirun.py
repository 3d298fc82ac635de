"""Running the real ``agent-notebook`` command in a process, for the CLI tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def cli(
    home: Path, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``agent-notebook ARGS --home HOME``, with no AGENT_NOTEBOOK_* variables but ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_NOTEBOOK_")}
    return subprocess.run(
        [sys.executable, "-m", "agent_notebook", *args, "--home", str(home)],
        input=stdin,
        capture_output=True,
        timeout=120,
        env={**clean, **(env or {})},
    )


def data(result: subprocess.CompletedProcess[bytes]) -> Any:
    """The JSON a successful command printed."""
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(result.stdout)


def counts(home: Path) -> tuple[int, int]:
    """(sessions, moments) of the notebook at ``home``."""
    totals = data(cli(home, "stats", "--format", "json"))
    return totals["sessions"], totals["moments"]
