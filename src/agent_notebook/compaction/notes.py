"""A rollup's notes: every moment it summarizes, as a short line of its own words.

A later question asks about a thing, a number, a person or a day, rarely about the words
around them. So within its budget the summary keeps, for every moment it replaces, a line
of that moment's own words in their order: the speaker, then the named things, numbers and
content words, stopwords and filler left out, and the days its relative dates mean
("yesterday" said on 8 May 2023 is kept as 2023-05-07). When the budget is short, each line
keeps the same share of its words, the most telling first: a name or a number before a
word every moment of the period uses. Lines sit under a line per day (``2023-05-08:``),
with the kept and faded lines of the keep list in their place.

Measured on LoCoMo (``bench/compaction_locomo.py``, the five development conversations),
rollups of notes at ``summary_ratio`` 0.35 keep what questions find within 1,000 tokens of
search results at 89.8% of before compaction (87.4% crediting a rollup only with the turns
whose words it keeps), where sentences picked for coverage at 0.15 kept 62.6% (40.4%).
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import date
from functools import lru_cache
from typing import Final

from ..core.dates import relative_dates
from ..core.enrich import STOPWORDS
from ..core.tokens import TokenCounter
from ..model import Moment

__all__ = ["by_day", "forget_readings", "is_note_of", "notes"]

_WORD: Final = re.compile(
    r"[^\W\d_][\w'\u2019-]*[\w]|\d+(?:[.,:/]\d+)*(?:%|[^\W\d_]{1,3}\b)?|[^\W\d_]"
)
_DAY_KEY: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
#: How many original texts a run's readings are remembered for: every level (daily,
#: weekly, monthly) reads the same originals. A run forgets them when it ends
#: (:func:`forget_readings`), so a long-lived process keeps no texts.
TEXTS_REMEMBERED: Final = 200_000
#: Bisection steps on the share of words each line keeps.
_STEPS: Final = 10
#: A line keeps at least this share of its moment's words: fewer says nothing of it, and
#: when all lines cannot keep it, the lines that add most are kept. The weights of a word
#: (see _weights). All four were set on LoCoMo leave one conversation out
#: (bench/compaction_locomo.py; docs/compaction.md has the figures).
MIN_SHARE: Final = 0.7
NAMED: Final = 1.0
CONCEPT: Final = 0.5
RARITY: Final = 0.3
_SENTENCE_END: Final = re.compile(r"[.!?:;\"\u201c\n]")
#: Words that tell nothing of their own, beyond the stopwords.
_FILLER: Final = frozenset(
    [
        "hey",
        "hi",
        "hello",
        "wow",
        "omg",
        "lol",
        "haha",
        "hahaha",
        "yay",
        "yeah",
        "yep",
        "nope",
        "ooh",
        "oh",
        "ah",
        "um",
        "uh",
        "hmm",
        "totally",
        "super",
        "pretty",
        "quite",
        "kinda",
        "sorta",
        "gonna",
        "wanna",
        "gotta",
    ]
)


def _words(moment: Moment) -> list[tuple[str, bool]]:
    """The words a line keeps of ``moment``, in order, each with whether it names a thing
    (a number, or a capitalised word not opening a sentence): not a stopword nor filler,
    not the speaker's own name opening the text, at least two letters (or a number)."""
    return list(_words_of(moment.content.text, moment.speaker.strip()))


@lru_cache(maxsize=TEXTS_REMEMBERED)  # every level reads the same originals
def _words_of(text: str, speaker: str) -> tuple[tuple[str, bool], ...]:
    if speaker and text.startswith(speaker):
        text = text[len(speaker) :]
    kept = []
    after = 0  # where the word before ends
    for found in _WORD.finditer(text):
        word = found.group(0)
        low = word.casefold().replace("\u2019", "'")
        opening = after == 0 or _SENTENCE_END.search(text, after, found.start()) is not None
        after = found.end()
        if word[0].isdigit():
            kept.append((word, True))
        elif len(low) > 1 and low not in STOPWORDS and low not in _FILLER:
            kept.append((word, word[0].isupper() and not opening))
    return tuple(kept)


def _dates(moment: Moment) -> list[str]:
    """The days the moment's relative dates mean ("yesterday" → ``2023-05-07``)."""
    return list(_dates_of(moment.content.text, moment.timestamp.date()))


@lru_cache(maxsize=TEXTS_REMEMBERED)
def _dates_of(text: str, said_on: date) -> tuple[str, ...]:
    found = relative_dates(text, said_on)
    days = [k for k in found if _DAY_KEY.fullmatch(k)]
    return tuple((days or found)[:2])


class _Line:
    """One moment's words, ranked: ``head(k)`` is its line keeping the ``k`` best."""

    def __init__(self, moment: Moment, words: list[str], weight: Sequence[float]) -> None:
        self.prefix = f"{moment.speaker.strip()}: " if moment.speaker.strip() else ""
        dates = _dates(moment)
        self.suffix = f" ({', '.join(dates)})" if dates else ""
        self.words = words
        order = sorted(range(len(words)), key=lambda i: (-weight[i], i))
        self.rank = {i: r for r, i in enumerate(order)}
        self.weight = list(weight)

    def size(self, share: float) -> int:
        """How many words the line keeps at ``share``."""
        return max(1, math.ceil(share * len(self.words)))

    def head(self, k: int) -> str:
        chosen = [w for i, w in enumerate(self.words) if self.rank[i] < k]
        return self.prefix + " ".join(chosen) + self.suffix

    def kept(self, k: int) -> list[tuple[str, float]]:
        """The words the line keeping ``k`` keeps (case-folded), with their weights."""
        return [
            (w.casefold(), self.weight[i]) for i, w in enumerate(self.words) if self.rank[i] < k
        ]

    def worth(self, k: int) -> float:
        """What the line keeping ``k`` words tells, per word."""
        return sum(w for i, w in enumerate(self.weight) if self.rank[i] < k) / (k + 2)


def notes(
    originals: Sequence[Moment],
    fixed: Mapping[str, str],
    room: int,
    counter: TokenCounter,
) -> tuple[str, int]:
    """The notes of ``originals`` in time order under their day lines: the ``fixed`` lines
    (moment id -> line: kept whole or faded, outside the budget) as they are, and a line of
    its own words for every other moment with words, all keeping the largest share of their
    words (at least ``MIN_SHARE``) that fits ``room`` tokens; when even that does not fit,
    the lines that tell most per word. Returns the text and the tokens counted against
    ``room`` (the notes with their day lines, without the fixed lines)."""
    rest = [m for m in originals if m.id not in fixed]
    words = {m.id: _words(m) for m in rest}
    rest = [m for m in rest if words[m.id]]
    weights = _weights(rest, words)
    lines = {m.id: _Line(m, [w for w, _ in words[m.id]], weights[m.id]) for m in rest}

    def fits(picked: Mapping[str, str]) -> bool:
        return counter.count(by_day(originals, picked)) <= room

    def text_at(share: float) -> dict[str, str]:
        return {i: line.head(line.size(share)) for i, line in lines.items()}

    best: dict[str, str] = {}
    if fits(full := text_at(1.0)):
        best = full
    elif fits(text_at(MIN_SHARE)):
        low, high = MIN_SHARE, 1.0
        best = text_at(MIN_SHARE)
        for _ in range(_STEPS):
            share = (low + high) / 2
            if fits(picked := text_at(share)):
                best, low = picked, share
            else:
                high = share
    else:
        best = _most_telling(originals, lines, room, counter)
    used = counter.count(by_day(originals, best)) if best else 0
    return by_day(originals, {**best, **fixed}), used


def _weights(
    moments: Sequence[Moment], words: Mapping[str, list[tuple[str, bool]]]
) -> dict[str, list[float]]:
    """What each word of each moment tells: a name or a number most, then a word its moment
    was indexed under (its concepts), and a little more the fewer moments of the period use
    it. Rarity counts for little: a word every moment of a session repeats is often what
    the session is about, and what a later question names."""
    held = Counter(w.casefold() for m in moments for w in {w for w, _ in words[m.id]})
    total = len(moments) + 1
    weights = {}
    for m in moments:
        concept = {part for c in m.metadata.concepts for part in c.split()}
        weights[m.id] = [
            RARITY * math.log(total / held[w.casefold()])
            + NAMED * named
            + CONCEPT * (w.casefold() in concept)
            for w, named in words[m.id]
        ]
    return weights


def _most_telling(
    originals: Sequence[Moment], lines: Mapping[str, _Line], room: int, counter: TokenCounter
) -> dict[str, str]:
    """Lines at ``MIN_SHARE``, as many as fit ``room``: each time the one that tells most
    per word of what the lines picked so far do not (greedy, lazily re-scored: a line's
    score only falls as more is covered)."""
    sizes = {i: line.size(MIN_SHARE) for i, line in lines.items()}
    kept = {i: lines[i].kept(sizes[i]) for i in lines}
    covered: set[str] = set()

    def score(moment_id: str) -> float:
        fresh = sum(w for word, w in kept[moment_id] if word not in covered)
        return fresh / (sizes[moment_id] + 2)

    heap = [(-score(i), n, i) for n, i in enumerate(lines)]
    heapq.heapify(heap)
    picked: dict[str, str] = {}
    used = 0
    while heap:
        _, n, moment_id = heapq.heappop(heap)
        now = score(moment_id)
        if heap and now < -heap[0][0] - 1e-12:  # stale: another may tell more now
            heapq.heappush(heap, (-now, n, moment_id))
            continue
        line = lines[moment_id].head(sizes[moment_id])
        cost = counter.count(line) + 1
        if now <= 0 or used + cost > room:
            continue
        picked[moment_id] = line
        used += cost
        covered.update(word for word, _ in kept[moment_id])
    while picked and counter.count(by_day(originals, picked)) > room:  # the day lines
        del picked[min(picked, key=lambda i: lines[i].worth(sizes[i]))]
    return picked


def is_note_of(line: str, moment: Moment) -> bool:
    """Whether ``line`` of a rollup's text may be the note of ``moment``: its speaker, then
    some of its words in their order (what a redaction of ``moment`` takes out)."""
    prefix = f"{moment.speaker.strip()}: " if moment.speaker.strip() else ""
    if not line.startswith(prefix):
        return False
    said = line[len(prefix) :]
    if said.endswith(")") and " (" in said:  # the days its relative dates mean
        said = said[: said.rindex(" (")]
    wanted = said.split()
    if not wanted:
        return False
    words = iter(w for w, _ in _words(moment))
    return all(any(w == have for have in words) for w in wanted)


def forget_readings() -> None:
    """Forget the words and dates read of the originals (at the end of a run)."""
    _words_of.cache_clear()
    _dates_of.cache_clear()


def by_day(originals: Sequence[Moment], lines: Mapping[str, str]) -> str:
    """``lines`` (moment id -> line) in the order of ``originals``, under a line per day."""
    out: list[str] = []
    day = ""
    for m in originals:
        if not (line := lines.get(m.id)):
            continue
        if (today := f"{m.timestamp:%Y-%m-%d}") != day:
            out.append(f"{today}:")
            day = today
        out.append(line)
    return "\n".join(out)
