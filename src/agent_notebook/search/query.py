"""What a query says about itself, read without a model (pure): the turns of a dialogue
pasted as the query and its latest ones, and the dates it names.

A query that is a dialogue so far ("Ana: ...\\nBo: ...") asks mostly about its last turns:
search ranks them once more on their own, so their words are not drowned by the earlier
ones'.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from ..core.enrich import STOPWORDS, identifiers
from ..core.lexical import tokenize

__all__ = [
    "DateSpan",
    "content_words",
    "dialogue_context",
    "dialogue_words",
    "latest_turns",
    "query_dates",
    "speaker_turns",
    "turns",
]


#: "Ana: ..." or "[User] ...": who speaks, at the start of a turn.
_SPEAKER_TAG = re.compile(r"^(?:[^\W\d][\w .'-]{0,30}:|\[[^\]\n]{1,30}\])\s+")


_PUNCTUATION = "\"'`.,;:!?()[]{}<>\u00ab\u00bb\u201c\u201d\u2018"


def content_words(query: str) -> list[str]:
    """The query's words without stopwords ("what's", "the") and stray letters (the "s"
    of "Ana's"), as :func:`agent_notebook.core.lexical.tokenize` splits them."""
    return list(_content_words(query))


@functools.lru_cache(maxsize=64)  # one search asks it of the same query several times
def _content_words(query: str) -> tuple[str, ...]:
    kept = []
    for word in query.split():
        if word.casefold().replace("\u2019", "'").strip(_PUNCTUATION) in STOPWORDS:
            continue
        kept += [t for t in tokenize(word) if t not in STOPWORDS and (len(t) > 1 or t.isdigit())]
    return tuple(kept)


def turns(query: str) -> list[str]:
    """The query's non-empty lines: one per turn when it is a dialogue. When most of them
    start with who speaks ("Ana: "), those tags are cut: a speaker's name on every line
    is not what the dialogue is about, and would match every moment that names them."""
    lines = _lines(query)
    if _tagged(lines):
        lines = [_SPEAKER_TAG.sub("", ln, count=1) for ln in lines]
    return lines


def _lines(query: str) -> list[str]:
    return [line.strip() for line in query.splitlines() if line.strip()]


def _tagged(lines: list[str]) -> bool:
    """Whether ``lines`` are a dialogue: two or more, most of them starting with who speaks."""
    return len(lines) >= 2 and 2 * sum(bool(_SPEAKER_TAG.match(ln)) for ln in lines) >= len(lines)


def speaker_turns(query: str, speaker: str, n: int, max_words: int = 0) -> str | None:
    """The last ``n`` turns of ``speaker`` (its tag, "User" of "User: ...", compared
    without case; when they never speak, whoever speaks last), tags cut, at most their
    last ``max_words`` words (0: all), when the query is a speaker-tagged dialogue; else
    None. A user's memory is evoked by what the user says of their situation, lately: the
    other side's questions ("How did it go?") and the dialogue's start blur it."""
    lines = _lines(query)
    if n <= 0 or not _tagged(lines):
        return None
    theirs = _speaker_lines(lines, speaker)
    if not theirs:  # the last line has no tag
        return None
    return _newest_words("\n".join(_untagged(lines[i]) for i in theirs[-n:]), max_words)


def dialogue_context(query: str, speaker: str, said: int, n: int, max_words: int = 0) -> str | None:
    """The last ``n`` turns of a speaker-tagged dialogue but the ``said`` last turns of
    ``speaker`` (those :func:`speaker_turns` reads), whoever speaks, tags cut, at most
    their last ``max_words`` words (0: all); else None (and when nothing is left). The
    rest of the exchange around what the user said: the other side's replies name the
    situation in other words ("Those moments of shared joy are unforgettable")."""
    lines = _lines(query)
    if n <= 0 or not _tagged(lines):
        return None
    theirs = _speaker_lines(lines, speaker)
    if not theirs:
        return None
    skipped = set(theirs[-said:]) if said > 0 else set()
    rest = [_untagged(lines[i]) for i in range(max(0, len(lines) - n), len(lines))]
    kept = [text for i, text in enumerate(rest, len(lines) - len(rest)) if i not in skipped]
    return _newest_words("\n".join(kept), max_words) if kept else None


def _speaker_lines(lines: list[str], speaker: str) -> list[int]:
    """Which of ``lines`` ``speaker`` says (when they never speak, whoever speaks last;
    none when the last line has no tag)."""
    by_speaker: dict[str, list[int]] = {}
    last = ""
    for i, line in enumerate(lines):
        tag = _SPEAKER_TAG.match(line)
        last = "" if tag is None else tag.group(0).strip().strip("[]:").strip().casefold()
        if tag is not None:
            by_speaker.setdefault(last, []).append(i)
    return by_speaker.get(speaker.strip().casefold()) or by_speaker.get(last) or []


def _untagged(line: str) -> str:
    tag = _SPEAKER_TAG.match(line)
    return line if tag is None else line[tag.end() :]


def _newest_words(text: str, max_words: int) -> str:
    """``text``, or its last ``max_words`` words (0: all): the newest, where it ends."""
    if max_words and len(text.split()) > max_words:
        return " ".join(text.split()[-max_words:])
    return text


def dialogue_words(query: str) -> str:
    """The query as the lexical signal reads it: a dialogue without its speaker tags."""
    return "\n".join(turns(query)) if "\n" in query.strip() else query


def latest_turns(query: str, n: int) -> str | None:
    """The last ``n`` turns of a query of more turns than that, else None."""
    lines = turns(query)
    if n <= 0 or len(lines) <= n:
        return None
    return "\n".join(lines[-n:])


@dataclass(frozen=True, slots=True)
class DateSpan:
    """A day or a month the query names, as UTC bounds (``until`` exclusive) and its key."""

    key: str
    since: datetime
    until: datetime


def query_dates(query: str) -> list[DateSpan]:
    """The full days (``7 May 2023``, ``2023-05-07``) and months (``May 2023``) in the
    query; a day without a year (``May 7``) is too vague to match anything by."""
    spans: list[DateSpan] = []
    for key in identifiers(query):
        parts = key.split("-")
        if not (parts[0].isdigit() and len(parts[0]) == 4 and 2 <= len(parts) <= 3):
            continue
        try:
            numbers = [int(p) for p in parts]
            first = date(numbers[0], numbers[1], numbers[2] if len(parts) == 3 else 1)
        except ValueError:
            continue
        if len(parts) == 3:
            last = first + timedelta(days=1)
        else:
            last = date(first.year + first.month // 12, first.month % 12 + 1, 1)
        spans.append(DateSpan(key, _utc(first), _utc(last)))
    return spans


def _utc(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)
