"""What a search returns: :class:`SearchHit`, a moment found, its score and what found it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..model import Moment, MomentId
from .explanation import Explanation

__all__ = ["SearchHit"]


class SearchHit(BaseModel):
    model_config = ConfigDict(frozen=True)

    moment: Moment
    score: float
    #: What found it: each signal's share, rank and raw score, each prior's factor, and
    #: the query coverage step's move (``coverage_before``: its place before the step,
    #: ``coverage_move``: how many places it went up, negative down, ``coverage_added``:
    #: the score it added) and ``spread_prior``, the factor by which spreading the head
    #: over sessions lowered it. ``score`` is the final one: hits come in its order.
    #: Typed (see :class:`.explanation.Explanation`); serialized as a mapping of names to
    #: numbers, and read as one too.
    explain: Explanation = Field(default_factory=Explanation)
    #: The query's words (stems) it has, when query coverage reordered the results.
    covered: list[str] = Field(default_factory=list)
    #: ``active`` (a moment), ``rollup`` (a summary made by compaction) or ``archived``
    #: (from the cold archive, only with ``include_archive``).
    tier: Literal["active", "rollup", "archived"] = "active"
    #: What the fact rules know of it (issue 30), as search shows it: the later moment that
    #: ended it (shown beside it, after it), how many times it was said (its repeats are
    #: folded into it) and the moments it cannot hold together with (shown beside it).
    superseded_by: MomentId | None = None
    said: int = 1
    repeats: list[MomentId] = Field(default_factory=list)
    conflicts_with: list[MomentId] = Field(default_factory=list)
    #: It said when it stops holding (``moment.expires``), and that time has passed (by
    #: the time read): shown, marked, and left out of the current view.
    expired: bool = False

    def fact_note(self) -> str:
        """ "superseded by m_12; said 3 times; conflicting: m_58 vs m_24; expired
        2026-06-06 00:00", or ""."""
        notes = [f"superseded by {self.superseded_by}"] if self.superseded_by else []
        if self.said > 1:
            notes.append(f"said {self.said} times")
        if self.conflicts_with:
            notes.append(f"conflicting: {self.moment.id} vs {', '.join(self.conflicts_with)}")
        if self.expired and self.moment.expires is not None:
            notes.append(f"expired {self.moment.expires:%Y-%m-%d %H:%M}")
        return "; ".join(notes)

    def without_explain(self) -> SearchHit:
        """The hit without what says how it was found (``explain``, ``covered``)."""
        return self.model_copy(update={"explain": Explanation(), "covered": []})
