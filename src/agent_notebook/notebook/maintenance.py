"""Upkeep that removes: deleting a session whole, redacting a moment and forgetting a
concept (under compaction's lock, see :mod:`.redaction`), and the notebook's stats."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..core import files
from ..core.files import exclusive_lock as write_lock_file
from ..model import THREADS_NAMESPACE, Moment, NotebookStats, check_moment_id, now_utc
from .archive import drop_archived
from .checks import aware, required

if TYPE_CHECKING:
    from .forgetting import PolicyReport
    from .reach import Reach
    from .recording import Recording
    from .redaction import ForgetReport


@dataclass(frozen=True, slots=True)
class SessionDeletion:
    """What :meth:`Notebook.delete_session` removed."""

    session: str
    moments: int
    archived: int
    media: list[str]
    threads: list[str]


class Maintenance:
    """Deletion, redaction and stats of one notebook (see :meth:`Notebook.redact`)."""

    def __init__(self, reach: Reach, recording: Recording) -> None:
        self.reach = reach
        self.recording = recording
        self.sessions = recording.sessions

    def delete_session(self, session_id: str) -> SessionDeletion:
        """Delete a session for good: its record, its moments with their full-text rows,
        concept-index entries and vectors, its cold-archive records, the media files no
        other moment uses, and its threads (their thread-map entries, session notebooks
        and checkpoints). Links and parents elsewhere that name it are left as they are."""
        from ..langgraph.stores import store_items, write_lock
        from ..media.store import media_paths_of

        reach, backend = self.reach, self.reach.context.backend
        store = reach.langgraph.store
        session = self.sessions.get(session_id)  # NotFound for an unknown one
        moments = backend.list_moments(session.id)
        archived = [e for e in backend.list_archived() if e.session == session.id]
        threads = [
            item.key
            for item in store_items(store, THREADS_NAMESPACE)
            if item.value.get("session_id") == session.id
        ]
        threads += [session.id]  # a thread may be named by its session
        with backend.atomic():
            backend.delete_session(session.id)
        reach.facts.forget()  # what its fact engine read goes with it
        reach.vectors.forget([m.number for m in moments] + [e.number for e in archived])
        gone = media_paths_of(moments)
        if gone:
            self.recording.remove_unused_media(sorted(gone))
        if archived and reach.context.archive_dir is not None:
            drop_archived(reach.archive.cold_archive(), archived)
        with write_lock(store):
            for thread in threads:
                store.delete(THREADS_NAMESPACE, thread)
                for item in list(store_items(store, ("session", thread))):
                    store.delete(item.namespace, item.key)
        for thread in threads:
            reach.langgraph.checkpointer.delete_thread(thread)
        return SessionDeletion(
            session=session.id,
            moments=len(moments),
            archived=len(archived),
            media=sorted(gone),
            threads=threads[:-1],
        )

    def redact(self, moment_id: str, reason: str, who: str) -> Moment:
        """Remove a moment's content (text, concepts, retrieval keys, actions) for good,
        leaving a tombstone that says who, when and why; the session's audit log records it
        (without the text). The text also leaves the rollups, the cold archive, the session
        notebooks, condensed histories and checkpoints, and the files are purged; see
        :mod:`.redaction`. Search never returns it again, by words or by meaning."""
        from .redaction import Redaction

        check_moment_id(moment_id)
        required(reason, "redact: the reason", "why the moment is redacted (for the tombstone)")
        with self._redaction_lock():
            return Redaction(self.reach, reason, who).redact(moment_id)

    def redact_moments(self, moment_ids: Sequence[str], reason: str, who: str) -> None:
        """:meth:`redact` of several moments (active originals) in one pass: one scan, one
        purge of the files, each noted in its session's audit log."""
        from .redaction import Redaction

        for moment_id in moment_ids:
            check_moment_id(moment_id)
        required(reason, "redact: the reason", "why the moments are redacted (for the tombstones)")
        with self._redaction_lock():
            moments = self.reach.context.backend.get_moments(list(moment_ids))
            Redaction(self.reach, reason, who).redact_all(moments, reason)

    def forget(
        self, concept: str, reason: str, who: str, dry_run: bool, words_only: bool = False
    ) -> ForgetReport:
        from .redaction import Redaction

        with self._redaction_lock():
            return Redaction(self.reach, reason, who).forget(
                concept, dry_run=dry_run, words_only=words_only
            )

    def forget_by_policy(
        self,
        older_than: str | timedelta | None,
        inactive_for: str | timedelta | None,
        keep_top: int | None,
        session_id: str | None,
        reason: str,
        who: str,
        dry_run: bool,
        now: datetime | None,
    ) -> PolicyReport:
        from .forgetting import choose, parse_duration
        from .redaction import Redaction

        older = parse_duration(older_than, "forget --older-than")
        inactive = parse_duration(inactive_for, "forget --inactive-for")
        at = now_utc() if now is None else aware(now, "forget: now")
        backend = self.reach.context.backend
        sessions = [self.sessions.get(session_id)] if session_id else self.sessions.list(0, None)
        with self._redaction_lock():
            moments = backend.list_moments(sessions[0].id) if session_id else backend.iter_moments()
            report = choose(moments, sessions, at, older, inactive, keep_top)
            report.dry_run = dry_run
            if not dry_run and report.moments:
                chosen = backend.get_moments([c.id for c in report.moments])
                Redaction(self.reach, reason or report.policy, who).redact_all(
                    chosen, report.policy
                )
        return report

    def _redaction_lock(self) -> AbstractContextManager[None]:
        """Compaction's lock: a moment is not archived while it is being redacted."""
        archive_dir = self.reach.context.archive_dir
        if archive_dir is None:
            return nullcontext()
        files.ensure_private_dir(archive_dir)
        return write_lock_file(archive_dir / ".lock", 30.0)

    def stats(self) -> NotebookStats:
        backend = self.reach.context.backend
        sessions = self.sessions.list(0, None)
        firsts = [s.stats.first_activity for s in sessions if s.stats.first_activity]
        lasts = [s.stats.last_activity for s in sessions if s.stats.last_activity]
        return NotebookStats(
            sessions=len(sessions),
            moments=backend.count_moments(),
            concepts=backend.count_concepts(),
            tokens=sum(s.stats.tokens for s in sessions),
            bytes=sum(s.stats.bytes for s in sessions),
            first_activity=min(firsts, default=None),
            last_activity=max(lasts, default=None),
            backend=f"{backend.capabilities.name} at {backend.location}",
        )
