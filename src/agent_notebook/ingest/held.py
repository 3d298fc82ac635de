"""What a notebook already holds of a source, so that ingesting a file again adds only
what is new (idempotent ingest; a file that grew adds its new turns).

A source is what an ingested session is linked to (``relation="source"``): a LoCoMo
session (``conv-26/session_3``) or the file of a chat log (its ``file://`` URI). Within a
source, a moment is known by its ``source_id`` (a ``dia_id``, a message id or position).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import Session
from ..storage import StorageBackend

SOURCE_RELATION = "source"


@dataclass(slots=True)
class HeldSource:
    """The sessions linked to one source (oldest first) and the source ids they hold."""

    sessions: list[Session] = field(default_factory=list)
    source_ids: set[str] = field(default_factory=set)

    @property
    def latest(self) -> Session | None:
        """Where new turns of the source go."""
        return self.sessions[-1] if self.sessions else None


def source_of(session: Session) -> str | None:
    """The source a session was ingested from, if any."""
    for link in session.links:
        if link.relation == SOURCE_RELATION:
            return link.target
    return None


def held_sources(backend: StorageBackend, sources: set[str]) -> dict[str, HeldSource]:
    """What ``backend`` holds of each of ``sources`` (an empty entry for one it lacks).

    Reads the session list once and the moments of the matching sessions only. Moments
    moved to the cold archive by compaction are not counted (their source ids are not
    kept in the active set).
    """
    held = {source: HeldSource() for source in sources}
    for session in backend.list_sessions():
        source = source_of(session)
        if source is None or source not in held:
            continue
        entry = held[source]
        entry.sessions.append(session)
        offset = 0
        while page := backend.list_moments(session.id, offset=offset, limit=500):
            entry.source_ids.update(m.source_id for m in page if m.source_id is not None)
            offset += len(page)
    return held
