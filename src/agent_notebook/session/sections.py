"""The session notebook's text (seed 000), as pure functions: template, parse, render, cut.

The notebook is Markdown: one ``## <Section>`` header per section, in the seed's order, each
followed by its purpose as an italic guidance line, then the section's content::

    ## Current State
    _Where the conversation stands right now_
    Implementing auth middleware

Headers and guidance lines belong to the format, not to the content: parsing drops them and
rendering always writes all seven back, so no edit can remove them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from ..core.tokens import TokenCounter
from ..errors import InvalidInput

SECTIONS: Final[dict[str, str]] = {
    "Current State": "Where the conversation stands right now",
    "Task Specification": "What the user asked for",
    "Files and Functions": "Key files and code locations discussed",
    "Workflow": "Steps taken or planned",
    "Errors and Corrections": "Problems encountered and how they were resolved",
    "Key Results": "Important outputs or findings",
    "Worklog": "Chronological activity log",
}
SECTION_NAMES: Final = tuple(SECTIONS)
TITLE: Final = "# Session Notebook"

_NAMES = "|".join(re.escape(n) for n in SECTIONS)
_HEADER = re.compile(rf"^## ({_NAMES})[ \t]*$", re.M)
_HEADER_LIKE = re.compile(rf"^\\*## ({_NAMES})[ \t]*$", re.M)
_ESCAPED_HEADER = re.compile(rf"^\\+## ({_NAMES})[ \t]*$", re.M)

Sections = dict[str, str]


def check_section(name: str) -> str:
    if name not in SECTIONS:
        raise InvalidInput(
            f"unknown section {name!r}; the sections are: {', '.join(SECTION_NAMES)}"
        )
    return name


def empty_sections() -> Sections:
    return dict.fromkeys(SECTIONS, "")


def _escape(body: str) -> str:
    """A content line that reads as a section header gets one more leading backslash, so it
    stays content; :func:`_unescape` takes it off again."""
    return _HEADER_LIKE.sub(lambda m: "\\" + m[0], body)


def _unescape(body: str) -> str:
    return _ESCAPED_HEADER.sub(lambda m: m[0][1:], body)


def render(sections: Sections) -> str:
    """The whole notebook, headers and guidance lines included, sections in seed order."""
    parts = [TITLE, ""]
    for name, purpose in SECTIONS.items():
        parts += [f"## {name}", f"_{purpose}_"]
        body = _escape(sections.get(name, "").strip("\n"))
        if body:
            parts.append(body)
        parts.append("")
    return "\n".join(parts)


def template() -> str:
    return render(empty_sections())


def parse(content: str) -> Sections:
    """Sections from notebook text. Unknown ``##`` headers are content of the section above;
    text before the first section header (other than the title) is an error."""
    matches = list(_HEADER.finditer(content))
    head = content[: matches[0].start()] if matches else content
    if head.strip() not in ("", TITLE):
        raise InvalidInput(
            "notebook text must start with a section header such as '## Current State' "
            f"(found {head.strip()[:60]!r}); use update_section to change one section"
        )
    sections = empty_sections()
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(content)
        body = content[m.end() :]
        body = body[: end - m.end()].strip("\n")
        guidance = f"_{SECTIONS[m[1]]}_"
        if body.startswith(guidance):
            body = body[len(guidance) :].lstrip("\n")
        body = _unescape(body)
        previous = sections[m[1]]
        sections[m[1]] = f"{previous}\n{body}".strip("\n") if previous else body
    return sections


def render_parts(parts: Sections) -> str:
    """Some sections' texts as one, each under its header (no title, no guidance lines), so
    :func:`part` gives each back byte for byte."""
    return "\n".join(f"## {check_section(name)}\n{_escape(text)}" for name, text in parts.items())


def part(content: str, name: str) -> str | None:
    """Section ``name``'s text in what :func:`render_parts` made; None without its header
    (a redaction may have taken the line)."""
    matches = list(_HEADER.finditer(content))
    for i, m in enumerate(matches):
        if m[1] == name:
            end = matches[i + 1].start() - 1 if i + 1 < len(matches) else len(content)
            return _unescape(content[m.end() + 1 : end])
    return None


@dataclass(frozen=True, slots=True)
class Cut:
    """The result of condensing one text: what stays, and what was cut (oldest first)."""

    kept: str
    removed: str


def cut_to_budget(text: str, max_tokens: int, counter: TokenCounter, marker_tokens: int) -> Cut:
    """Keep the newest lines of ``text`` (its end) within ``max_tokens`` minus room for a
    marker; ``removed + kept == text``, always. A last line too long to keep whole is cut
    inside, keeping its end."""
    if counter.count(text) <= max_tokens:
        return Cut(text, "")
    room = max(0, max_tokens - marker_tokens)
    starts = [0, *(i + 1 for i, ch in enumerate(text) if ch == "\n")]
    split = len(text)
    for start in reversed(starts):  # newest line first
        if counter.count(text[start:]) > room:
            break
        split = start
    if split >= starts[-1] and counter.count(text[starts[-1] :]) > room:
        lo, hi = starts[-1], len(text)  # the last line alone is too long: its longest tail
        while lo < hi:
            mid = (lo + hi) // 2
            if counter.count(text[mid:]) <= room:
                hi = mid
            else:
                lo = mid + 1
        split = lo
    return Cut(kept=text[split:], removed=text[:split])


def marker(reference: str) -> str:
    """The line that ends a condensed section, naming where the cut text went."""
    return f"[condensed: earlier text moved to {reference}]"
