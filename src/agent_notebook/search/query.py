"""What a query says about itself, read without a model (pure): the turns of a dialogue
pasted as the query and its latest ones, and the dates it names.

A query that is a dialogue so far ("Ana: ...\\nBo: ...") asks mostly about its last turns:
search ranks them once more on their own, so their words are not drowned by the earlier
ones'.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from ..core.enrich import STOPWORDS, identifiers
from ..core.lexical import tokenize

__all__ = [
    "DateSpan",
    "Turn",
    "content_words",
    "dialogue",
    "dialogue_context",
    "dialogue_words",
    "is_time_question",
    "latest_turns",
    "query_dates",
    "speaker_turns",
    "turns",
]


#: Who speaks, at the start of a turn: "Ana: ", "<Ana>: ", "[Ana] ", "[Ana]: ", "**Ana**: ",
#: "**Ana:** ", "Ana (10:32): ". The name is a word's letters first, at most 31 characters.
_NAME = r"[^\W\d][\w .'-]{0,30}"
_SPEAKER_TAG = re.compile(
    rf"^(?:\*\*(?P<bold>{_NAME}?):?\*\*:?|<(?P<angle>{_NAME})>:?|\[(?P<square>[^\]\n]{{1,30}})\]:?"
    rf"|(?P<plain>{_NAME}?)(?:\s*\([^)\n]{{0,30}}\))?:)\s+"
)
#: A line that opens or closes a dialogue, not a turn: "[BEGIN DIALOGUE]", "--- end of
#: conversation ---", "<dialogue>", "</chat>", "### Conversation", "=== Human Message ===".
_MARKER = re.compile(
    r"^[\s\-=#*_~\[<(/]*(?:(?:begin|start|end)(?:\s+of)?(?:\s+(?:the\s+)?"
    r"(?:dialogue|conversation|chat|transcript|messages?))?|(?:dialogue|conversation|chat|"
    r"transcript|messages?)(?:\s+(?:begins?|starts?|ends?))?)[\s\-=#*_~\]>):]*$",
    re.IGNORECASE,
)
#: LangChain's printed messages: "==== Human Message ====" heads each one's text.
_LANGCHAIN_HEAD = re.compile(r"^=+\s*(\w+) Message\s*=+$")
#: The keys of a message in a JSON list of messages: who speaks and what they say.
_WHO_KEYS = ("role", "speaker", "name", "author", "from", "sender", "type")
_TEXT_KEYS = ("content", "text", "message", "value", "utterance")
_QUOTES = '"\u201c\u201d\u00ab\u00bb'


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a dialogue: who speaks ("" when it is not said) and what they say."""

    speaker: str
    text: str


def dialogue(query: str) -> list[Turn] | None:
    """The turns of ``query`` when it is a dialogue in any common shape, else None: a JSON
    list of messages (``{"role", "content"}``, ``{"speaker", "text"}``, or under
    ``"messages"``), LangChain's printed messages (``=== Human Message ===``), or lines that
    start with who speaks (``Name:``, ``<Name>:``, ``[Name]``, ``**Name**:``), their text
    maybe quoted and maybe going on over the next lines, between begin/end markers. Two
    turns or more, most of them with a speaker."""
    return _dialogue(query)


@functools.lru_cache(maxsize=64)
def _dialogue_cached(query: str) -> tuple[Turn, ...] | None:
    found = _json_turns(query) or _langchain_turns(query) or _tagged_turns(query)
    if found is None or len(found) < 2:
        return None
    if 2 * sum(bool(t.speaker) for t in found) < len(found):
        return None
    return tuple(found)


def _dialogue(query: str) -> list[Turn] | None:
    found = _dialogue_cached(query)
    return None if found is None else list(found)


def _json_turns(query: str) -> list[Turn] | None:
    text = query.strip()
    if not text.startswith(("[", "{")):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, dict):
        data = data.get("messages") or data.get("turns") or data.get("dialogue")
    if not isinstance(data, list):
        return None
    found = []
    for item in data:
        if not isinstance(item, dict):
            return None
        who = next((item[k] for k in _WHO_KEYS if isinstance(item.get(k), str)), "")
        said = next((item[k] for k in _TEXT_KEYS if k in item), None)
        if isinstance(said, list):  # content parts: [{"type": "text", "text": ...}]
            said = " ".join(p.get("text", "") for p in said if isinstance(p, dict))
        if not isinstance(said, str):
            return None
        if said.strip():
            found.append(Turn(who.strip(), " ".join(said.split())))
    return found


def _langchain_turns(query: str) -> list[Turn] | None:
    found: list[Turn] = []
    speaker, said = "", list[str]()
    for line in query.splitlines():
        head = _LANGCHAIN_HEAD.match(line.strip())
        if head:
            if speaker and said:
                found.append(Turn(speaker, " ".join(said)))
            speaker, said = head.group(1), []
        elif line.strip() and speaker:
            said.append(line.strip())
    if speaker and said:
        found.append(Turn(speaker, " ".join(said)))
    return found or None


def _tagged_turns(query: str) -> list[Turn]:
    """Lines, each starting a turn when it says who speaks; a line without that goes on
    the turn before it when that turn's quote is still open, else is a turn of its own."""
    found: list[Turn] = []
    open_quote = False
    for line in _lines(query):
        if _MARKER.match(line):
            continue
        tag = _SPEAKER_TAG.match(line)
        if tag is None:
            if open_quote and found:
                last = found[-1]
                found[-1] = Turn(last.speaker, f"{last.text} {_unquoted(line)}".strip())
                open_quote = not line.rstrip().endswith(tuple(_QUOTES))
            else:
                found.append(Turn("", line))
            continue
        rest = line[tag.end() :].strip()
        open_quote = rest[:1] in _QUOTES and not (len(rest) > 1 and rest[-1] in _QUOTES)
        found.append(Turn(_speaker_of(tag), _unquoted(rest)))
    return found


def _speaker_of(tag: re.Match[str]) -> str:
    name = next(g for g in tag.groups() if g is not None) if any(tag.groups()) else ""
    return name.strip().strip("*").strip()


def _unquoted(text: str) -> str:
    text = text.strip()
    if text[:1] in _QUOTES:
        text = text[1:]
    if text[-1:] in _QUOTES:
        text = text[:-1]
    return text.strip()


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
    """The query's turns when it is a dialogue (see :func:`dialogue`), without who speaks: a
    speaker's name on every turn is not what the dialogue is about, and would match every
    moment that names them; else its non-empty lines."""
    found = _dialogue(query)
    return _lines(query) if found is None else [t.text for t in found if t.text]


def _lines(query: str) -> list[str]:
    return [line.strip() for line in query.splitlines() if line.strip()]


def speaker_turns(query: str, speaker: str, n: int, max_words: int = 0) -> str | None:
    """The last ``n`` turns of ``speaker`` (its tag, "User" of "User: ...", compared
    without case; when they never speak, whoever speaks last), tags cut, at most their
    last ``max_words`` words (0: all), when the query is a dialogue; else None. A user's
    memory is evoked by what the user says of their situation, lately: the other side's
    questions ("How did it go?") and the dialogue's start blur it."""
    found = _dialogue(query)
    if n <= 0 or found is None:
        return None
    theirs = _speaker_lines(found, speaker)
    if not theirs:  # the last turn says no speaker
        return None
    return _newest_words("\n".join(found[i].text for i in theirs[-n:]), max_words)


def dialogue_context(query: str, speaker: str, said: int, n: int, max_words: int = 0) -> str | None:
    """The last ``n`` turns of a dialogue but the ``said`` last turns of ``speaker``
    (those :func:`speaker_turns` reads), whoever speaks, tags cut, at most their last
    ``max_words`` words (0: all); else None (and when nothing is left). The rest of the
    exchange around what the user said: the other side's replies name the situation in
    other words ("Those moments of shared joy are unforgettable")."""
    found = _dialogue(query)
    if n <= 0 or found is None:
        return None
    theirs = _speaker_lines(found, speaker)
    if not theirs:
        return None
    skipped = set(theirs[-said:]) if said > 0 else set()
    first = max(0, len(found) - n)
    kept = [found[i].text for i in range(first, len(found)) if i not in skipped]
    return _newest_words("\n".join(kept), max_words) if kept else None


#: Names of the user's side of a dialogue, as the message formats spell them.
_USER_NAMES = frozenset({"user", "human", "me", "you", "customer", "client"})


def _speaker_lines(found: list[Turn], speaker: str) -> list[int]:
    """Which of the turns ``speaker`` says (a "user" speaker also names "human", "User 1"
    and the like; when they never speak, whoever speaks last; none when the last turn says
    no speaker)."""
    by_speaker: dict[str, list[int]] = {}
    for i, turn in enumerate(found):
        if turn.speaker:
            by_speaker.setdefault(turn.speaker.casefold(), []).append(i)
    wanted = speaker.strip().casefold()
    if wanted in by_speaker:
        return by_speaker[wanted]
    if wanted in _USER_NAMES:
        users = sorted(i for name, ids in by_speaker.items() if _is_user(name) for i in ids)
        if users:
            return users
    last = found[-1].speaker.casefold()
    return by_speaker.get(last, []) if last else []


def _is_user(name: str) -> bool:
    return name in _USER_NAMES or name.rstrip(" 0123456789") in _USER_NAMES


def _newest_words(text: str, max_words: int) -> str:
    """``text``, or its last ``max_words`` words (0: all): the newest, where it ends."""
    if max_words and len(text.split()) > max_words:
        return " ".join(text.split()[-max_words:])
    return text


def dialogue_words(query: str) -> str:
    """The query as the lexical signal reads it: a dialogue without who speaks."""
    return "\n".join(turns(query)) if "\n" in query.strip() or _dialogue(query) else query


_TIME_QUESTION = re.compile(
    r"^\W*(?:(?:and|so|but|in|on|since|until|by)\s+)?(?:when\b|what\s+(?:year|month|date|day|"
    r"time|week)\b|which\s+(?:year|month|date|day|week)\b|how\s+long\b|how\s+many\s+"
    r"(?:years|months|weeks|days)\b|how\s+old\b)",
    re.IGNORECASE,
)


def is_time_question(query: str) -> bool:
    """Whether ``query`` asks about time: "When did ...", "In which year ...", "How long
    has ...", "How many weeks ..."."""
    return bool(_TIME_QUESTION.match(query)) and "\n" not in query.strip()


def latest_turns(query: str, n: int) -> str | None:
    """The last ``n`` turns of a query of more turns than that, else None."""
    lines = turns(query)
    if n <= 0 or len(lines) <= n:
        return None
    return "\n".join(lines[-n:])


@dataclass(frozen=True, slots=True)
class DateSpan:
    """A day, a month or a year the query names, as UTC bounds (``until`` exclusive) and
    its key."""

    key: str
    since: datetime
    until: datetime


def query_dates(query: str) -> list[DateSpan]:
    """The full days (``7 May 2023``, ``2023-05-07``), months (``May 2023``) and years
    (``2020``) in the query; a day without a year (``May 7``) is too vague to match
    anything by."""
    spans: list[DateSpan] = []
    for key in identifiers(query):
        parts = key.split("-")
        if not (parts[0].isdigit() and len(parts[0]) == 4 and 1 <= len(parts) <= 3):
            continue
        if len(parts) == 1:  # a year: "in 2020" ("three years ago", said in 2023)
            if 1900 <= int(key) <= 2199:
                spans.append(
                    DateSpan(key, _utc(date(int(key), 1, 1)), _utc(date(int(key) + 1, 1, 1)))
                )
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
