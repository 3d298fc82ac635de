"""Making one rollup: the summary (any :class:`~agent_notebook.summarize.Summarizer`), its
lineage and its dropped manifest.

The dropped manifest is the check run after each summary: the identifiers, numbers, dates and
names found in the sources (:func:`agent_notebook.enrich.identifiers`, plus bare numbers)
that the summary does not keep, in the order they first appear. It is kept with the rollup
(``Moment.rollup.dropped``), so what a summary lost is on record.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from ..config import CompactionSettings
from ..enrich import enrich, exact_identifiers, identifiers
from ..model import Moment, MomentContent, MomentMetadata, Rollup, RollupLevel
from ..tokens import TokenCounter

if TYPE_CHECKING:
    from ..summarize import Summarizer

__all__ = ["ROLLUP_ROLE", "build_rollup", "dropped_manifest", "salient", "source_text"]

#: The role of a rollup moment.
ROLLUP_ROLE: Final = "summary"
_NUMBER: Final = re.compile(r"(?<![\w.,:/-])\d+(?:[.,:]\d+)*(?![\w])")
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


def salient(texts: Sequence[str]) -> list[str]:
    """Identifiers, dates, names and numbers of ``texts`` (normalised), first seen first;
    a lone capitalised word starting a sentence is not taken for a name."""
    found: dict[str, None] = {}
    for text in texts:
        found.update(dict.fromkeys(exact_identifiers(text)))
        found.update(dict.fromkeys(_NUMBER.findall(text)))
    return list(found)


def dropped_manifest(texts: Sequence[str], summary: str) -> tuple[list[str], int]:
    """What of ``salient(texts)`` the summary lost, and how many salient items there were."""
    items = salient(texts)
    kept = set(identifiers(summary)) | set(_NUMBER.findall(summary))
    lowered = summary.casefold()
    return [i for i in items if i not in kept and i not in lowered], len(items)


def build_rollup(
    *,
    number: int,
    level: RollupLevel,
    period: str,
    sources: Sequence[Moment],
    summarizer: Summarizer,
    settings: CompactionSettings,
    counter: TokenCounter,
) -> Moment:
    """The rollup moment ``m_<number>`` summarizing ``sources`` (oldest first)."""
    ordered = sorted(sources, key=lambda m: (m.timestamp, m.number))
    texts = [t for t in map(source_text, ordered) if t]
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
    guidance = _GUIDANCE.format(level=level, period=period)
    summary = summarizer.summarize(texts, guidance=guidance, max_tokens=budget).strip()
    dropped, salient_items = dropped_manifest(texts, summary)
    originals: dict[str, None] = {}
    for m in ordered:
        originals.update(dict.fromkeys(m.rollup.originals if m.rollup is not None else [m.id]))
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
            originals=sorted(originals, key=lambda i: int(i[2:])),
            dropped=dropped,
            salient=salient_items,
            summarizer=name,
            tokens_before=before,
            tokens_after=counter.count(summary),
        ),
    )
