"""The user's documentation as the tests read it: the README (the front door) and the pages
of docs/ (the rest), so a test finds the text it checks wherever it moved."""

from __future__ import annotations

import re

from tests.support import ROOT

#: Every page whose commands and examples run in the suite, the README first.
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def read(page: str) -> str:
    """One page by its path from the repository's root ('README.md', 'docs/server.md')."""
    return (ROOT / page).read_text(encoding="utf-8")


def all_text() -> str:
    """The README and every docs page, one after the other."""
    return "\n".join(path.read_text(encoding="utf-8") for path in DOCS)


def blocks(language: str, page: str | None = None) -> list[tuple[str, str]]:
    """(page, code) of every fenced block in that language, of one page or of all, in order."""
    paths = [ROOT / page] if page else DOCS
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT).as_posix()
        found += [(name, code) for code in re.findall(rf"```{language}\n(.*?)```", text, re.S)]
    return found
