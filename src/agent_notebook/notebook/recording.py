"""Recording moments: drafts checked, secrets masked and modalities stripped, concepts,
retrieval keys and importance derived, media attached, then numbered and written with the
session's stats in one transaction; an ingest records a parsed file the same way."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.enrich import enrich
from ..errors import NotFound
from ..model import (
    Link,
    Moment,
    MomentContent,
    MomentDraft,
    MomentMetadata,
    Relations,
    Session,
    check_session_id,
    now_utc,
)
from ..privacy import audit, modalities
from ..privacy import secrets as secret_masking
from ..storage import StorageBackend
from ..storage.base import activity_of
from .drafts import check_drafts

if TYPE_CHECKING:
    from ..ingest import IngestPlan, IngestReport, IngestSession
    from ..media.store import Attachment, MediaStore
    from .context import NotebookContext
    from .facts import FactKeeper
    from .sessions import Sessions
    from .vectors import Vectors

#: How many recorded moments a session's stored row may lag behind: a record rewrites the
#: session only every so many moments (or when it adds to the audit log); reads count the
#: moments since in (see ``Notebook.get_session``). Each process counts its own records:
#: with several writing to one session the row may lag by this many for each.
SESSION_ROW_LAG = 8
#: Sessions whose records since their row was read a notebook counts, at most (past it,
#: the count starts again: each session's next record reads its row).
SESSIONS_COUNTED = 1024
#: Moments an ingest records per transaction (a stopped ingest, run again, goes on).
INGEST_BATCH = 500

Drafts = Iterable[MomentDraft | dict[str, Any]]


class Recording:
    """What one notebook records (see :meth:`Notebook.record_many`)."""

    def __init__(
        self, context: NotebookContext, sessions: Sessions, vectors: Vectors, facts: FactKeeper
    ) -> None:
        self.context = context
        self.sessions = sessions
        self.vectors = vectors
        self.facts = facts
        #: Moments this notebook recorded in a session since it last read the session's
        #: row (a lower bound of how far the row lags): until it reaches
        #: ``SESSION_ROW_LAG`` a record neither reads nor writes the row.
        self._unread: dict[str, int] = {}

    @property
    def backend(self) -> StorageBackend:
        return self.context.backend

    def check_drafts(self, drafts: Drafts, where: str = "moment") -> list[MomentDraft]:
        return check_drafts(drafts, self.context.config.moments, where)

    def record(
        self,
        session_id: str,
        text: str,
        image: Path | str | None,
        audio: Path | str | None,
        fields: dict[str, Any],
    ) -> Moment:
        media = {
            **({} if image is None else {"image_file": str(image)}),
            **({} if audio is None else {"audio_file": str(audio)}),
        }
        return self.record_many(session_id, [{"text": text, **fields, **media}])[0]

    def record_many(
        self, session_id: str, drafts: Drafts, condensed_history: str | None = None
    ) -> list[Moment]:
        moments = self._record(session_id, drafts, condensed_history)
        self._derive_facts(session_id, moments)
        if moments:
            self.vectors.notify_new()  # vectors are derived: made off the hot path
        return moments

    def _record(
        self, session_id: str, drafts: Drafts, condensed_history: str | None
    ) -> list[Moment]:
        check_session_id(session_id)
        checked = self.check_drafts(drafts)
        if not checked:
            if condensed_history is not None:
                self.sessions.update(session_id, condensed_history=condensed_history)
            return []
        privacy = self.context.config.privacy  # secrets first: no concept or key is made of one
        checked, masked = secret_masking.screen(checked, privacy.secrets)
        stripped = [modalities.strip(d, privacy.modalities) for d in checked]
        # Media are checked and signed first (a corrupt file records nothing, copies nothing).
        attached = [self._attachments(d) for d, _ in stripped]
        now = now_utc()
        prepared = [self._prepare(d, session_id, now) for d, _ in stripped]  # outside the lock
        copied: list[str] = []
        try:
            if any(attached):
                prepared = self._store_media(prepared, attached, copied)
            moments = self._commit(session_id, prepared, masked, stripped, condensed_history)
        except BaseException:
            if copied:  # copied for this record only: gone with it
                self.remove_unused_media(copied)
            raise
        return moments

    def record_in_new_session(
        self, task: str, drafts: Drafts, started: datetime | None
    ) -> tuple[Session, list[Moment]]:
        checked = self.check_drafts(drafts)  # before the session is started for them
        with self.backend.atomic():  # all of it or, on any error, no session either
            session = self.sessions.start(task, started=started)
            moments = self._record(session.id, checked, None)
        self._derive_facts(session.id, moments)
        self.vectors.notify_new()  # once the moments are committed
        return self.sessions.get(session.id), moments

    def _derive_facts(self, session_id: str, moments: list[Moment]) -> None:
        """Decisions, open threads and fact links read from ``moments``: derived, so
        only once the raw moments are committed (see :mod:`.facts`)."""
        if moments and self.context.config.facts.enabled:
            self.facts.after_record(session_id, moments)

    def remove_unused_media(self, names: list[str]) -> None:
        """Remove the media files among ``names`` that no moment refers to."""
        from ..media.store import media_paths_of

        in_use = media_paths_of(self.backend.iter_moments())
        self.media_store().remove_unused(names, in_use)

    def _commit(
        self,
        session_id: str,
        prepared: list[Moment],
        masked: dict[int, list[str]],
        stripped: list[tuple[MomentDraft, list[str]]],
        condensed_history: str | None = None,
    ) -> list[Moment]:
        dropped = list(dict.fromkeys(name for _, names in stripped for name in names))
        unread = self._unread.get(session_id)
        # The session's stats are derivable from its moments, so its row is read and
        # rewritten only now and then (fewer statements and pages per record), or when the
        # audit log or the condensed history changes.
        quick = (
            unread is not None
            and unread + len(prepared) < SESSION_ROW_LAG
            and not masked
            and not dropped
            and condensed_history is None
        )
        with self.backend.atomic():
            if quick:
                self.sessions.require(session_id)
            else:
                session, lagging = self.sessions.with_lag(session_id)
            first = self.backend.next_number("moment", len(prepared))
            moments = [
                m.model_copy(update={"id": f"m_{first + i}"}) for i, m in enumerate(prepared)
            ]
            self.backend.add_moments(moments)
            if parents := self._adopt_children(moments):
                self.backend.put_moments(parents)
            if not quick:
                written = self._count_in(
                    session, lagging, moments, masked, dropped, condensed_history
                )
        if quick:
            self._unread[session_id] = (unread or 0) + len(moments)
        else:
            if len(self._unread) >= SESSIONS_COUNTED:
                self._unread.clear()
            self._unread[session_id] = 0 if written else lagging + len(moments)
        return moments

    def _count_in(
        self,
        session: Session,
        lagging: int,
        moments: list[Moment],
        masked: dict[int, list[str]],
        dropped: list[str],
        condensed_history: str | None,
    ) -> bool:
        """Count ``moments`` into ``session`` (its row read in this transaction, ``lagging``
        moments behind) with what the audit log says of them; write the row when it changed
        or lags ``SESSION_ROW_LAG`` moments. Whether it was written."""
        self.sessions.count(session, [activity_of(m) for m in moments])
        for i, kinds in masked.items():  # the audit log says what, never the secret
            audit.note(session, secret_masking.audit_text(kinds, moments[i].id))
        for name in dropped:
            audit.note(session, modalities.audit_text(name), once=True)
        changed = condensed_history is not None and (
            condensed_history != session.context.condensed_history
        )
        if changed:
            session.context.condensed_history = condensed_history or ""
        if changed or masked or dropped or lagging + len(moments) >= SESSION_ROW_LAG:
            self.backend.put_session(session)
            return True
        return False

    def media_store(self) -> MediaStore:
        return self.context.media_store()

    def _attachments(self, draft: MomentDraft) -> list[Attachment]:
        from ..media.store import attachment_of

        context = self.context
        embedder = (
            context.multimodal_embedder if context.config.privacy.modalities.embeddings else None
        )
        found = []  # the errors name the file
        if draft.image_file is not None:
            found.append(attachment_of(draft.image_file, "image", embedder))
        if draft.audio_file is not None:
            found.append(attachment_of(draft.audio_file, "audio", embedder))
        if found and context.home is None:
            self.media_store()  # says why not
        return found

    def _store_media(
        self, prepared: list[Moment], attached: list[list[Attachment]], copied: list[str]
    ) -> list[Moment]:
        """``prepared`` with their files copied in (the new copies listed in ``copied``)."""
        store = self.media_store()
        done = []
        for moment, attachments in zip(prepared, attached, strict=True):
            update: dict[str, Any] = {}
            content: dict[str, Any] = {}
            for a in attachments:
                name, new = store.put(a.source)
                if new:
                    copied.append(name)
                update[f"{a.kind}_path"] = name
                content[f"{a.kind}_signature"] = a.signature
                if a.embedding is not None and "multimodal_embedding" not in content:
                    content["multimodal_embedding"] = a.embedding
            update["content"] = moment.content.model_copy(update=content)
            done.append(moment.model_copy(update=update) if attachments else moment)
        return done

    def _prepare(self, draft: MomentDraft, session_id: str, now: datetime) -> Moment:
        said = draft.timestamp or now
        derived = enrich(
            draft.text, role=draft.role, has_actions=bool(draft.actions), when=said.date()
        )
        # The dates it speaks of are concepts too, so search finds it by them.
        concepts = list(dict.fromkeys([*derived.concepts, *derived.dates]))
        return Moment(
            id="m_1",  # placeholder, numbered inside the transaction
            session=session_id,
            timestamp=said,
            role=draft.role,
            speaker=draft.speaker,
            content=MomentContent(text=draft.text),
            metadata=MomentMetadata(
                concepts=concepts if draft.concepts is None else draft.concepts,
                retrieval_keys=(
                    derived.retrieval_keys if draft.retrieval_keys is None else draft.retrieval_keys
                ),
                importance=derived.importance if draft.importance is None else draft.importance,
                **({} if draft.decay_rate is None else {"decay_rate": draft.decay_rate}),
                pinned=draft.pinned,
            ),
            relations=Relations(parent=draft.parent, links=draft.links),
            actions=draft.actions,
            source_id=draft.source_id,
            expires=draft.expires,
        )

    def _adopt_children(self, moments: Sequence[Moment]) -> list[Moment]:
        """Add each new moment to its parent's ``children``; return the changed parents."""
        parents: dict[str, Moment] = {}
        for m in moments:
            pid = m.relations.parent
            if pid is None:
                continue
            parent = parents.get(pid) or self.backend.get_moment(pid)
            if parent is None:
                raise NotFound(f"moment {m.id} names parent {pid}, which does not exist")
            parent.relations.children.append(m.id)
            parents[pid] = parent
        return list(parents.values())

    # -- ingest -----------------------------------------------------------------------------

    def ingest(
        self, plan: IngestPlan, progress: Callable[[int], None] | None = None
    ) -> IngestReport:
        """Record a parsed file: a session for each of the plan's sessions, linked to its
        source (a LoCoMo session, the chat log's file). Idempotent: the moments an earlier
        ingest of the same source recorded (same ``source_id``) are skipped and counted, so
        a file that grew adds only its new turns. Written in transactions of
        ``INGEST_BATCH`` moments: an ingest stopped half-way, run again, adds what is
        missing. Every draft is checked before the first is recorded, so a bad one records
        nothing. ``progress`` gets the moments done, recorded or skipped. The new moments
        wait for a vector like recorded ones."""
        from ..ingest import IngestReport, held_sources

        for part in plan.sessions:
            self.check_drafts(part.drafts, f"{part.task}: moment")
        held = held_sources(self.backend, {p.source_id for p in plan.sessions if p.source_id})
        touched: dict[str, None] = {}
        created = added = skipped = 0
        for part in plan.sessions:
            known = held.get(part.source_id or "")
            seen = known.source_ids if known is not None else set()
            new = [d for d in part.drafts if d.source_id is None or d.source_id not in seen]
            skipped += len(part.drafts) - len(new)
            if progress is not None and len(new) < len(part.drafts):
                progress(len(part.drafts) - len(new))
            session = known.latest if known is not None else None
            for start in range(0, len(new), INGEST_BATCH):
                batch = new[start : start + INGEST_BATCH]
                with self.backend.atomic():
                    if session is None:
                        session = self._start_ingested(part)
                        created += 1
                        if known is not None:
                            known.sessions.append(session)
                    self.record_many(session.id, batch)
                seen.update(d.source_id for d in batch if d.source_id is not None)
                added += len(batch)
                touched[session.id] = None
                if progress is not None:
                    progress(len(batch))
        return IngestReport(
            path=plan.path,
            format=plan.format,
            sessions=[self.sessions.get(sid) for sid in touched],
            sessions_created=created,
            moments_added=added,
            moments_skipped=skipped,
        )

    def _start_ingested(self, part: IngestSession) -> Session:
        from ..ingest import SOURCE_RELATION

        session = self.sessions.start(part.task, started=part.started)
        if part.source_id is None:
            return session
        linked = session.model_copy(
            update={"links": [Link(target=part.source_id, relation=SOURCE_RELATION)]}
        )
        self.backend.put_session(linked)
        return linked
