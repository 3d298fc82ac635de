"""What a question says beyond its words, read without a model (pure): when it points
("last week", "25 November", "before the move", "the first time"), against the time it is
asked; the people it names; whether it gathers ("which countries…", "how many times…"); and
whether a recorded question is the same question asked again (an echo, not an answer).

The time words are read by :func:`agent_notebook.core.dates.time_spans`, the code that
resolves a moment's own relative dates when it is recorded, so "yesterday" in a question and
"yesterday" in a turn name the same day. They are then taken out of the words the lexical and
vector signals read: "what did we decide last week" is about a decision, and "all week" is
not an answer to it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal

from ..core.dates import MONTHS, WEEKDAYS, TimeSpan, time_spans
from ..core.lexical import stem, terms
from .query import content_words, query_dates

__all__ = [
    "NO_TIME",
    "AskedTime",
    "asked_time",
    "asks",
    "capitalised",
    "echoes",
    "first_person_claim",
    "gathers",
    "named_people",
    "says_i",
]

Order = Literal["first", "last"]
Relation = Literal["before", "after"]

#: "the first time", "when did Tom first mention…": the earliest of the matches.
_FIRST = re.compile(
    r"\b(?:for\s+)?(?:the\s+)?first(?:\s+time)?\b(?!\s+(?:name|aid|class|floor|half|place|prize|"
    r"step|of|one|two|three|few|couple|thing|and))",
    re.IGNORECASE,
)
#: "the last time", "most recently", "the latest": the newest of the matches.
_LAST = re.compile(
    r"\b(?:the\s+)?(?:last|latest|most\s+recent)\s+time\b|\bmost\s+recently\b",
    re.IGNORECASE,
)
#: "before the move", "after our wedding": a span that an event, a thing named with "the" or
#: a possessive, bounds ("after I downloaded it", "after completing 15 problems" say how
#: long or what followed, not a span to search in).
_EVENT = re.compile(
    r"\b(?P<way>before|after|since)\s+(?:the|my|our|his|her|their|your)\s+"
    r"(?P<what>[a-z][\w'-]*(?:\s+[a-z][\w'-]*)?)",
    re.IGNORECASE,
)
#: Words that make "before/after X" a time, not an event ("before noon", "after lunch" is an
#: event, "after 5" a time).
_NOT_EVENTS = frozenset(
    [
        "noon",
        "midnight",
        "morning",
        "evening",
        "night",
        "tonight",
        "today",
        "tomorrow",
        "yesterday",
        "then",
        "that",
        "this",
        "it",
        "them",
        "now",
        "long",
        "christmas",
    ]
)


#: A month or a number after "before"/"after" is a date ("before April 10, 2023"), no event.
_DATE_WORD = re.compile(
    r"(?:" + "|".join([*MONTHS, *(m[:3] for m in MONTHS), "sept"]) + r")\b|\d",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class AskedTime:
    """When a question points, read against the day it is asked."""

    #: The days it names (:class:`~agent_notebook.core.dates.TimeSpan`): relative ones
    #: resolved, those without a year ``yearly``.
    spans: tuple[TimeSpan, ...] = ()
    #: "the first time" / "the last time": the earliest or the newest of the matches.
    order: Order | None = None
    #: "before the move": the span before (after) the first moment that tells of the event.
    event: tuple[Relation, str] | None = None
    #: The question without its time words (an event's stay: "what did Caroline realize
    #: after her charity race" is about the race): what the words and meaning signals read.
    words: str = ""

    def __bool__(self) -> bool:
        return bool(self.spans or self.order or self.event)


#: A question that says nothing of time (or a query that is no question).
NO_TIME = AskedTime()


def asked_time(question: str, asked_on: date) -> AskedTime:
    """What ``question`` says of time, asked on ``asked_on`` (a question without time words:
    an empty reading, its words unchanged). A question that names a full day reads its
    relative words from that day: "last week, as mentioned on 6 November 2023"."""
    days = [d for d in query_dates(question) if d.until - d.since == timedelta(days=1)]
    if days and days[0].since.date() <= asked_on:
        asked_on = days[0].since.date()
    spans = time_spans(question, asked_on)
    cuts = [(s.start, s.end) for s in spans]
    order: Order | None = None
    for pattern, name in ((_LAST, "last"), (_FIRST, "first")):
        m = pattern.search(question)
        if m is not None and not _inside(m.start(), cuts):
            order = order or name  # type: ignore[assignment]
            cuts.append((m.start(), m.end()))
    event = None
    for m in _EVENT.finditer(question):
        if _inside(m.start(), cuts):
            continue
        what = [w for w in content_words(m["what"]) if w not in _NOT_EVENTS and not w.isdigit()]
        if what and not time_spans(m["what"], asked_on) and not _DATE_WORD.match(m["what"]):
            way: Relation = "before" if m["way"].casefold() == "before" else "after"
            event = (way, " ".join(what))
            break  # its words stay: "after her charity race" is about the race too
    if not cuts and event is None:
        return AskedTime(words=question)
    return AskedTime(tuple(spans), order, event, _without(question, cuts))


def _inside(at: int, cuts: Sequence[tuple[int, int]]) -> bool:
    return any(start <= at < end for start, end in cuts)


def _without(text: str, cuts: Sequence[tuple[int, int]]) -> str:
    kept, at = [], 0
    for start, end in sorted(cuts):
        kept.append(text[at:start])
        at = max(at, end)
    kept.append(text[at:])
    return " ".join("".join(kept).split())


# -- people -----------------------------------------------------------------------------------

#: A word that may be a name: letters (any script's), a possessive's "'s" after them.
_NAME = re.compile(r"[^\W\d_][^\W\d_'\u2019-]*(?:['\u2019]s)?")
#: Capitalised words that start many questions and name nobody.
_NOT_NAMES = frozenset(
    [
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
        "would",
        "should",
        "will",
        "has",
        "have",
        "had",
        "any",
        "anything",
        "anyone",
        "the",
        "a",
        "an",
        "i",
        "in",
        "on",
        "at",
        "for",
        "of",
        "to",
        "and",
        "or",
        "but",
        "if",
        "tell",
        "show",
        "give",
        "list",
        "remind",
        "please",
        "hey",
        "hi",
        "ok",
        "okay",
        "so",
        "yes",
        "no",
        "christmas",
        "easter",
        *WEEKDAYS,
        *MONTHS,
    ]
)


def named_people(question: str, known: Collection[str]) -> list[str]:
    """The people ``question`` names, among ``known`` (speakers and subjects, casefolded):
    each capitalised word of the question (a possessive's "'s" cut) that is a known name or
    a known name's first word, in order, without repeats."""
    wanted: dict[str, None] = {}
    firsts = {name.split()[0]: name for name in known if name}
    for m in _NAME.finditer(question):
        if not m.group(0)[0].isupper():
            continue
        word = m.group(0).replace("\u2019", "'").removesuffix("'s").casefold()
        if word in _NOT_NAMES:
            continue
        if word in known:
            wanted[word] = None
        elif word in firsts:
            wanted[firsts[word]] = None
    return list(wanted)


def capitalised(query: str) -> set[str]:
    """The capitalised words of ``query`` but its first, casefolded: names, maybe."""
    words = query.split()[1:]
    return {w.strip(".,;:!?\"'()").removesuffix("'s").casefold() for w in words if w[:1].isupper()}


_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|im)\b", re.IGNORECASE)
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|you're|you've|u|ur)\b", re.IGNORECASE)


def says_i(question: str) -> bool:
    """Whether ``question`` speaks of its asker ("what did I decide", "my dentist")."""
    return bool(_FIRST_PERSON.search(question))


def first_person_claim(text: str, names: Collection[str]) -> bool:
    """Whether ``text`` says something of its own speaker ("I am vegetarian") and of none of
    ``names`` nor of the one it talks to: another person's answer to the words of a question
    about someone else."""
    if not _FIRST_PERSON.search(text) or _SECOND_PERSON.search(text):
        return False
    said = set(terms(text))
    return not any(stem(part) in said for name in names for part in name.split())


# -- gathering and echoes ---------------------------------------------------------------------

_GATHERS = re.compile(
    r"^\W*(?:(?:and|so|but)\s+)?(?:(?:what|which)\s+(?:(?:kinds?|sorts?|types?)\s+of\s+)?"
    r"(?:[a-z-]+\s+)?(?P<plural>[a-z-]+s)\b(?<!\bis)(?<!\bwas)(?<!\bdoes)(?<!\bhas)"
    r"|how\s+many\s+(?!years|months|weeks|days|hours|minutes)\w+"
    r"|how\s+often\b|list\b|name\s+(?:all|every)\b|what\s+are\s+(?:all|some)\b"
    r"|(?:what|which)\s+.*\b(?:all|every|each)\s+(?:the\s+)?\w+s\b)",
    re.IGNORECASE,
)
#: Words ending in "s" that are not plurals a question gathers.
_NOT_PLURAL = frozenset(
    [
        "this",
        "his",
        "its",
        "was",
        "is",
        "does",
        "has",
        "as",
        "us",
        "yes",
        "always",
        "perhaps",
        "plus",
        "news",
    ]
)


def gathers(question: str) -> bool:
    """Whether ``question`` gathers several answers ("what activities…", "which countries
    has…", "how many times…", "list…"), which are told in several sessions."""
    m = _GATHERS.match(question)
    if m is None:
        return False
    plural = m.group("plural")
    return plural is None or plural.casefold() not in _NOT_PLURAL


#: A recorded question echoes a query when it has this share of the query's words (stems,
#: not stopwords) ...
ECHO_SHARE = 0.6
#: ... and at most this many words of its own besides.
ECHO_EXTRA = 3


_ASKS = re.compile(
    r"^\W*(?:(?:and|so|but|ok|okay|hey)\W+)?(?:what|when|where|who|whom|whose|which|why|how|is|"
    r"are|was|were|do|does|did|can|could|will|would|should|has|have|had|any|anything)\b",
    re.IGNORECASE,
)


def asks(query: str) -> bool:
    """Whether ``query`` is a question ("where is Tom moving?", "who fixed staging"), not a
    few words looked up ("holiday last summer"): only a question is echoed by one."""
    return "?" in query or bool(_ASKS.match(query))


def echoes(text: str, query_stems: Collection[str]) -> bool:
    """Whether ``text``, a recorded question, is the query asked again (most of its words,
    few others): what answered it then is the answer, not the question."""
    if "?" not in text or not query_stems:
        return False
    own = {stem(w) for w in content_words(text)}
    shared = own.intersection(query_stems)
    return len(shared) >= ECHO_SHARE * len(query_stems) and len(own - shared) <= ECHO_EXTRA
