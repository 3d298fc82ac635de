"""Quantities in prose and the updates of one: "my snack budget of $65" then "I've adjusted
the snack budget to $75"; "the call on April 21 at 3 PM" then "moving the call to April 22
at 11 AM"; "3 hours on it" then "I've extended my study sessions to 4 hours".

A quantity is a typed value (an amount of money, a percentage, a time of day, a date, or a
number with the word it counts: "12 problems", "5-7 months") with the words around it. An
update is a quantity the sentence says changed: an update cue ("increased", "adjusted",
"moved", "rescheduled", "reached", "new" …) shortly before it, then "to" / "of" (or "new"
right before it). An update ends the latest earlier quantity of the same kind (and counted
word) with another value whose words around it share at least ``MIN_SHARED`` content words
with the update's; the same value said before ends nothing (a restatement). Around a value,
the words of one attribute are read as one ("quota", "cap" are a "limit"). An aim ("a goal
of $2,000", "trying to cut it to $150") and what holds are two things; "from 11 AM to 4 PM"
ends only a value of 11 AM; a rating ("6/10") or a date said moved ("pushed back to July
15") is named with few words, and one in common is enough.

Numbers that name things (ticket 123, v1.0.0, 2024 as a year) are not quantities: a number
counts only with a unit after it, a currency, a percent or a clock or calendar around it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from ..core.lexical import stem
from .text import (
    CALENDAR_WORDS,
    GOAL_AFTER,
    GOAL_BEFORE,
    REACHED,
    RESCHEDULED,
    SAME_ATTRIBUTE,
    content_stems,
    spelled_out,
    word_set,
)

__all__ = ["MIN_SHARED", "Quantity", "meets", "quantities_in", "shared_words"]

#: Content words an update and the quantity it ends must share around their values.
MIN_SHARED: Final = 2
#: Words around a value that say what it is of: this many before it, and after.
_BEFORE: Final = 12
_AFTER: Final = 4

_MONTH: Final = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_NUM: Final = r"\d+(?:,\d{3})*(?:\.\d+)?"
_VALUE: Final = re.compile(
    rf"(?P<money>[$€£]\s?{_NUM}(?:\s?[km]\b)?)"
    rf"|(?P<percent>{_NUM}\s?%)"
    rf"|(?P<clock>\b\d{{1,2}}(?::\d{{2}})?\s?(?:am|pm)\b)"
    rf"|(?P<date>\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?!:))"
    r"|(?P<score>(?<![\w.$€£/#-])\d{1,2}(?:\.\d)?\s?/\s?(?:5|10)\b(?!/))"
    rf"|(?P<count>(?<![\w.$€£/#-]){_NUM}(?:\s?(?:-|to)\s?{_NUM})?)(?:\s*|-)(?P<unit>ms\b|[a-z]{{3,}})"
)
#: Words between a number and what it counts, passed over: "12 more problems".
_FILLER: Final = word_set(
    "more new total additional extra other different of daily weekly monthly yearly annual hourly"
)
_NOT_UNITS: Final = word_set(
    """and the for with that this from into over than then when which who while after before
    until since per are was were has have had will would can could not but also just"""
)
_CUE: Final = re.compile(
    r"\b(?:increased|increasing|adjusted|adjusting|extended|extending|raised|reduced|lowered|"
    r"moved|moving|rescheduled|rescheduling|changed|changing|updated|shortened|pushed|bumped|"
    r"dropped|improved|grown|grew|reached|revised|decreased|cut|upped|boosted|expanded|"
    r"lengthened|down|up|new|now|increase|reduce|raise|lower|extend|adjust|bump|push|move)\b"
)
#: The cue and the value are this many words apart at most…
_CUE_WINDOW: Final = 8
#: …and the value follows "to", "of", "reached", "new", "now" (or one of them and a word).
_LEAD_IN: Final = re.compile(
    r"\b(?:to|of|reached|new|now|at|around|about|averaging|just)\s+(?:(?:a|an|the|just|only|"
    r"around|about|roughly|approximately|covers|totals|stands at|sits at)\s+)?$"
)
_WORD: Final = re.compile(r"[^\W_]+(?:[.'\-][^\W_]+)*")
#: Words of no weight around a value: cues, and the chatter of a request ("I'm kinda
#: worried…", "trying to understand how…", "can you help me make sure…").
_CUE_STEMS: Final = frozenset(
    stem(w)
    for w in word_set("""increased adjusted extended raised reduced lowered moved moving rescheduled changed
    updated shortened pushed bumped dropped improved grown reached revised decreased cut
    upped boosted expanded new now recently further already total
    try trying understand help want make sure kinda worried worry wondering wonder feel feeling
    think thinking plan planning need know get got keep considering consider curious
    seem like going gonna since especially way best good great really""")
)
#: Feelings said around a request, left out as words (their noun is kept: "my stress to 4/10").
_CHATTER: Final = word_set("stressed struggling worried")


@dataclass(frozen=True, slots=True)
class Quantity:
    #: "money", "percent", "clock", "date" or "n:<stem of the word counted>".
    kind: str
    #: The value, normalized: "$1,200" and "$1200" alike.
    value: str
    #: Content stems of the words around it (cue words left out).
    context: frozenset[str]
    #: The sentence says it changed to this value.
    update: bool
    #: An aim ("a goal of $2,000", "trying to get it to $150"), not what holds.
    goal: bool = False
    #: The value it changed from, when the sentence says so ("from 11 AM to 4 PM"): the
    #: update ends that value only.
    was: str = ""
    #: Few words name what it is of, and one in common with an earlier quantity is enough:
    #: a rating ("6/10"), a date or time said moved ("pushed back to July 15").
    loose: bool = False


def quantities_in(sentence: str) -> list[Quantity]:
    """The quantities of one sentence (prose), in order."""
    low = spelled_out(sentence)
    found: list[Quantity] = []
    last_start = last_end = 0
    for m in _VALUE.finditer(low):
        kind = m.lastgroup or ""
        passed: list[str] = []
        if kind == "score" and _DATE_BEFORE.search(low, 0, m.start()):
            continue  # "on 6/10" is a day
        if kind == "unit":
            kind = "count"
        if kind == "count":
            unit = m["unit"]
            if unit in _NOT_UNITS:
                continue
            if unit in _FILLER:
                passed.append(unit)
                after = _WORD.findall(low[m.end() :])
                unit = next((w for w in after[:2] if w not in _FILLER), "")
                if not unit or unit in _NOT_UNITS or unit.isdigit():
                    continue
            value, kind = m["count"], f"n:{stem(unit)}"
        else:
            value = m[kind]
        before = low[: m.start()]
        words_before = _WORD.findall(before)[-_BEFORE:]
        words_after = _WORD.findall(low[m.end() :])[:_AFTER]
        around = [w for w in words_before + passed + words_after if w not in _CHATTER]
        context = _attributes(content_stems(" ".join(around)))
        update = _is_update(before, words_before)
        clause = _CLAUSE.split(before)[-1]
        goal = bool(
            (GOAL_BEFORE.search(clause) or GOAL_AFTER.match(low, m.end()))
            and not REACHED.search(clause)
            and not _NEW.search(clause)
        )
        was = ""
        if (
            found
            and found[-1].kind == kind
            and _FROM_TO.fullmatch(low, last_end, m.start())
            and _FROM.search(low, 0, last_start)
        ):
            was = found[-1].value
        near = " ".join(words_before[-_CUE_WINDOW:])
        loose = kind == "score" or (
            kind in ("date", "clock") and update and bool(RESCHEDULED.search(near))
        )
        found.append(Quantity(kind, _normal(value), frozenset(context), update, goal, was, loose))
        last_start, last_end = m.start(), m.end()
    return found


def meets(new: Quantity, old: Quantity) -> bool:
    """Whether ``new`` may speak of the same thing as ``old`` (of its kind, said earlier):
    both aims or both what holds, and at least ``MIN_SHARED`` words in common around them
    (one, names and numbers aside, when ``new`` is loose)."""
    if new.goal != old.goal:
        return False
    if new.loose:
        return bool(_words(new.context) & _words(old.context))
    return shared_words(new, old) >= MIN_SHARED


def _attributes(stems: frozenset[str]) -> frozenset[str]:
    """``stems`` without cue words, each word of an attribute read as the attribute's."""
    return frozenset(_SAME.get(s, s) for s in stems - _CUE_STEMS)


def _words(context: frozenset[str]) -> frozenset[str]:
    return frozenset(w for w in context if w.isalpha() and w not in _CALENDAR_STEMS)


def shared_words(a: Quantity, b: Quantity) -> int:
    return len(a.context & b.context)


#: Where an aim ends: a stop, or a clause said beside it.
_CLAUSE: Final = re.compile(r"[,;:]|\s(?:and|but|so|which|while)\s")
#: "from 11 am to 4 pm", "from $300 to $150": between two values of one kind.
_FROM_TO: Final = re.compile(r"\s*(?:to|-)\s*")
_FROM: Final = re.compile(r"\bfrom\s+$")
#: "the new quota of 1,200": said as what holds now, whatever the wish around it.
_NEW: Final = re.compile(r"\bnew\s+(?:\S+\s+){0,3}$")
_SAME: Final = {stem(word): stem(name) for word, name in SAME_ATTRIBUTE.items()}
_DATE_BEFORE: Final = re.compile(r"\b(?:on|by|until|before|after|since|from)\s+$")
_CALENDAR_STEMS: Final = frozenset(stem(w) for w in CALENDAR_WORDS) | word_set(
    "am pm jan feb mar apr jun jul aug sep sept oct nov dec mid"
)


def _is_update(before: str, words_before: list[str]) -> bool:
    if not _LEAD_IN.search(before):
        return False
    near = " ".join(words_before[-_CUE_WINDOW:])
    return bool(_CUE.search(near))


def _normal(value: str) -> str:
    return re.sub(r"[\s,]|\.0+\b", "", value).replace("to", "-")
