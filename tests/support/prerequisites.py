"""What the suite needs besides Python packages, and what to install for each: a test that
cannot run without one is skipped (saying why; failed under ``CI=true``), and the end of
the run names each missing one in one line (``pytest_terminal_summary`` in
tests/conftest.py), so a skip is never silent."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

#: Debian's Chromium (tests/support/web_browser.py drives it); AGENT_NOTEBOOK_TEST_CHROMIUM
#: points elsewhere (or at nothing).
CHROMIUM = os.environ.get("AGENT_NOTEBOOK_TEST_CHROMIUM") or "/usr/bin/chromium"
TOOL = Path(__file__).parents[2] / "tools" / "openapi-lint"
#: Redocly CLI (the OpenAPI lint), from npm; AGENT_NOTEBOOK_TEST_REDOCLY points elsewhere.
REDOCLY = Path(
    os.environ.get("AGENT_NOTEBOOK_TEST_REDOCLY") or TOOL / "node_modules" / ".bin" / "redocly"
)
#: Each prerequisite: its name, the words its tests' skip reason begins with, the install.
PREREQUISITES = (
    ("Chromium", f"no {CHROMIUM}", "apt-get install chromium (the browser tests)"),
    ("Playwright", "Playwright for Python", "pip install -e '.[dev]' (the browser tests)"),
    ("Redocly CLI", "Redocly CLI is not installed", f"npm ci --prefix {TOOL} (the OpenAPI lint)"),
)


def redocly_missing() -> str | None:
    """Why the OpenAPI lint cannot run here, or None."""
    return None if REDOCLY.exists() else f"Redocly CLI is not installed: npm ci --prefix {TOOL}"


def missing_lines(skip_reasons: Iterable[str]) -> list[str]:
    """One line per prerequisite whose absence skipped tests, with how many and what to
    install."""
    reasons = list(skip_reasons)
    lines = []
    for name, starts, install in PREREQUISITES:
        count = sum(1 for reason in reasons if reason.startswith(starts))
        if count:
            lines.append(f"missing {name}: {count} test(s) skipped; install it: {install}")
    return lines
