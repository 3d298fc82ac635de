"""What the tests share: helpers, fixtures and fakes that are not tests themselves (no test
module imports another; ``tests/project/test_tooling.py`` checks it)."""

from pathlib import Path

#: The checkout's root (the directory of ``pyproject.toml``).
ROOT = Path(__file__).resolve().parents[2]
