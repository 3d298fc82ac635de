"""Lossless export and import between any two backends.

Records keep their ids; counters are raised so later ids never collide. The copy is one
transaction on the target: on any error (a conflicting id, a broken source file) nothing is
written. A record that exists in the target with identical content is skipped, so importing
the same export twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import Conflict
from .storage import StorageBackend

BATCH = 500


@dataclass(frozen=True, slots=True)
class CopyReport:
    sessions: int
    moments: int
    skipped: int
    source: str
    target: str


def media_home(location: Path) -> Path:
    """Where the notebook at ``location`` keeps its ``media/``: in the directory itself (a
    home, a YAML notebook) or beside the file (a SQLite ``.db``)."""
    return location if location.is_dir() else location.parent


def copy_notebook(
    source: StorageBackend,
    target: StorageBackend,
    progress: Callable[[int], None] | None = None,
) -> CopyReport:
    """Copy every session, moment and counter of ``source`` into ``target``."""
    sessions = moments = skipped = 0
    with target.atomic():
        for session in source.list_sessions():
            existing = target.get_session(session.id)
            if existing is None:
                target.put_session(session)
                sessions += 1
            elif existing == session:
                skipped += 1
            else:
                raise Conflict(
                    f"session {session.id} exists in {target.location} with other content; "
                    "import into an empty notebook or remove that session first"
                )
        batch = []
        for moment in source.iter_moments(BATCH):
            existing_moment = target.get_moment(moment.id)
            if existing_moment is None:
                batch.append(moment)
            elif existing_moment == moment:
                skipped += 1
            else:
                raise Conflict(
                    f"moment {moment.id} exists in {target.location} with other content; "
                    "import into an empty notebook"
                )
            if len(batch) >= BATCH:
                target.put_moments(batch)
                moments += len(batch)
                batch = []
                if progress is not None:
                    progress(moments)
        if batch:
            target.put_moments(batch)
            moments += len(batch)
        for counter, value in source.counters().items():
            target.raise_counter(counter, value)
    if progress is not None:
        progress(moments)
    return CopyReport(sessions, moments, skipped, source.location, target.location)
