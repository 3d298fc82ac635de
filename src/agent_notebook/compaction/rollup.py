"""Making one rollup: its text, its lineage, its keep list and its dropped manifest.

A rollup's text, in time order under a line per day (``2023-05-08:``):

* **kept whole**: the originals that still hold (:mod:`.keep`: standing decisions, open
  items, current facts, both sides of a conflict, pinned or important moments), word for
  word and outside the budget, each line saying why (``decided: ``, ``open: ``…);
* **faded**: what no longer holds (a replaced value or decision, a closed item, an expired
  fact), one line each, outside the budget: the first detail to fade, never dropped;
* **the notes**, within the budget: every other moment as a line of its own words
  (:mod:`.notes`), made from the *original* moments at every level (a summary of summaries
  only loses more); a model (``compaction.summarizer: llm``) writes this part instead, and
  is checked against the keep list: a summary that drops a name, number or date of the
  kept and faded lines is not used;
* **the index**: ``Also mentioned:`` the salient items the text did not keep, the most
  frequent first, in what room is left (at most ``INDEX_SHARE`` of the budget beside the
  summary), so a name or a date stays findable and on record.

The dropped manifest is the check run after: the identifiers, numbers, dates and names found
in the original moments (:func:`agent_notebook.core.enrich.exact_identifiers`, plus bare numbers)
that the text does not keep, as written in the originals (``7 June``, not the key
``--06-07``), in the order they first appear. It is kept with the rollup
(``Moment.rollup.dropped``), so what a summary lost is on record.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Final

from ..config import CompactionSettings
from ..core.enrich import enrich, exact_identifiers, identifiers
from ..core.tokens import TokenCounter
from ..model import (
    ROLLUP_INDEX_PREFIX,
    FadedLine,
    KeptLine,
    Moment,
    MomentContent,
    MomentMetadata,
    Rollup,
    RollupLevel,
)
from .keep import KEPT_TAGS, KeepList
from .notes import TEXTS_REMEMBERED, by_day, forget_readings, notes

if TYPE_CHECKING:  # summarize loads LangChain: a command that never compacts needs none
    from .summarize import Summarizer

__all__ = [
    "INDEX_PREFIX",
    "ROLLUP_ROLE",
    "build_rollup",
    "dropped_manifest",
    "forget_originals",
    "kept_line",
    "salient",
    "source_text",
]

#: The role of a rollup moment.
ROLLUP_ROLE: Final = "summary"
INDEX_PREFIX: Final = ROLLUP_INDEX_PREFIX
#: The index gets at most this share of the budget beside the summary.
INDEX_SHARE: Final = 0.3
_NUMBER: Final = re.compile(r"(?<![\w.,:/-])\d+(?:[.,:]\d+)*(?![\w])")
_WORDS: Final = re.compile(r"\S+")
_DIGITS: Final = re.compile(r"\d+(?:[.,:]\d+)*")
_EDGE_PUNCTUATION: Final = "\"'()[]{}.,;:!?"
_GUIDANCE: Final = (
    "These are the {level} notebook entries of {period}. Write the {level} summary that "
    "replaces them: who did, said, decided or planned what, and when."
)


def source_text(moment: Moment) -> str:
    """What a summarizer reads of a source: a rollup's text, or an original's with its
    speaker when the text does not already name them."""
    text = moment.content.text.strip()
    speaker = moment.speaker.strip()
    if moment.rollup is not None or not speaker or text.startswith(speaker):
        return text
    return f"{speaker}: {text}"


def forget_originals() -> None:
    """Forget what a run read of the original moments (their salient items, how they write
    them, their notes' words and dates): called when a run ends."""
    _text_keys.cache_clear()
    _written.cache_clear()
    forget_readings()


def kept_line(kept: KeptLine) -> str:
    """How a rollup's text holds a line it keeps whole: why, then the original word for
    word; once a later moment ended it, also that."""
    if kept.superseded_by is not None and kept.valid_until is not None:
        return f"superseded by {kept.superseded_by} on {kept.valid_until:%Y-%m-%d}: {kept.text}"
    return KEPT_TAGS[kept.kind] + kept.text


@dataclass(frozen=True)
class _Item:
    key: str  # normalised, as identifiers() gives it
    written: str  # as the text has it
    texts: int  # how many texts hold it


def _salient_items(texts: Sequence[str]) -> list[_Item]:
    seen: dict[str, tuple[int, int]] = {}  # key -> (first text, texts holding it)
    for t, text in enumerate(texts):
        for key in _text_keys(text):
            first, n = seen.get(key, (t, 0))
            seen[key] = (first, n + 1)
    return [_Item(key, _written(key, texts[first]), n) for key, (first, n) in seen.items()]


@lru_cache(maxsize=TEXTS_REMEMBERED)
def _text_keys(text: str) -> tuple[str, ...]:
    """The salient keys of one text (remembered: every level reads the same originals)."""
    keys = dict.fromkeys(exact_identifiers(text))
    # the 81 of "81 EUR" and the 7 of "7 June" (key --06-07) are no items of their own
    inside = {n.lstrip("0") for k in keys for n in _DIGITS.findall(k)}
    keys.update(dict.fromkeys(n for n in _NUMBER.findall(text) if n.lstrip("0") not in inside))
    return tuple(keys)


def salient(texts: Sequence[str]) -> list[str]:
    """Identifiers, dates, names and numbers of ``texts`` as written there, first seen
    first; a lone capitalised word starting a sentence is not taken for a name."""
    return [item.written for item in _salient_items(texts)]


@lru_cache(maxsize=TEXTS_REMEMBERED)
def _written(key: str, text: str) -> str:
    """How ``text`` writes the normalised ``key``: the span itself when it is there in
    other case or spacing, else the shortest run of words whose key it is (``7 June`` for
    ``--06-07``); the key when neither is found."""
    pattern = r"\s+".join(map(re.escape, key.split()))
    if found := re.search(rf"(?<!\w){pattern}(?!\w)", text, re.IGNORECASE):
        return found.group(0)
    words = list(_WORDS.finditer(text))
    for size in range(1, 7):  # a key that is not written as such holds a digit (a date...)
        for i in range(len(words) - size + 1):
            span = text[words[i].start() : words[i + size - 1].end()].strip(_EDGE_PUNCTUATION)
            if any(c.isdigit() for c in span) and key in exact_identifiers(span):
                return span
    return key


def _keeps(summary: str, key: str, kept: set[str]) -> bool:
    """Whether ``summary`` (folded by :func:`_folded`) keeps the item ``key``: as one of its
    own identifiers or numbers, or written out as a whole word (``16`` is not kept by
    ``2016``)."""
    if key in kept:
        return True
    needle = " ".join(key.split()).lower()
    start = summary.find(needle)
    while start >= 0:
        end = start + len(needle)
        if not (_word_char(summary, start - 1) or _word_char(summary, end)):
            return True
        start = summary.find(needle, start + 1)
    return False


def _word_char(text: str, at: int) -> bool:
    return 0 <= at < len(text) and (text[at].isalnum() or text[at] == "_")


def _folded(text: str) -> str:
    """``text`` in lower case with each run of blanks one space: where items are looked up."""
    return " ".join(text.split()).lower()


def _kept_keys(summary: str) -> set[str]:
    return set(identifiers(summary)) | set(_NUMBER.findall(summary))


def dropped_manifest(texts: Sequence[str], summary: str) -> tuple[list[str], int]:
    """What of the salient items of ``texts`` the summary lost (as the texts write them),
    and how many salient items there were."""
    items = _salient_items(texts)
    return [i.written for i in _lost(items, summary)], len(items)


def _lost(items: Sequence[_Item], text: str) -> list[_Item]:
    """The ``items`` that ``text`` does not keep."""
    kept, folded = _kept_keys(text), _folded(text)
    return [i for i in items if not _keeps(folded, i.key, kept)]


def build_rollup(
    *,
    number: int,
    level: RollupLevel,
    period: str,
    sources: Sequence[Moment],
    originals: Sequence[Moment],
    keep: KeepList,
    summarizer: Summarizer,
    settings: CompactionSettings,
    counter: TokenCounter,
) -> Moment:
    """The rollup moment ``m_<number>`` summarizing ``sources`` (the moments it replaces),
    which cover ``originals`` (the original moments under them; for a daily, the same),
    keeping whole and fading what ``keep`` says."""
    ordered = _in_time_order(sources)
    under = _in_time_order(originals)
    # the budget is a share of the original moments' tokens, at every level, so summaries
    # of summaries do not shrink geometrically
    before = sum(
        m.rollup.tokens_before if m.rollup is not None else counter.count(m.content.text)
        for m in ordered
    )
    cap = {
        "daily": settings.daily_max_tokens,
        "weekly": settings.weekly_max_tokens,
        "monthly": settings.monthly_max_tokens,
    }[level]
    budget = min(cap, max(settings.min_summary_tokens, round(before * settings.summary_ratio)))
    kept = [_kept(m, keep) for m in under if m.id in keep.kept]
    fixed = {k.source: kept_line(k) for k in kept} | {
        m.id: keep.faded[m.id] for m in under if m.id in keep.faded
    }
    original_texts = [t for t in map(source_text, under) if t]
    items = _salient_items(original_texts)
    index_room = min(round(budget * INDEX_SHARE), counter.count(_index_line(items)))
    room = max(1, budget - index_room)
    body, spent = notes(under, fixed, room, counter)
    name = summarizer.name
    from .summarize import ExtractiveSummarizer

    if not isinstance(summarizer, ExtractiveSummarizer):
        body, spent, name = _summarize(
            ordered, under, fixed, (body, spent), summarizer, room, level, period, counter
        )
    index = _fit_index(_lost(items, body), budget - spent - 1, counter)
    summary = "\n".join(part for part in (body, index) if part)
    dropped = [i.written for i in _lost(items, summary)]
    lineage: dict[str, None] = {}
    for m in ordered:
        lineage.update(dict.fromkeys(m.rollup.originals if m.rollup is not None else [m.id]))
    concepts = Counter(c for m in ordered for c in m.metadata.concepts)
    return Moment(
        id=f"m_{number}",
        session=ordered[0].session,
        timestamp=max(m.timestamp for m in ordered),
        role=ROLLUP_ROLE,
        content=MomentContent(text=summary),
        metadata=MomentMetadata(
            # every concept of its sources, the most frequent first: concepts are never lost
            concepts=[c for c, _ in concepts.most_common()],
            retrieval_keys=enrich(summary).retrieval_keys,
            importance=min(0.99, max(m.metadata.importance for m in ordered)),
            decay_rate=min(m.metadata.decay_rate for m in ordered),
            # filed under what its kept lines state, so a later statement meets them
            fact_keys=list(dict.fromkeys(k for line in kept for k in line.fact_keys)),
        ),
        rollup=Rollup(
            level=level,
            period=period,
            sources=sorted((m.id for m in ordered), key=lambda i: int(i[2:])),
            originals=sorted(lineage, key=lambda i: int(i[2:])),
            dropped=dropped,
            salient=len(items),
            summarizer=name,
            tokens_before=before,
            tokens_after=counter.count(summary),
            kept=kept,
            faded=[
                FadedLine(source=m.id, line=keep.faded[m.id]) for m in under if m.id in keep.faded
            ],
        ),
    )


def _kept(moment: Moment, keep: KeepList) -> KeptLine:
    return KeptLine(
        source=moment.id,
        kind=keep.kept[moment.id],
        text=source_text(moment),
        said=moment.timestamp,
        speaker=moment.speaker,
        role=moment.role,
        fact_keys=moment.metadata.fact_keys,
    )


def _in_time_order(moments: Sequence[Moment]) -> list[Moment]:
    return sorted(moments, key=lambda m: (m.timestamp, m.number))


def _summarize(
    sources: Sequence[Moment],
    under: Sequence[Moment],
    fixed: dict[str, str],
    made: tuple[str, int],
    summarizer: Summarizer,
    room: int,
    level: RollupLevel,
    period: str,
    counter: TokenCounter,
) -> tuple[str, int, str]:
    """The kept and faded lines, then the model's summary, its tokens and the summarizer's
    name. The model reads every source (a lower rollup without its index line) and writes
    the summary; the kept and faded lines stay word for word beside it whatever it writes.
    Its summary is checked against them: when it drops one of their salient items (a name,
    a number, a date of what still holds or what replaced it), or the model fails, the notes
    ``made`` (text, tokens) stand and the name says why."""
    texts = []
    for m in sources:
        lines = source_text(m).splitlines()
        if text := "\n".join(x for x in lines if x.strip() and not x.startswith(INDEX_PREFIX)):
            texts.append(text)
    guidance = _GUIDANCE.format(level=level, period=period)
    summary = summarizer.summarize(texts, guidance=guidance, max_tokens=room).strip()
    if fell_back := getattr(summarizer, "last_fallback_reason", None):
        return *made, f"{summarizer.name} (fell back: {fell_back})"
    if lost := _lost(_salient_items(list(fixed.values())), summary):
        missing = ", ".join(i.written for i in lost[:5])
        reason = f"its summary dropped {missing} of the kept lines; used the notes"
        return *made, f"{summarizer.name} (fell back: {reason})"
    head = by_day(under, fixed)
    return "\n".join(p for p in (head, summary) if p), counter.count(summary), summarizer.name


def _index_line(items: Sequence[_Item]) -> str:
    return INDEX_PREFIX + "; ".join(i.written for i in items) if items else ""


def _fit_index(items: Sequence[_Item], room: int, counter: TokenCounter) -> str:
    """The index line of the most frequent ``items`` (first seen first among equals) that
    fit ``room`` tokens."""
    chosen: list[_Item] = []
    used = counter.count(INDEX_PREFIX)
    for item in sorted(items, key=lambda i: -i.texts):
        cost = counter.count("; " + item.written)
        if used + cost <= room:
            chosen.append(item)
            used += cost
    return _index_line(chosen)
