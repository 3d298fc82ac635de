"""What a parser produces: an ingest plan, which the facade records later."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal, get_args

from ..model import MomentDraft

Format = Literal["messages-json", "messages-jsonl", "locomo"]

FORMATS: Final[tuple[str, ...]] = get_args(Format)


@dataclass(frozen=True, slots=True)
class IngestSession:
    """One session to record: its task, start time and moments, in order."""

    task: str
    #: Timezone-aware UTC.
    started: datetime
    drafts: list[MomentDraft]
    #: Where the session came from in the source, for example ``conv-26/session_3``.
    source_id: str | None = None


@dataclass(frozen=True, slots=True)
class IngestPlan:
    """A parsed, fully validated file: the sessions to record, in order."""

    format: Format
    path: str
    sessions: list[IngestSession]

    @property
    def moment_count(self) -> int:
        return sum(len(s.drafts) for s in self.sessions)
