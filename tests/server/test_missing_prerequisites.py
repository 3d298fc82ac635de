"""A run that skips tests for want of a program says so at its end (issue 43, item 11):
one line per missing prerequisite, how many tests it skipped and what to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_the_end_of_a_run_names_each_missing_prerequisite(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_XDIST_WORKER")},
        "AGENT_NOTEBOOK_TEST_CHROMIUM": str(tmp_path / "no-chromium"),
        "AGENT_NOTEBOOK_TEST_REDOCLY": str(tmp_path / "no-redocly"),
    }
    # one test of each kind is enough to be skipped (a whole module costs its fixtures)
    modules = [
        "tests/server/test_openapi_lint.py",
        "tests/server/test_web_pages.py::test_axe_finds_no_table_header_without_a_name",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *modules, "-n0", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr  # skipped, not failed
    lines = done.stdout.splitlines()
    chromium = [line for line in lines if line.startswith("missing Chromium: ")]
    redocly = [line for line in lines if line.startswith("missing Redocly CLI: ")]
    assert len(chromium) == 1 and "apt-get install chromium" in chromium[0], done.stdout
    assert " 0 test" not in chromium[0] and "test(s) skipped" in chromium[0]
    assert redocly == [
        "missing Redocly CLI: 1 test(s) skipped; install it: npm ci --prefix "
        f"{ROOT / 'tools' / 'openapi-lint'} (the OpenAPI lint)"
    ], done.stdout
