"""Strict tooling is part of the suite: ruff (lint and format), mypy --strict, and the
import contract (import-linter: the layers of the README's "Development" section, declared
in pyproject.toml)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"], ["lint-imports"]],
    ids=["ruff-check", "ruff-format", "mypy", "import-layers"],
)
def test_tool_passes(command: list[str]) -> None:
    # This checkout's package, whichever one the environment has installed
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    result = subprocess.run(
        [str(BIN / command[0]), *command[1:]],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
