"""Headless Chromium for the web pages' tests and scripts: Debian's ``/usr/bin/chromium``
driven by Playwright (Playwright's own browser download cannot work here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.prerequisites import CHROMIUM

if TYPE_CHECKING:
    from collections.abc import Iterator

    from playwright.sync_api import Browser, Playwright

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not Path(CHROMIUM).exists():
        return f"no {CHROMIUM}: apt-get install chromium (.ci/run does)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[dev]')"
    return None


def launch(playwright: Playwright) -> Browser:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def locomo_file(path: Path) -> Path:
    """A small made-up conversation in LoCoMo's format: two sessions of Ana and Bo."""

    def turns(session: int, *said: tuple[str, str]) -> list[dict[str, Any]]:
        return [
            {"speaker": who, "dia_id": f"D{session}:{i + 1}", "text": text}
            for i, (who, text) in enumerate(said)
        ]

    conversation = {
        "speaker_a": "Ana",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": turns(
            1,
            ("Ana", "I started painting sunsets at the lake."),
            ("Bo", "Lovely! Which colours do you use for the lake?"),
            ("Ana", "Mostly cobalt blue. My alarm code is 4417, do not tell anyone."),
        ),
        "session_2_date_time": "9:05 am on 12 May, 2023",
        "session_2": turns(
            2,
            ("Bo", "I adopted a puppy named Biscuit."),
            ("Ana", "Biscuit sounds adorable, send photos!"),
        ),
    }
    path.write_text(json.dumps([{"sample_id": "conv-t", "conversation": conversation}]))
    return path


def ingest(home: Path, file: Path, env: dict[str, str]) -> None:
    command = [sys.executable, "-m", "agent_notebook", "ingest", str(file), "--home", str(home)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium for a module's tests (a plugin of the suite: tests/conftest.py);
    skipped, saying why, without it, except in CI, where that fails."""
    why = missing()
    if why is not None:
        if in_ci():
            pytest.fail(f"the browser tests must run in CI: {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()
