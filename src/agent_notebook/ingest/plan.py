"""What a parser produces: an ingest plan, which the facade records later."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal, get_args

from pydantic import BaseModel, ConfigDict

from ..model import MomentDraft, Session

Format = Literal["messages-json", "messages-jsonl", "locomo"]

FORMATS: Final[tuple[str, ...]] = get_args(Format)
#: What each format is, for the errors that say which formats ingest reads.
FORMAT_HELP: Final = (
    'messages-json (a JSON list of {"role": ..., "content": ...} messages, or an object '
    'with "messages"), messages-jsonl (one such message object per line, .jsonl) or '
    "locomo (a list of LoCoMo conversations)"
)


@dataclass(frozen=True, slots=True)
class IngestSession:
    """One session to record: its task, start time and moments, in order."""

    task: str
    #: Timezone-aware UTC.
    started: datetime
    drafts: list[MomentDraft]
    #: Where the session came from: a LoCoMo session (``conv-26/session_3``) or the file of
    #: a chat log (``file:///home/ana/chat.jsonl``). Ingesting it again adds only what is new.
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


class IngestReport(BaseModel):
    """What an ingest did: the sessions it created or added to, in the plan's order, and
    how many moments it recorded and skipped (already in the notebook from an earlier
    ingest of the same source)."""

    model_config = ConfigDict(frozen=True)

    path: str
    format: Format
    sessions: list[Session]
    sessions_created: int
    moments_added: int
    moments_skipped: int
