"""Enrichment of a moment's text without any model: concepts, retrieval keys, importance.

Pure standard library, deterministic, and cheap enough to run on every recorded moment.

* **Retrieval keys** are exact-lookup keys, found by one precompiled regex: URLs, emails, file
  paths (``auth/middleware.py:42``), dates (full dates as ISO ``2023-05-07``, month and year as
  ``2023-05``, day and month as ``--05-07``, ``7/5/23`` kept as written), years, times
  (``1:56pm``), versions, money, percentages (``12%``), numbers with units (``5 ms``), calls
  and dotted names (``verify_token``, ``os.path.join``), ``@mentions``/``#tags``, and words
  that look like identifiers (snake_case, CamelCase, letters mixed with digits such as
  ``ABC-123``), followed by the named things. All pass through ``normalize_concept``.
* **Concepts** are named things (runs of Capitalised words or ACRONYMS, joined by "of", "the",
  "de"…, leading stopwords dropped, "I" never) and RAKE key phrases (1-3 content words between
  stopwords and punctuation, scored by the sum of degree/frequency of their words), spans
  taken as retrieval keys excluded. The most frequent named things come first, then the best
  phrases, alternating in blocks of four.
* **Importance** starts at ``BASE_IMPORTANCE`` (0.3) and adds: commitment or decision words
  (decide, agreed, must, always, never, remember, important, deadline, promise, plan to, will…)
  +0.15, +0.05 for each further distinct one, at most +0.3; a user's correction ("no,",
  "actually", "wrong", "instead"…) +0.15; exact keys +0.05 each, at most +0.15 (+0.03 for a
  bare number); named things +0.03 each, at most +0.1; ``has_actions`` +0.15; 12/30/80 words
  or more +0.05/+0.1/+0.15. It subtracts 0.2 for text with no words and no keys or with
  chit-chat only ("ok", "thanks", "lol", greetings) and 0.1 for fewer than three words without keys. For roles "system" and
  "tool" the change from the base is halved. The result is clamped to [0, 1], 2 decimals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Final

from ..model import normalize_concept
from .dates import relative_dates

__all__ = [
    "BASE_IMPORTANCE",
    "MAX_CONCEPTS",
    "MAX_RETRIEVAL_KEYS",
    "Enrichment",
    "enrich",
    "exact_identifiers",
    "identifiers",
]

MAX_CONCEPTS: Final = 8
MAX_RETRIEVAL_KEYS: Final = 16
BASE_IMPORTANCE: Final = 0.3
_MAX_LENGTH: Final = 200  # longer keys and concepts are noise (a pasted blob), not handles


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS: Final = _words(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours out over own same she should so some such than that the their them then
    there these they this those through to too under until up very was we were what when
    where which while who whom why will with would you your yours may might must shall
    yes ok okay hi hey hello thanks thank please sure well oh yeah yep maybe really actually
    like get got go went going gone make made let let's i'm i've i'll i'd you're it's that's
    there's what's don't doesn't didn't can't won't isn't wasn't one thing things something
    anything nothing everything lot much many even still back today yesterday tomorrow great
    good nice cool wow awesome lol haha right think know want need see say said tell told
    honestly anyway definitely absolutely totally exactly glad sorry wait btw besides finally
    first next sometimes usually luckily unfortunately sounds congrats mr mrs ms dr st prof
    instead use used using e.g i.e etc via per since last ago ever though although bit kind
    sort around every another always never quite rather enough almost already soon later yet"""
)
_CHITCHAT: Final = _words(
    """ok okay k kk thanks thank thx ty you lol lmao haha hahaha hi hey hello yo sure cool nice
    great yes yeah yep no nope np bye goodbye morning night good gm gn wow oh ah hmm got it
    alright awesome welcome please sounds"""
)
_CONNECTORS: Final = _words("of the de da di du del der la le van von")
_NEVER_NAMED: Final = frozenset(["i", "i'm", "i've", "i'll", "i'd"])
_MONTH_NAMES: Final = "jan feb mar apr may jun jul aug sep oct nov dec"
_MONTHS: Final = {m: i for i, m in enumerate(_MONTH_NAMES.split(), 1)}

_MONTH = (
    r"(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_ORD = r"(?i:st|nd|rd|th)?"
_NUM = r"\d{1,20}+(?:[.,]\d{1,20}+){0,6}+"
_UNITS = (
    r"\s?(?i:ms|secs?|seconds?|mins?|minutes?|hrs?|hours?|days?|weeks?|months?|years?|yrs?|kb|mb|"
    r"gb|tb|kib|mib|gib|bytes?|km|cm|mm|kg|mg|lbs?|miles?|ft|feet|px|°[cf])(?!\w)|[mhkgbx](?!\w)"
)
_KEY_RE: Final = re.compile(
    # Skip plain words (the most common case) fast; a month name before a number is not plain.
    r"(?<![\w@/.\-])(?![A-Za-z][a-z]*+(?![\w@/(]|[.\-:][\w/]|\s+\d))(?:"
    r"(?P<url>(?:https?://|www\.)[^\s<>\"'`]+)"
    r"|(?P<email>[\w.+-]++@[\w-]+(?:\.[\w-]+)+)"
    rf"|(?P<date>\d{{4}}-\d{{1,2}}-\d{{1,2}}(?!\w)|\d{{1,2}}/\d{{1,2}}/\d{{2,4}}(?![\w/])"
    rf"|\d{{1,2}}{_ORD}\s+(?:of\s+)?{_MONTH}(?:,?\s+\d{{4}})?(?![\w])"
    rf"|{_MONTH}\s+(?:\d{{1,2}}{_ORD},?\s+\d{{4}}|\d{{4}}|\d{{1,2}}{_ORD})(?!\w))"
    r"|(?P<path>(?:~|\.{1,2})?/?(?:[\w.-]++/)+[\w.-]*\w(?::\d+)*/?)"
    r"|(?P<time>\d{1,2}:\d{2}(?::\d{2})?(?:\s?(?i:[ap]\.?m\.?))?(?![\w:])"
    r"|\d{1,2}\s?(?i:[ap]\.?m\.?)(?!\w))"
    r"|(?P<version>v\d+(?:\.\d+)+(?:[-+][\w.]+)?|\d+\.\d+\.\d+(?:[-+][\w.]+)?)(?!\w)"
    rf"|(?P<money>[$€£¥₹]\s?{_NUM}(?:\s?(?i:k|m|bn|million|billion|thousand)(?!\w))?"
    rf"|{_NUM}\s?(?i:usd|eur|gbp|dollars?|euros?|pounds?|bucks)(?!\w))"
    rf"|(?P<percent>{_NUM})\s?(?:%|(?i:percent|per cent)(?!\w))"
    rf"|(?P<unit>{_NUM})(?P<u>{_UNITS})"
    r"|(?P<call>[^\W\d][\w.]*+)\(\)"
    r"|(?P<dotted>\.?[^\W\d]\w*+(?:\.\w++)+(?::\d+)*|\.[^\W\d]\w+)(?!\w|\.\w)"
    r"|(?P<tag>[@#]\w+)"
    r"|(?P<year>(?:1[89]|20)\d\d)(?!\w)"
    r"|(?P<ident>(?=[\w-]*?(?:_|\d|[a-z][A-Z]|[A-Z]{2}[a-z]))\w++(?:-\w++)*+))"
)
_DIGIT_AND_LETTER: Final = re.compile(r"(?=\D*+\d)(?=[\W\d_]*+[^\W\d_])")
_ORDINAL_OR_TIME: Final = re.compile(r"\d+(?:st|nd|rd|th|s|am|pm)", re.IGNORECASE)
_CAMEL: Final = re.compile(r"[a-z\d][A-Z]|[A-Z]{2}[a-z]")
_ABBREVIATION: Final = re.compile(r"\.?\w(?:\.\w)+")
_DIGITS: Final = re.compile(r"\d+")
_ISO_DAY_OR_MONTH: Final = re.compile(r"\d{4}-\d{2}(?:-\d{2})?")
_NUMBER_CHARS: Final = "0123456789.,-"
_MONTH_WORD: Final = re.compile(r"[^\W\d_]{3,}")
_OPENERS: Final = frozenset("\"'([{\u201c\u00ab\u2018-\u2013\u2014*\u2022>#")
_TOKEN_RE: Final = re.compile(r"([^\W_]+(?:['\-.][^\W_]+)*)|([.!?…:;\n\r]+)|([^\w\s])")
_COMMIT_RE: Final = re.compile(
    r"\b(?:decid\w*|decision\w*|agree[ds]?|must|always|never|remember|important\w*|deadline\w*|"
    r"promis\w*|commit(?:ted|ment)?|plan(?:ned|ning)? to|will|won't|shall|going to|need to|"
    r"have to|has to|make sure|don't forget|from now on|due (?:by|on)|let's|priority|"
    r"require[ds]?|should)\b"
)
_CORRECTION_RE: Final = re.compile(
    r"^\W*(?:no|nope|nah)\s*[,.!;:-]|\b(?:actually|wrong|incorrect|instead|not what i|i meant|"
    r"that's not|correction|rather than|i said)\b"
)
_QUIET_ROLES: Final = frozenset(["system", "tool"])
_NOT_USER: Final = frozenset(["assistant", "system", "tool"])


@dataclass(frozen=True, slots=True)
class Enrichment:
    """What ``enrich`` derives from a moment's text."""

    concepts: list[str]
    retrieval_keys: list[str]
    importance: float
    #: The days and months the text speaks of, as ISO keys (``2023-05-06``, ``2023-05``):
    #: those it writes out, and, given the date it was said, those it says relative to it
    #: ("last Saturday"). A moment is indexed under them so it is found by its date.
    dates: list[str] = field(default_factory=list)


def enrich(
    text: str, *, role: str = "user", has_actions: bool = False, when: date | None = None
) -> Enrichment:
    """Derive concepts, retrieval keys and importance from ``text`` (see the module doc);
    ``when``, the day it was said, resolves its relative dates ("yesterday")."""
    text = text.replace("\u2019", "'")
    keys, masked = _exact_keys(text)
    strong, weak, phrases, n_words, chitchat = _scan(masked)
    ordered = strong[:4] + phrases[:4] + strong[4:] + weak + phrases[4:]
    concepts = _first(ordered, MAX_CONCEPTS)
    named = strong + weak
    resolved = relative_dates(text, when) if when is not None else []
    retrieval = _first(keys + resolved + named, MAX_RETRIEVAL_KEYS)
    dates = _first([k for k in keys if _ISO_DAY_OR_MONTH.fullmatch(k)] + resolved, limit=0)

    score = BASE_IMPORTANCE
    lowered = text.casefold()
    if commits := len(set(_COMMIT_RE.findall(lowered))):
        score += min(0.3, 0.1 + 0.05 * commits)
    if role.casefold() not in _NOT_USER and _CORRECTION_RE.search(lowered):
        score += 0.15
    score += min(0.15, 0.05 * len(keys)) if keys else (0.03 if _DIGITS.search(text) else 0.0)
    score += min(0.1, 0.03 * len(named))
    score += 0.15 if has_actions else 0.0
    score += 0.15 if n_words >= 80 else 0.1 if n_words >= 30 else 0.05 if n_words >= 12 else 0.0
    if (n_words == 0 and not keys) or chitchat:
        score -= 0.2
    elif n_words < 3 and not keys:
        score -= 0.1
    if role.casefold() in _QUIET_ROLES:
        score = BASE_IMPORTANCE + (score - BASE_IMPORTANCE) / 2
    return Enrichment(concepts, retrieval, round(min(1.0, max(0.0, score)), 2), dates)


def identifiers(text: str) -> list[str]:
    """Every exact key and named thing in ``text``, normalised, with no limit: what a rewrite
    or a summary of ``text`` must keep (or say it resolved)."""
    keys, masked = _exact_keys(text.replace("\u2019", "'"))
    strong, weak, *_ = _scan(masked)
    return _first(keys + strong + weak, limit=0)


def exact_identifiers(text: str) -> list[str]:
    """The exact keys (ids, dates, numbers with units, paths…) and the strongly named things
    of ``text`` (not a lone capitalised word that starts a sentence), normalised: what a
    summary of ``text`` should keep verbatim."""
    keys, masked = _exact_keys(text.replace("\u2019", "'"))
    strong, *_ = _scan(masked)
    return _first(keys + strong, limit=0)


def _exact_keys(text: str) -> tuple[list[str], str]:
    """The exact keys of ``text``, and the text with the spans of code-like keys cut out."""
    keys: list[str] = []
    pieces: list[str] = []
    last = 0
    for m in _KEY_RE.finditer(text):
        kind = m.lastgroup
        value = m.group(kind) if kind and kind != "u" else m.group(0)
        key: str | None = value
        end = m.end()
        if kind == "url":
            key = value.rstrip(".,;:!?)]}'\"")
            end = m.start() + len(key)
        elif kind == "date":
            key = _date_key(value)
        elif kind == "path":
            last_part = value.rstrip("/").rsplit("/", 1)[-1]
            if not (value[0] in "/~." or "." in last_part or value.count("/") >= 2):
                key = None
        elif kind == "time":
            key = value.replace(".", "").replace(" ", "")
        elif kind == "money":
            key = value[0] + value[1:].lstrip() if not value[0].isdigit() else value
        elif kind == "percent":
            key = value + "%"
        elif kind == "u":
            key = f"{m.group('unit')} {m.group('u').lstrip()}"
        elif kind == "dotted" and _ABBREVIATION.fullmatch(value):
            key = None
        elif kind == "ident":
            if "_" not in value and not (
                (_DIGIT_AND_LETTER.match(value) and not _ORDINAL_OR_TIME.fullmatch(value))
                or _CAMEL.search(value)
            ):
                key = None
            elif "_" not in value:  # CamelCase and ABC-123 stay in the text: maybe named things
                keys.append(value)
                continue
        if key:
            keys.append(key)
            pieces.append(text[last : m.start()])
            pieces.append(" | ")
            last = end
    pieces.append(text[last:])
    return keys, "".join(pieces)


def _date_key(value: str) -> str:
    """``7 May 2023`` and ``May 7th, 2023`` → ``2023-05-07``; ``May 2023`` → ``2023-05``."""
    numbers = [int(n) for n in _DIGITS.findall(value)]
    if "/" in value or not numbers:
        return value
    if "-" in value:
        year, month, day = numbers
    else:
        word = _MONTH_WORD.search(value)
        month = _MONTHS.get(word.group(0)[:3].casefold(), 0) if word else 0
        year = next((n for n in numbers if n >= 1000), 0)
        days = [n for n in numbers if n < 1000]
        day = days[0] if days else 0
        if not day:
            return f"{year:04d}-{month:02d}" if month > 0 else value
    try:
        return date(year or 2000, month, day).strftime("%Y-%m-%d" if year else "--%m-%d")
    except ValueError:
        return value


def _scan(text: str) -> tuple[list[str], list[str], list[str], int, bool]:
    """Named things (strong, then weak: a lone sentence-initial word), RAKE phrases best first,
    the number of words, and whether the words are all chit-chat."""
    named: dict[str, list[int]] = {}  # name -> [weak, -count, first position]
    phrases: list[list[str]] = []
    run: list[str] = []
    phrase: list[str] = []
    n_words = 0
    chitchat = True
    at_start = run_at_start = True

    def flush_run() -> None:
        if run_at_start and len(run) > 2 and run[1] == "the":  # "Use the SessionStore"
            del run[:2]
        stripped = len(run)
        while run and run[-1].casefold() in _CONNECTORS:
            run.pop()
        while run and run[0].casefold() in STOPWORDS:
            run.pop(0)
        stripped -= len(run)
        if run and (len(run) > 1 or len(run[0]) > 1):
            weak = run_at_start and not stripped and len(run) == 1 and not run[0].isupper()
            entry = named.setdefault(" ".join(run), [1, 0, len(named)])
            entry[0] = min(entry[0], int(weak))
            entry[1] -= 1
        run.clear()

    for word, end, punct in _TOKEN_RE.findall(text):
        if word and not (word[0].isdigit() and not word.strip(_NUMBER_CHARS)):
            n_words += 1
            if word[-2:] in ("'s", "'S"):
                word = word[:-2]
            low = word.casefold()
            if chitchat and low not in _CHITCHAT:
                chitchat = False
            if (word[0].isupper() and low not in _NEVER_NAMED) or (run and low in _CONNECTORS):
                if not run:
                    run_at_start = at_start
                run.append(word)
            elif run:
                flush_run()
            at_start = False
            if low not in STOPWORDS and len(low) <= 40:
                phrase.append(low)
                continue
        else:
            n_words += bool(word)
            if run:
                flush_run()
            at_start = bool(end) or (at_start and punct in _OPENERS)
        if phrase:
            phrases.append(phrase)
            phrase = []
    if run:
        flush_run()
    if phrase:
        phrases.append(phrase)
    ranked = sorted(named, key=named.__getitem__)
    strong = [n for n in ranked if not named[n][0]]
    weak = [n for n in ranked if named[n][0]]
    return strong, weak, _rake(phrases), n_words, chitchat and n_words > 0


def _rake(candidates: list[list[str]]) -> list[str]:
    """Rank phrases of 1-3 words by the sum over their words of degree / frequency."""
    phrases = [
        chunk
        for c in candidates
        for chunk in ([c] if len(c) <= 3 else [c[i : i + 3] for i in range(0, len(c), 3)])
        if len(chunk) > 1 or len(chunk[0]) >= 3
    ]
    freq: dict[str, int] = {}
    degree: dict[str, int] = {}
    for p in phrases:
        n = len(p)
        for w in p:
            freq[w] = freq.get(w, 0) + 1
            degree[w] = degree.get(w, 0) + n
    scored: dict[str, tuple[float, int]] = {}
    for i, p in enumerate(phrases):
        key = " ".join(p)
        if key not in scored:
            scored[key] = (-sum([degree[w] / freq[w] for w in p]), i)
    return sorted(scored, key=scored.__getitem__)


def _first(values: Iterable[str], limit: int) -> list[str]:
    """The first ``limit`` distinct values through ``normalize_concept``, none empty or huge."""
    seen: dict[str, None] = {}
    for v in values:
        if (n := normalize_concept(v)) and len(n) <= _MAX_LENGTH:
            seen[n] = None
            if len(seen) == limit:  # 0: no limit
                break
    return list(seen)
