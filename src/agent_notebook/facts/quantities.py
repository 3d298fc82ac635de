"""Quantities in prose and the updates of one: "my snack budget of $65" then "I've adjusted
the snack budget to $75"; "the call on April 21 at 3 PM" then "moving the call to April 22
at 11 AM"; "3 hours on it" then "I've extended my study sessions to 4 hours".

A quantity is a typed value (an amount of money, a percentage, a time of day, a date, or a
number with the word it counts: "12 problems", "5-7 months") with the words around it. An
update is a quantity the sentence says changed: an update cue ("increased", "adjusted",
"moved", "rescheduled", "reached", "new" …) shortly before it, then "to" / "of" (or "new"
right before it). An update ends the latest earlier quantity of the same kind (and counted
word) with another value whose words around it share at least ``MIN_SHARED`` content words
with the update's; the same value said before ends nothing (a restatement).

Numbers that name things (ticket 123, v1.0.0, 2024 as a year) are not quantities: a number
counts only with a unit after it, a currency, a percent or a clock or calendar around it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from ..core.lexical import stem
from .text import content_stems, spelled_out, word_set

__all__ = ["MIN_SHARED", "Quantity", "quantities_in", "shared_words"]

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
    rf"|(?P<count>(?<![\w.$€£/#-]){_NUM}(?:\s?(?:-|to)\s?{_NUM})?)\s*(?P<unit>ms\b|[a-z]{{3,}})"
)
#: Words between a number and what it counts, passed over: "12 more problems".
_FILLER: Final = word_set("more new total additional extra other different of")
_NOT_UNITS: Final = word_set(
    """and the for with that this from into over than then when which who while after before
    until since per are was were has have had will would can could not but also just"""
)
_CUE: Final = re.compile(
    r"\b(?:increased|increasing|adjusted|adjusting|extended|extending|raised|reduced|lowered|"
    r"moved|moving|rescheduled|rescheduling|changed|changing|updated|shortened|pushed|bumped|"
    r"dropped|improved|grown|grew|reached|revised|decreased|cut|upped|boosted|expanded|"
    r"lengthened|down|up|new)\b"
)
#: The cue and the value are this many words apart at most…
_CUE_WINDOW: Final = 8
#: …and the value follows "to", "of", "reached", "new", "now" (or one of them and a word).
_LEAD_IN: Final = re.compile(
    r"\b(?:to|of|reached|new|now|at|around|about|averaging|just)\s+(?:(?:a|an|the|just|only|"
    r"around|about|roughly|approximately)\s+)?$"
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
    think thinking plan planning need know get got keep considering consider curious stressed
    struggling seem like going gonna since especially way best good great really""")
)


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


def quantities_in(sentence: str) -> list[Quantity]:
    """The quantities of one sentence (prose), in order."""
    low = spelled_out(sentence)
    found = []
    for m in _VALUE.finditer(low):
        kind = m.lastgroup or ""
        if kind == "unit":
            kind = "count"
        if kind == "count":
            unit = m["unit"]
            if unit in _NOT_UNITS:
                continue
            if unit in _FILLER:
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
        context = content_stems(" ".join(words_before + words_after)) - _CUE_STEMS
        found.append(
            Quantity(kind, _normal(value), frozenset(context), _is_update(before, words_before))
        )
    return found


def shared_words(a: Quantity, b: Quantity) -> int:
    return len(a.context & b.context)


def _is_update(before: str, words_before: list[str]) -> bool:
    if not _LEAD_IN.search(before):
        return False
    near = " ".join(words_before[-_CUE_WINDOW:])
    return bool(_CUE.search(near))


def _normal(value: str) -> str:
    return re.sub(r"[\s,]|\.0+\b", "", value).replace("to", "-")
