"""Making one rollup: the summary (any :class:`~.summarize.Summarizer`), its lineage and its
dropped manifest.

A rollup's text has three parts:

* **kept whole**: every original moment that is a decision or a correction, or whose
  importance is at least ``keep_whole_importance``, word for word, outside the budget (an
  important decision is never cut to a few words);
* **the summary**, within the budget. The extractive summarizer picks its sentences from the
  *original* moments at every level (a summary of summaries only loses more), written in
  time order under a line per day (``2023-05-08:``), each line naming its speaker; a model
  reads the sources one level down, as their texts are short enough for a prompt;
* **the index**: ``Also mentioned:`` the salient items the summary did not keep, the most
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
from typing import TYPE_CHECKING, Final

from ..config import CompactionSettings
from ..core.enrich import enrich, exact_identifiers, identifiers
from ..core.tokens import TokenCounter
from ..model import (
    ROLLUP_INDEX_PREFIX,
    Moment,
    MomentContent,
    MomentMetadata,
    Rollup,
    RollupLevel,
)

if TYPE_CHECKING:  # summarize loads LangChain: a command that never compacts needs none
    from .summarize import ExtractiveSummarizer, Summarizer

__all__ = [
    "INDEX_PREFIX",
    "ROLLUP_ROLE",
    "build_rollup",
    "dropped_manifest",
    "kept_whole",
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
# A decision or a correction is kept whole, whatever its importance.
_DECISION: Final = re.compile(
    r"\b(?:decid(?:e|ed|es|ing)|decision|agreed|from now on|correction|i meant|"
    r"that's wrong|not what i)\b",
    re.IGNORECASE,
)
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


def kept_whole(
    moment: Moment, settings: CompactionSettings, updates: frozenset[str] = frozenset()
) -> bool:
    """An original moment a rollup keeps word for word: a decision, a correction, a current
    fact that replaced an earlier one (its id in ``updates``), or one of importance
    ``keep_whole_importance`` or more. A fact a later moment superseded is never kept whole:
    the summary may fold it (what is true must not degrade; what was true may)."""
    if moment.rollup is not None or moment.valid_until is not None:
        return False
    return (
        moment.id in updates
        or moment.metadata.importance >= settings.keep_whole_importance
        or _DECISION.search(moment.content.text) is not None
    )


def current_updates(moments: Sequence[Moment]) -> frozenset[str]:
    """The moments that superseded one of ``moments`` (``superseded_by:m_N`` links, from
    the fact rules) and still hold: the facts as they are now."""
    later = {
        link.split(":", 1)[1]
        for m in moments
        for link in m.relations.links
        if link.startswith("superseded_by:")
    }
    return frozenset(m.id for m in moments if m.id in later and m.valid_until is None)


@dataclass(frozen=True)
class _Item:
    key: str  # normalised, as identifiers() gives it
    written: str  # as the text has it
    texts: int  # how many texts hold it


def _salient_items(texts: Sequence[str]) -> list[_Item]:
    seen: dict[str, tuple[int, int]] = {}  # key -> (first text, texts holding it)
    for t, text in enumerate(texts):
        keys = dict.fromkeys(exact_identifiers(text))
        # the 81 of "81 EUR" and the 7 of "7 June" (key --06-07) are no items of their own
        inside = {n.lstrip("0") for k in keys for n in _DIGITS.findall(k)}
        keys.update(dict.fromkeys(n for n in _NUMBER.findall(text) if n.lstrip("0") not in inside))
        for key in keys:
            first, n = seen.get(key, (t, 0))
            seen[key] = (first, n + 1)
    return [_Item(key, _written(key, texts[first]), n) for key, (first, n) in seen.items()]


def salient(texts: Sequence[str]) -> list[str]:
    """Identifiers, dates, names and numbers of ``texts`` as written there, first seen
    first; a lone capitalised word starting a sentence is not taken for a name."""
    return [item.written for item in _salient_items(texts)]


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
    """Whether ``summary`` keeps the item ``key``: as one of its own identifiers or numbers,
    or written out as a whole word (``16`` is not kept by ``2016``)."""
    if key in kept:
        return True
    pattern = r"\s+".join(map(re.escape, key.split()))
    return re.search(rf"(?<!\w){pattern}(?!\w)", summary, re.IGNORECASE) is not None


def _kept_keys(summary: str) -> set[str]:
    return set(identifiers(summary)) | set(_NUMBER.findall(summary))


def dropped_manifest(texts: Sequence[str], summary: str) -> tuple[list[str], int]:
    """What of the salient items of ``texts`` the summary lost (as the texts write them),
    and how many salient items there were."""
    items = _salient_items(texts)
    return [i.written for i in _lost(items, summary)], len(items)


def _lost(items: Sequence[_Item], text: str) -> list[_Item]:
    """The ``items`` that ``text`` does not keep."""
    kept = _kept_keys(text)
    return [i for i in items if not _keeps(text, i.key, kept)]


def build_rollup(
    *,
    number: int,
    level: RollupLevel,
    period: str,
    sources: Sequence[Moment],
    originals: Sequence[Moment],
    summarizer: Summarizer,
    settings: CompactionSettings,
    counter: TokenCounter,
) -> Moment:
    """The rollup moment ``m_<number>`` summarizing ``sources`` (the moments it replaces),
    which cover ``originals`` (the original moments under them; for a daily, the same)."""
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
    updates = current_updates(under)
    whole = [m for m in under if kept_whole(m, settings, updates)]
    original_texts = [t for t in map(source_text, under) if t]
    items = _salient_items(original_texts)
    index_room = min(round(budget * INDEX_SHARE), counter.count(_index_line(items)))
    room = max(1, budget - index_room)
    from .summarize import ExtractiveSummarizer

    if isinstance(summarizer, ExtractiveSummarizer):
        body, spent = _extract(under, whole, summarizer, room, counter)
    else:
        body, spent = _summarize(ordered, whole, summarizer, room, level, period, counter)
    index = _fit_index(_lost(items, body), budget - spent - 1, counter)
    summary = "\n".join(part for part in (body, index) if part)
    dropped = [i.written for i in _lost(items, summary)]
    lineage: dict[str, None] = {}
    for m in ordered:
        lineage.update(dict.fromkeys(m.rollup.originals if m.rollup is not None else [m.id]))
    concepts = Counter(c for m in ordered for c in m.metadata.concepts)
    used = getattr(summarizer, "last_fallback_reason", None)
    name = summarizer.name if not used else f"{summarizer.name} (fell back: {used})"
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
        ),
    )


def _in_time_order(moments: Sequence[Moment]) -> list[Moment]:
    return sorted(moments, key=lambda m: (m.timestamp, m.number))


def _extract(
    originals: Sequence[Moment],
    whole: Sequence[Moment],
    summarizer: ExtractiveSummarizer,
    room: int,
    counter: TokenCounter,
) -> tuple[str, int]:
    """The moments kept whole and the sentences picked from the others, in time order,
    under a line per day, and the tokens of what counts against the budget (the picks with
    their day lines and speakers, which fit ``room``)."""
    keep = {m.id for m in whole}
    rest = [m for m in originals if m.id not in keep and source_text(m)]
    texts = [source_text(m) for m in rest]
    target = room
    while True:  # day lines and speakers cost tokens the picks did not count: pick less
        picks = summarizer.pick(texts, max(target, 0))
        picked = {rest[i].id: _with_speaker(rest[i], line) for i, line in picks}
        used = counter.count(_by_day(originals, {}, picked))
        if used <= room or target <= 0:
            return _by_day(originals, {m.id: source_text(m) for m in whole}, picked), used
        target -= max(used - room, 1)


def _with_speaker(moment: Moment, line: str) -> str:
    speaker = moment.speaker.strip()
    return line if not speaker or line.startswith(speaker) else f"{speaker}: {line}"


def _by_day(originals: Sequence[Moment], whole: dict[str, str], picked: dict[str, str]) -> str:
    lines: list[str] = []
    day = ""
    for m in originals:
        if not (line := whole.get(m.id) or picked.get(m.id)):
            continue
        if (today := f"{m.timestamp:%Y-%m-%d}") != day:
            lines.append(f"{today}:")
            day = today
        lines.append(line)
    return "\n".join(lines)


def _summarize(
    sources: Sequence[Moment],
    whole: Sequence[Moment],
    summarizer: Summarizer,
    room: int,
    level: RollupLevel,
    period: str,
    counter: TokenCounter,
) -> tuple[str, int]:
    """The moments kept whole, then the summarizer's summary of the rest, and the tokens of
    that summary. A lower rollup is read without the moments it kept whole (they are here
    already) and without its index."""
    kept = list(dict.fromkeys(t for t in map(source_text, whole) if t))
    texts = []
    for m in sources:
        text = source_text(m)
        if m.rollup is not None:
            for k in kept:
                text = text.replace(k, "")
            lines = text.splitlines()
            text = "\n".join(x for x in lines if x.strip() and not x.startswith(INDEX_PREFIX))
        if text and text not in kept:
            texts.append(text)
    guidance = _GUIDANCE.format(level=level, period=period)
    summary = summarizer.summarize(texts, guidance=guidance, max_tokens=room).strip()
    return "\n".join([*kept, summary]).strip(), counter.count(summary)


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
