"""What a rollup keeps word for word, and what fades to one line (issue 41).

Compaction drops detail, never what an agent still needs. A rollup keeps, word for word and
outside its budget, the original moments that still hold: standing decisions, open items,
current facts, both sides of a conflict, pinned or important moments. What no longer holds
(a replaced value or decision, a closed item, an expired fact) is the first detail to fade:
one line each ("venue: Lakeside Pavilion → Casa Lucia, 25 Nov"), on record rather than
dropped.

A :class:`Keeper` says which is which for the originals under one rollup. The facts layer
knows best (decisions, open items, supersessions): the notebook gives the compactor a keeper
that reads them (:mod:`agent_notebook.notebook.keeping`). :class:`LinkKeeper`, the one used
without it, reads what the moments themselves carry: pins, importance, the fact links.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final, Protocol

from ..model import KeptKind, Moment

__all__ = ["KEPT_TAGS", "KeepList", "Keeper", "LinkKeeper", "day_of", "short_text"]

#: How a kept line starts in a rollup's text, by why it is kept ("" for an important one).
KEPT_TAGS: Final[dict[KeptKind, str]] = {
    "decision": "decided: ",
    "open": "open: ",
    "fact": "current: ",
    "conflict": "in conflict: ",
    "pinned": "pinned: ",
    "important": "",
}
#: A one-line fade quotes at most this many characters of a text.
SHORT: Final = 90
_DECISION: Final = re.compile(
    r"\b(?:decid(?:e|ed|es|ing)|decision|agreed|from now on|correction|i meant|"
    r"that's wrong|not what i)\b",
    re.IGNORECASE,
)


@dataclass
class KeepList:
    """For the originals under one rollup: the moments kept word for word and why, and the
    one line each faded one is kept as (moment id -> line)."""

    kept: dict[str, KeptKind] = field(default_factory=dict)
    faded: dict[str, str] = field(default_factory=dict)

    def keep(self, moment_id: str, kind: KeptKind) -> None:
        """Keep ``moment_id`` whole (a faded line for it is dropped: it holds after all)."""
        self.faded.pop(moment_id, None)
        self.kept.setdefault(moment_id, kind)

    def fade(self, moment_id: str, line: str) -> None:
        """Fade ``moment_id`` to ``line``, unless something keeps it whole."""
        if moment_id not in self.kept:
            self.faded.setdefault(moment_id, line)


class Keeper(Protocol):
    def keep_list(self, originals: Sequence[Moment], now: datetime) -> KeepList: ...


def day_of(when: datetime) -> str:
    """``25 Nov 2026``: how a faded line dates what ended it."""
    return f"{when.day} {when:%b %Y}"


def short_text(text: str, limit: int = SHORT) -> str:
    """``text`` on one line, cut at a word to about ``limit`` characters."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


class LinkKeeper:
    """What the moments carry themselves: pinned ones and those of importance
    ``keep_whole_importance`` or more are kept; a fact a later moment replaced fades to one
    line, the one that replaced it (if here) is kept as current; both sides of a conflict
    are kept; an expired fact fades; a sentence that says a decision was taken is kept."""

    def __init__(self, keep_whole_importance: float) -> None:
        self.keep_whole_importance = keep_whole_importance

    def keep_list(self, originals: Sequence[Moment], now: datetime) -> KeepList:
        found = KeepList()
        here = {m.id: m for m in originals}
        for m in originals:
            if m.rollup is not None or m.redacted is not None:
                continue
            links = dict(_links(m))
            if (later := links.get("superseded_by")) is not None or m.valid_until is not None:
                found.fade(m.id, self.replaced_line(m, here.get(later or "")))
                continue
            if m.expires is not None and m.expires <= now:
                found.fade(m.id, f"until {day_of(m.expires)}: {short_text(_said(m))}")
                continue
            if m.pinned:
                found.keep(m.id, "pinned")
            elif "conflicts_with" in links:
                found.keep(m.id, "conflict")
            elif m.metadata.importance >= self.keep_whole_importance:
                found.keep(m.id, "important")
            elif _DECISION.search(m.content.text):
                found.keep(m.id, "decision")
        for m in originals:  # a fact that replaced one of these holds now
            for relation, target in _links(m):
                successor = here.get(target)
                if (
                    relation == "superseded_by"
                    and successor is not None
                    and successor.holds_at(now)
                ):
                    found.keep(successor.id, "fact")
        return found

    def replaced_line(self, old: Moment, new: Moment | None) -> str:
        """The one line a replaced fact fades to: what it said, and what replaced it."""
        ended = f", {day_of(old.valid_until)}" if old.valid_until is not None else ""
        target = dict(_links(old)).get("superseded_by")
        after = short_text(_said(new), SHORT // 2) if new is not None else (target or "later")
        return f"replaced: {short_text(_said(old), SHORT // 2)} → {after}{ended}"


def _said(moment: Moment) -> str:
    speaker = moment.speaker.strip()
    text = moment.content.text.strip()
    return text if not speaker or text.startswith(speaker) else f"{speaker}: {text}"


def _links(moment: Moment) -> list[tuple[str, str]]:
    return [
        (relation, target)
        for link in moment.relations.links
        for relation, _, target in [link.partition(":")]
        if target
    ]
