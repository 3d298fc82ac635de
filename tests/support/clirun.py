"""Running the ``agent-notebook`` command for the CLI tests.

:func:`cli` runs the command in this process (Click's test isolation around the real entry
point ``agent_notebook.cli.main``): a Python process costs about 2 s of imports per call and
tells nothing more unless the test is about the process itself. It answers like the process
would: the exit code, stdout and stderr as bytes, a traceback on stderr and code 1 for an
uncaught exception, and warnings logged on stderr (what Python's last-resort handler prints
in a process where nothing configured logging). :func:`cli_process` runs the real process,
for the tests about it (the entry point, signals, a server).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tests.support.waiting import HANG_GUARD_S

PROGRAM = "agent-notebook"


def _environment(env: dict[str, str] | None) -> dict[str, str | None]:
    """No AGENT_NOTEBOOK_* variables of the test run, only those of ``env``."""
    cleared: dict[str, str | None] = {
        k: None for k in os.environ if k.startswith("AGENT_NOTEBOOK_")
    }
    return {**cleared, **(env or {})}


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Like :data:`logging.lastResort`: the message alone, on whatever ``sys.stderr`` is now."""

    def __init__(self) -> None:
        super().__init__()
        self.setLevel(logging.WARNING)

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def cli(
    home: Path, *args: str, stdin: bytes | str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``agent-notebook ARGS --home HOME`` in this process, with no AGENT_NOTEBOOK_*
    variables but ``env``."""
    return run([*args, "--home", str(home)], stdin=stdin, env=env)


def run(
    args: list[str], *, stdin: bytes | str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``agent-notebook ARGS`` in this process (see :func:`cli`)."""
    from agent_notebook.cli import main

    handler = _StderrHandler()
    root = logging.getLogger()
    saved = sys.argv, sys.excepthook
    code = 0
    with CliRunner().isolation(input=stdin, env=_environment(env)) as (out, err, _):
        sys.argv = [PROGRAM, *args]
        root.addHandler(handler)
        try:
            main()
        except SystemExit as done:
            code = _exit_code(done.code)
        except Exception:  # noqa: BLE001 (any error: what the process prints before exit 1)
            sys.stderr.write("".join(traceback.format_exc()))
            code = 1
        finally:
            root.removeHandler(handler)
            sys.argv, sys.excepthook = saved
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = out.getvalue(), err.getvalue()
    return subprocess.CompletedProcess([PROGRAM, *args], code, stdout, stderr)


def text_cli(
    home: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """:func:`cli` with stdout and stderr decoded (UTF-8), like ``subprocess.run(text=True)``."""
    return as_text(cli(home, *args, stdin=stdin, env=env))


def as_text(done: subprocess.CompletedProcess[bytes]) -> subprocess.CompletedProcess[str]:
    """``done`` with stdout and stderr decoded (UTF-8)."""
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def _exit_code(code: object) -> int:
    """What ``sys.exit(code)`` makes the exit status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def cli_process(
    home: Path, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``python -m agent_notebook ARGS --home HOME`` as a real process (see :func:`cli`)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_NOTEBOOK_")}
    return subprocess.run(
        [sys.executable, "-m", "agent_notebook", *args, "--home", str(home)],
        input=stdin,
        capture_output=True,
        timeout=HANG_GUARD_S,
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
