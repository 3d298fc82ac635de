"""The text the fact rules read: prose without code, contractions spelled out, sentences,
content-word stems and the cues that say a statement updates or corrects an earlier one.

Pure standard library (plus the project's stemmer, :func:`..core.lexical.terms`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from ..core.dates import MONTHS, WEEKDAYS
from ..core.enrich import STOPWORDS
from ..core.lexical import terms

__all__ = [
    "CALENDAR_WORDS",
    "GOAL_AFTER",
    "GOAL_BEFORE",
    "IRREGULAR_VERBS",
    "REACHED",
    "RESCHEDULED",
    "RULE_LANGUAGES",
    "SAME_ATTRIBUTE",
    "UPDATE_CUE",
    "content_stems",
    "item_words",
    "prose",
    "rule_language",
    "sentences",
    "spelled_out",
    "word_set",
]

_FENCED: Final = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.DOTALL)
_INDENTED_CODE: Final = re.compile(r"(?m)^(?: {4}|\t).*$")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?;])\s+(?=[\"'(\[]?[A-Za-z0-9])|\n+")
_CONTRACTIONS: Final = (
    (re.compile(r"\bcan't\b"), "can not"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\bshan't\b"), "shall not"),
    (re.compile(r"\b(\w+)n't\b"), r"\1 not"),
    (re.compile(r"\bi'm\b"), "i am"),
    (re.compile(r"\b(i|we|you|they)'ve\b"), r"\1 have"),
    (re.compile(r"\b(i|we|you|they|he|she|it)'ll\b"), r"\1 will"),
    (re.compile(r"\b(i|we|you|they|he|she)'d\b"), r"\1 would"),
    (re.compile(r"\b(we|you|they)'re\b"), r"\1 are"),
    (re.compile(r"\blet's\b"), "let us"),
)


def word_set(words: str) -> frozenset[str]:
    """The blank-separated words of ``words``: the rules' word lists, written as prose."""
    return frozenset(words.split())


#: The languages the rules have cue words for, each with its commonest function words, by
#: which a text is known to be written in it. The cue words themselves are English only
#: (the rest of this package): a text in a language without a table yields no finding
#: rather than a wrong one ("Le budget est de 80 000 €" links nothing).
RULE_LANGUAGES: Final[dict[str, frozenset[str]]] = {
    "en": word_set("""the a an and or but of to in on at for with from by about as is are was
        were be been am will would can could should have has had do does did not no i you we
        he she they it my your our his her their this that these those what which who when
        where how just so if then there here me us them let let's i'm i've i'll it's that's
        don't can't won't"""),
}
#: Function words of languages the rules have no table for (French, German, Spanish,
#: Portuguese, Italian, Dutch), those that are no English word: a text with more of them
#: than of a table's words is in none of :data:`RULE_LANGUAGES`.
_OTHER_LANGUAGES: Final = (
    word_set("""le la les des est et je nous avec pour dans une un du
    au aux ce cette mais ou très maintenant depuis j'ai c'est der das und ist ich wir mit für
    nicht ein eine jetzt auch sind haben wird bei seit dass ist el los las y es que con para
    ahora muy pero yo nosotros hemos está o os é com uma eu minha agora não il di è sono
    della che per het een ik mijn nu niet zijn wij ook heb""")
    - RULE_LANGUAGES["en"]
)
_WORD: Final = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def rule_language(text: str) -> str | None:
    """The language of :data:`RULE_LANGUAGES` ``text`` is written in, or None when it reads
    as another (the rules then read nothing of it): the table whose function words it holds
    most, unless it holds more of other languages' ("Ich arbeite jetzt bei Monzo in
    Berlin"). A text with none of either ("Budget: $80,000") is read."""
    words = [w.casefold() for w in _WORD.findall(text)]
    other = sum(w in _OTHER_LANGUAGES for w in words)
    hits = {lang: sum(w in markers for w in words) for lang, markers in RULE_LANGUAGES.items()}
    language, most = max(hits.items(), key=lambda item: item[1])
    return language if most >= other else None


#: Words that say a statement replaces what held before: a value moved, a correction, a
#: change of habit. With one, a flipped statement is an update; without, a contradiction.
UPDATE_CUE: Final = re.compile(
    r"\b(?:now|no longer|any ?more|actually|correction|changed?|changing|moved?|switch(?:ed)?|"
    r"instead|updated?|rescheduled|postponed|pushed|delayed|brought forward|migrated|replaced|"
    r"stopped|started|quit|gave up|since then|these days|nowadays|recently|"
    r"turns out|i meant|not anymore|revised|increased|decreased|improved|reached|dropped|grew|"
    r"rose|fell)\b"
)

#: Around a quantity, words that make it an aim rather than what holds: "a goal of $2,000",
#: "trying to get it down to $150", "a 60% target"; unless it was reached ("reached my goal
#: of $2,000"). An aim and what holds are two things: a balance does not update a goal.
GOAL_BEFORE: Final = re.compile(
    r"\b(?:goals?|targets?|aim|aiming|aims|shoot|shooting|hope|hoping|want|wants|wanted|trying|"
    r"try|plan|planning|would like|ideally|get it (?:down|up))\b"
)
GOAL_AFTER: Final = re.compile(r"\s*(?:goals?|targets?|aim)\b")
REACHED: Final = re.compile(
    r"\b(?:reached|reaching|hit|met|achieved|achieving|made it|got to|passed|surpassed)\b"
)
#: A date or time said moved: what is moved is named with few words ("the delivery date
#: pushed back to July 15"), so one word in common with the earlier date is enough.
RESCHEDULED: Final = re.compile(
    r"\b(?:pushed|pushing|postponed|postponing|delayed|delaying|rescheduled|rescheduling|"
    r"moved|moving|brought forward|bumped|shifted|shifting)\b"
)

#: Words that name one attribute of a quantity, read as one around its values: "the 1,000
#: daily call limit" and "the new daily quota of 1,200 calls" speak of one thing.
SAME_ATTRIBUTE: Final = {
    **dict.fromkeys(["quota", "cap", "allowance", "ceiling", "maximum", "max"], "limit"),
}

#: Words of no weight when two statements are compared by what they speak of.
_GENERIC: Final = word_set("""project app application thing things stuff way ways part bit lot lots also just really
    very currently already still ever any some this that these those here there""")


def prose(text: str) -> str:
    """``text`` without fenced or indented code (a ``# TODO`` in a code block is not a
    thread of the conversation), with typographic apostrophes made plain."""
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    return _INDENTED_CODE.sub(" ", _FENCED.sub(" ", text))


#: Longer "sentences" are pasted logs, tables or code without fences: no claim is read there.
MAX_SENTENCE: Final = 600


@lru_cache(maxsize=4096)
def sentences(text: str) -> tuple[str, ...]:
    """The sentences of prose ``text``, trimmed, none empty nor longer than ``MAX_SENTENCE``."""
    return tuple(
        s.strip() for s in _SENTENCE_END.split(text) if s and s.strip() and len(s) <= MAX_SENTENCE
    )


@lru_cache(maxsize=65536)
def spelled_out(sentence: str) -> str:
    """``sentence`` case-folded with its contractions spelled out ("don't" → "do not",
    "I've" → "i have", "let's" → "let us") and its blanks collapsed."""
    low = " ".join(sentence.casefold().split())
    for pattern, replacement in _CONTRACTIONS:
        low = pattern.sub(replacement, low)
    return low


@lru_cache(maxsize=65536)
def content_stems(text: str) -> frozenset[str]:
    """The stems of the words of ``text`` that carry content: no stopword, no generic word."""
    words = re.findall(r"[^\W_]+(?:[.'\-][^\W_]+)*", text.casefold())
    kept = " ".join(w for w in words if w not in STOPWORDS and w not in _GENERIC)
    return frozenset(terms(kept))


#: The present of the past forms an act is said in ("wrote" is "write"), so that two
#: claims of one act meet.
IRREGULAR_VERBS: Final = {
    "wrote": "write",
    "written": "write",
    "built": "build",
    "ran": "run",
    "bought": "buy",
    "ate": "eat",
    "eaten": "eat",
    "drank": "drink",
    "drunk": "drink",
    "spoke": "speak",
    "spoken": "speak",
    "took": "take",
    "taken": "take",
    "made": "make",
    "found": "find",
    "sent": "send",
    "met": "meet",
    "kept": "keep",
    "left": "leave",
    "paid": "pay",
    "owned": "own",
    "did": "do",
    "done": "do",
    "gave": "give",
    "given": "give",
    "flew": "fly",
    "flown": "fly",
    "drove": "drive",
    "driven": "drive",
    "swam": "swim",
    "swum": "swim",
    "taught": "teach",
    "learnt": "learn",
    "brought": "bring",
    "went": "go",
}


def item_words(text: str) -> str:
    """An open item's words as compared with another's: case, blanks and the closing
    punctuation aside ("Should we invite Raj?" is "should we invite raj")."""
    return " ".join(text.casefold().split()).rstrip("?.! ")


#: The weekdays and months: a value when a statement names one ("kickoff Wednesday at 10"
#: is not "kickoff Monday at 10"), never a thing counted ("7 June" counts no June).
CALENDAR_WORDS: Final = frozenset([*WEEKDAYS, *MONTHS])
