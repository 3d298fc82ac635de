"""Experience said and denied: "I have never used Docker" against "I used Docker last
week", by the same speaker, is a contradiction (see :func:`experience_conflict`). What each
sentence denies (:func:`denials_in`) and affirms (:func:`affirmed_clauses`), as content
stems, with the names a denial holds."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from .text import content_stems

__all__ = ["Affirmed", "Denial", "affirmed_clauses", "denials_in", "experience_conflict"]

#: What "I have never X" denies: X's content stems, the names among them, the sentence.
Denial = tuple[frozenset[str], frozenset[str], str]
#: What "I did X" affirms: X's content stems, the sentence.
Affirmed = tuple[frozenset[str], str]

_FIRST_PERSON_DONE: Final = re.compile(
    r"\b(?:i|we)\s+(?:(?:have|had|did|already|just|recently|successfully|finally|also|"
    r"actually|once)\s+)*"
    r"(?:[a-z]+ed|built|wrote|written|ran|made|set up|got|used|went|done|met|took|bought|sent|"
    r"spent|began|taught|learnt|found|kept|paid|won|led|gave)\b"
)
#: A habit said as kept up ("I keep using Excel", "I have been using it since May", "I'll
#: keep using it", "I prefer using it"): it was done, whatever wish is said with it.
_HABIT: Final = re.compile(
    r"\b(?:i|we)\s+(?:(?:have|had|am|are|will|would|also|still|just|really|always|usually|"
    r"going to)\s+)*(?:been|keep|kept|continue to|continued to|prefer|preferred)\s+[a-z]+ing\b"
)
#: A feeling about an act ("stressed about declining that meeting on May 3"): the act done,
#: unless said ahead ("nervous about declining it tomorrow").
_FELT: Final = re.compile(
    r"\b(?:stressed|worried|nervous|guilty|bad|glad|happy|proud|anxious|upset|relieved|"
    r"frustrated|sorry|annoyed)\s+(?:about|after|for)\s+(?=[a-z]+ing\b)"
)
_AHEAD: Final = re.compile(r"\b(?:tomorrow|next|upcoming|soon|later|will|going to|if|whether)\b")
_WISH: Final = re.compile(
    r"\b(?:want|need|trying|try|plan|hope|wish|would like|can you|could you|how (?:do|can|to)|"
    r"if|whether|might|should|will|would|could)\b"
)
#: An affirmed clause of experience runs from the last stop before "I …ed" to the next one.
_STOP: Final = re.compile(r"[,;:?!]|\s[-\u2013]\s")
_DONE_END: Final = re.compile(
    r"[,;:?!]|\s[-\u2013]\s|\s(?:but|so|because|since|and i|and we|which|while|although|though|"
    r"to see|to make|and now)\s"
)
_NEGATED: Final = re.compile(r"\b(?:not|never|no)\b")
_CLAUSE_END: Final = re.compile(
    r",|\b(?:which|but|so|because|since|and (?:i|we|now|so)|while|when|although|though)\b"
)
#: "…never declined any meetings to protect my time": what for is not what was done (a verb
#: and its object first: "never been to Japan" keeps its "to").
_PURPOSE: Final = re.compile(
    r"\s+to\s+(?!(?:the|a|an|my|our|your|his|her|their|me|us|him|them|it|this|that)\b)"
)
_NEVER: Final = re.compile(
    r"\b(?:i|we)\s+(?:have\s+|had\s+)?never\s+(?:ever\s+|actually\s+|really\s+)?(?P<rest>[^.;!?]+)"
)


def denials_in(sentence: str, low: str, min_words: int) -> list[Denial]:
    """What ``sentence`` (``low``: case-folded, contractions spelled out) says the speaker
    never did, each thing of at least ``min_words`` content words."""
    found = []
    for m in _NEVER.finditer(low):
        # What was never done ends with its clause; "X or Y" are two things.
        done = _CLAUSE_END.split(m["rest"], maxsplit=1)[0]
        if len(content_stems(short := _without_purpose(done))) >= min_words:
            done = short
        named = named_stems(sentence)
        for part in re.split(r"\b(?:or|nor)\b", done):
            if len(stems := content_stems(part)) >= min_words:
                # Its names must all be met: "a Python workshop" is not "Kotlin".
                found.append((stems, stems & named, sentence))
    return found


def _without_purpose(done: str) -> str:
    """``done`` up to a "to <verb>" that follows a verb and its object."""
    for m in _PURPOSE.finditer(done):
        if len(done[: m.start()].split()) >= 2:
            return done[: m.start()]
    return done


def affirmed_clauses(low: str) -> list[frozenset[str]]:
    """The content stems of each clause of ``low`` that affirms the speaker did something:
    a habit kept up ("I keep using Excel", "I have been using it"), an act felt about
    ("stressed about declining that meeting", not one ahead), and an act said done
    ("I just downloaded Zotero on March 2", "we met at the book club"): from the last stop
    before "I …ed" to the next one, with no negation nor wish, condition or question in it
    (a request after a comma, "can you help…?", leaves the clause before it affirmed)."""
    found = []
    for m in _HABIT.finditer(low):
        end = _DONE_END.search(low, m.end())
        clause = low[m.start() : end.start() if end else len(low)]
        if not (end and low[end.start()] == "?") and not _NEGATED.search(clause):
            found.append(content_stems(clause))
    for m in _FELT.finditer(low):
        end = _DONE_END.search(low, m.end())
        clause = low[m.end() : end.start() if end else len(low)]
        asked = bool(end and low[end.start()] == "?")
        if not asked and not _NEGATED.search(low[: m.end()] + clause) and not _AHEAD.search(clause):
            found.append(content_stems(clause))
    for m in _FIRST_PERSON_DONE.finditer(low):
        starts = [s.end() for s in _STOP.finditer(low, 0, m.start())]
        end = _DONE_END.search(low, m.end())
        clause = low[starts[-1] if starts else 0 : end.start() if end else len(low)]
        closed_by = low[end.start() : end.start() + 1] if end else ""
        if closed_by == "?" or _NEGATED.search(clause) or _WISH.search(clause):
            continue
        found.append(content_stems(clause))
    return found


def experience_conflict(
    never: Sequence[Denial],
    affirmed: Sequence[Affirmed],
    earlier_never: Sequence[Denial],
    earlier_affirmed: Sequence[Affirmed],
) -> str:
    """ "I have never X" against an affirmed "I did X" (the same speaker), either order: the
    affirmed clause holds every content word of X, but one in three (a longer X is said with
    words the other leaves out: "any audiobook narrated by the recommended narrator"), and
    every name of X ("Kotlin") among them."""
    for denials, affirmations in ((never, earlier_affirmed), (earlier_never, affirmed)):
        for wanted, named, denial in denials:
            for done, claim in affirmations:
                missing = wanted - done
                if (
                    len(wanted & done) >= 2
                    and len(missing) <= (len(wanted) - 1) // 3
                    and not missing & named
                ):
                    return f"{denial} / {claim}"
    return ""


_CAPITALIZED: Final = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w\-]*")


def named_stems(sentence: str) -> frozenset[str]:
    """The content stems of the words written with a capital inside ``sentence`` (not its
    first word): the names it holds."""
    return content_stems(" ".join(_CAPITALIZED.findall(sentence)))
