"""The owner's API: :class:`Notebook`, the long-term notebook of seed 002.

Front ends (CLI, HTTP, MCP, graph nodes) call this facade and nothing below it. It validates
input and hands each call to a part, which receives the notebook's
:class:`.context.NotebookContext` and the sibling parts it needs, never the facade. The
everyday verbs are methods here; five groups are parts reached by name: ``nb.facts``
(:mod:`.owner_facts`), ``nb.archive`` (:mod:`.archive`), ``nb.transfer`` (:mod:`.transfer`),
``nb.vectors`` (:mod:`.vectors`) and ``nb.langgraph`` (:mod:`.langgraph_state`); their flat
names (``nb.compact``…) stay as aliases for a release (:mod:`.aliases`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar

from .. import config as cfg
from ..core import files
from ..core.tokens import DEFAULT_COUNTER, TokenCounter
from ..errors import InvalidInput, NotebookError
from ..model import (
    ConceptEntry,
    Decision,
    Escalation,
    Link,
    Moment,
    MomentDraft,
    NotebookStats,
    PendingItem,
    Session,
    TaskStatus,
)
from ..search.request import Mode
from ..search.slice import Format as SliceFormat
from ..search.slice import Slice
from ..storage import StorageBackend
from .aliases import Alias
from .archive import Archive
from .context import NotebookContext
from .facts import FactKeeper
from .finding import Finding, SearchResults
from .langgraph_state import LangGraphState
from .maintenance import Maintenance, SessionDeletion
from .opening import closed_on_error, open_storage
from .owner_facts import OwnerFacts
from .reach import Reach
from .recording import Recording
from .sessions import SessionOrder, Sessions, WriteBackKind
from .transfer import Transfer
from .turns import TurnWork
from .vectors import Vectors, checked_embedder

# LangChain, LangGraph (stores, checkpoints, summarizers), the embedder, media and the
# session notebook load when first used: a command that reads the notebook needs none.
if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import BaseStore, IndexConfig

    from ..embed import Embedder
    from ..embed.multimodal import MultimodalEmbedder
    from ..ingest import IngestPlan, IngestReport
    from ..media.store import MediaStore
    from ..privacy.guest_scope import GuestScope
    from ..privacy.tokens import Tokens
    from ..search.semantic import SemanticIndex
    from ..session import SessionNotebook
    from .forgetting import PolicyReport
    from .redaction import ForgetReport

#: How long close() lets the worker embed the last turn's moments (a big ingest's rest waits).
CLOSE_EMBED_WAIT_S = 2.0

Progress = Callable[[int], None]
log = logging.getLogger(__name__)
_T = TypeVar("_T")


class Notebook:
    """A long-term notebook over any :class:`StorageBackend`.

    >>> nb = Notebook.open("/tmp/my-notebook")        # doctest: +SKIP
    >>> s = nb.start_session("Plan the trip")          # doctest: +SKIP
    >>> nb.record(s.id, "Book the train to Lyon for 7 June")  # doctest: +SKIP
    """

    def __init__(
        self,
        backend: StorageBackend,
        *,
        home: Path | None = None,
        token_counter: TokenCounter = DEFAULT_COUNTER,
        config: cfg.NotebookConfig | None = None,
        embedder: Embedder | Literal["default"] | None = "default",
        background_embedding: bool = True,
        multimodal_embedder: MultimodalEmbedder | None = None,
        store_index: IndexConfig | Literal["default"] | None = "default",
    ) -> None:
        """``embedder``: ``"default"`` (``search.embedder``), ``None`` (lexical search) or
        any :class:`Embedder`; with ``background_embedding`` new moments are embedded on a
        worker thread, else at :meth:`reindex`. ``multimodal_embedder`` signs images and
        audio; ``store_index`` is LangGraph's ``index`` config for :attr:`store` (see
        :mod:`agent_notebook.langgraph.store.index`)."""
        conf = config or cfg.NotebookConfig()
        context = NotebookContext(backend, conf, home, token_counter, multimodal_embedder)
        self._context = context
        self.backend, self.home, self.tokens = backend, home, token_counter
        self.multimodal_embedder = multimodal_embedder
        self._in_use: files.UseLock | None = None  # held by Notebook.open (see use_lock)
        self.vectors = Vectors(context, checked_embedder(embedder), background_embedding)
        self._turns = TurnWork(backend, self.vectors)
        self._sessions = Sessions(context)
        paraphrases = self.vectors.paraphrase_vectors if conf.facts.paraphrases else None
        self._keeper = FactKeeper(backend, conf.facts.window, paraphrases)  # notebook/facts.py
        self._recording = Recording(context, self._sessions, self.vectors, self._keeper)
        self.archive = Archive(context, self._sessions, self.vectors)
        self.langgraph = LangGraphState(context, self._sessions, self.vectors, store_index)
        self._finding = Finding(context, self._sessions, self.vectors, self.archive)
        self.transfer = Transfer(context, self._recording, self.archive, self.langgraph)
        self.facts = OwnerFacts(self._sessions, self._keeper)
        reach = Reach(context, self.vectors, self._keeper, self.archive, self.langgraph)
        self._maintenance = Maintenance(reach, self._recording)

    @classmethod
    def open(
        cls,
        home: Path | str | None = None,
        *,
        backend: str | None = None,
        create: bool = True,
        embedder: Embedder | Literal["default"] | None = "default",
        background_embedding: bool = True,
        store_index: IndexConfig | Literal["default"] | None = "default",
    ) -> Self:
        """Open (with ``create``, make) the notebook in ``home``, a folder or a
        ``postgresql://`` URL (see :mod:`agent_notebook.config`); the rest as for the class."""
        root, conf, storage, in_use = open_storage(home, backend, create)
        with closed_on_error(storage, in_use):
            notebook = cls(
                storage,
                home=root,
                config=conf,
                embedder=embedder,
                store_index=store_index,
                background_embedding=background_embedding,
            )
        notebook._in_use = in_use
        return notebook

    @property
    def config(self) -> cfg.NotebookConfig:
        """The settings (``config.yaml``); assigning new ones takes effect at once."""
        return self._context.config

    @config.setter
    def config(self, config: cfg.NotebookConfig) -> None:
        self._context.config = config

    @property
    def location(self) -> str:
        """Where the records live, for messages: a file, a directory or a URL (no password)."""
        return self.backend.location

    # -- lifecycle and the work after a chat turn (:mod:`.turns`) ----------------------------

    def after_turn(self, work: Callable[[], object]) -> Future[object]:
        """Run derived work (a session-notebook update) after the turn, off the hot path, in
        order; :meth:`close` and :meth:`drain` wait for it (:meth:`.turns.TurnWork.after_turn`)."""
        return self._turns.after_turn(work)

    def turn_running(self) -> AbstractContextManager[None]:
        """Enter for the length of a chat turn: the embedding worker and the turn's
        :meth:`after_turn` work wait until it ends (see :meth:`.turns.TurnWork.turn_running`)."""
        return self._turns.turn_running()

    def settle(self) -> None:
        """Catch up what is derived lazily from the moments recorded so far (the backend's
        indexes, the sessions' stored stats) now rather than on a later read."""
        self.backend.settle()
        self._sessions.settle()

    def drain(self) -> None:
        """Wait until the :meth:`after_turn` work handed over so far (not held by a turn) is done."""
        self._turns.drain()

    def close(self) -> None:
        self._turns.close()
        self.vectors.close(CLOSE_EMBED_WAIT_S)
        self.langgraph.close()
        try:
            self.settle()
        except NotebookError as err:  # derived data: the next open catches up all the same
            log.warning("closing without catching up the derived records: %s", err)
        self.backend.close()
        if self._in_use is not None:
            self._in_use.release()
            self._in_use = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def check_reachable(self) -> None:
        """Raise :class:`~agent_notebook.errors.StorageError` when the notebook's database
        cannot be reached now (a file notebook always can); the servers' health check."""
        self.backend.ping()

    def access_tokens(self) -> Tokens:
        """The notebook's API tokens: in its database (PostgreSQL), else in its home's files."""
        from ..privacy.tokens import tokens_of

        if self.home is None:
            raise InvalidInput("API tokens need a notebook with a home (Notebook.open(home))")
        return tokens_of(self.home, self.backend)

    # -- a LangGraph thread's session and session notebook (more in ``nb.langgraph``) ---------

    def thread_session(self, thread_id: str) -> str:
        """The long-term session of a LangGraph thread: the thread id when it names one, else
        the session started for it on first use (:meth:`.langgraph_state.LangGraphState.thread_session`)."""
        return self.langgraph.thread_session(thread_id)

    def session_notebook(self, thread_id: str) -> SessionNotebook:
        """The session notebook of ``thread_id`` in :attr:`store`, condensing into this one."""
        from ..session import SessionNotebook

        return SessionNotebook(
            self.langgraph.store, thread_id, notebook=self, budgets=self.config.session_notebook
        )

    # -- sessions and their audit log (:mod:`.sessions`) --------------------------------------

    def start_session(self, task: str = "", *, started: datetime | None = None) -> Session:
        """Start a session; its id is ``s_<day it started>_<NNN>``."""
        return self._sessions.start(task, started=started)

    def get_session(self, session_id: str) -> Session:
        """The session, its stats and recent moments counting every moment recorded."""
        return self._sessions.get(session_id)

    def has_session(self, session_id: str) -> bool:
        """Whether ``session_id`` names a session of this notebook (False for any other
        text, such as a thread's own name)."""
        return self._sessions.exists(session_id)

    def sessions(
        self,
        offset: int = 0,
        limit: int | None = None,
        *,
        text: str = "",
        status: TaskStatus | str | None = None,
        order: SessionOrder = "started",
    ) -> list[Session]:
        """Sessions, oldest first; with ``text``, ``status`` or another ``order``, those
        matching, sorted (see :meth:`.sessions.Sessions.find`)."""
        if text.strip() or status or order != "started":
            return self._sessions.find(text, status, order, offset, limit)
        return self._sessions.list(offset, limit)

    def session_count(self) -> int:
        """How many sessions the notebook holds."""
        return self.backend.count_sessions()

    def update_session(
        self,
        session_id: str,
        *,
        task: str | None = None,
        task_status: TaskStatus | str | None = None,
        condensed_history: str | None = None,
    ) -> Session:
        return self._sessions.update(
            session_id, task=task, task_status=task_status, condensed_history=condensed_history
        )

    def write_if_match(
        self, session_id: str, if_match: str | None, write: Callable[[], _T]
    ) -> tuple[_T, str]:
        """Run ``write`` in one transaction with the check of ``if_match``, the session's
        ETag (:func:`.etags.etag_of`) as the caller read it (:class:`Conflict` when it
        changed since; ``None`` or ``*``: no check); returns its result and the new ETag."""
        return self._sessions.write_if_match(session_id, if_match, write)

    def decide(self, session_id: str, what: str, why: str = "", who: str = "owner") -> Decision:
        """Append a decision to the session's audit log."""
        return self._sessions.decide(session_id, what, why, who)

    def open_pending(self, session_id: str, what: str) -> PendingItem:
        return self._sessions.open_pending(session_id, what)

    def close_pending(self, session_id: str, pending_id: str, resolution: str = "") -> PendingItem:
        return self._sessions.close_pending(session_id, pending_id, resolution)

    def escalate(self, session_id: str, to: str, why: str = "", slice: str = "") -> Escalation:
        """Record a hand-off to a bigger agent, with the slice it was given."""
        return self._sessions.escalate(session_id, to, why, slice)

    def resolve_escalation(self, session_id: str, escalation_id: str, outcome: str) -> Escalation:
        return self._sessions.resolve_escalation(session_id, escalation_id, outcome)

    def link(self, session_id: str, target: str, relation: str = "related", note: str = "") -> Link:
        """Cross-reference a session, a moment (checked to exist) or any URI from a session."""
        return self._sessions.link(session_id, target, relation, note)

    def write_back(
        self,
        guest: str | None,
        session_id: str,
        kind: WriteBackKind,
        text: str,
        *,
        why: str = "",
        escalation_id: str | None = None,
    ) -> Decision:
        """A guest's one write: a decision, a new pending item, or the outcome of an
        escalation; each is entered in the session's audit log under ``guest:<name>``
        (``owner`` with no guest). Returns that audit entry."""
        return self._sessions.write_back(
            guest, session_id, kind, text, why=why, escalation_id=escalation_id
        )

    # -- recording (:mod:`.recording`) ---------------------------------------------------------

    def record(
        self,
        session_id: str,
        text: str = "",
        *,
        image: Path | str | None = None,
        audio: Path | str | None = None,
        **fields: Any,
    ) -> Moment:
        """Record one moment; ``fields`` are those of :class:`MomentDraft`. ``image`` or
        ``audio`` attaches a file (PNG, JPEG, WebP; WAV, FLAC, OGG, MP3 where a decoder is
        installed): it is signed, copied into ``<home>/media/`` and the moment's
        ``image_path`` / ``audio_path`` points at the copy."""
        return self._recording.record(session_id, text, image, audio, fields)

    def record_many(
        self,
        session_id: str,
        drafts: Iterable[MomentDraft | dict[str, Any]],
        *,
        condensed_history: str | None = None,
    ) -> list[Moment]:
        """Record moments in one transaction: all of them or, on any error, none. Each
        draft is checked first (:meth:`check_drafts`). ``condensed_history``: the session's
        new condensed history, written in the same transaction (as :meth:`update_session`
        would; the chat graph's turn that compacts its thread commits once)."""
        return self._recording.record_many(session_id, drafts, condensed_history)

    def record_in_new_session(
        self,
        task: str,
        drafts: Iterable[MomentDraft | dict[str, Any]],
        *,
        started: datetime | None = None,
    ) -> tuple[Session, list[Moment]]:
        """Start a session for ``task`` and record ``drafts`` in it, in one transaction:
        the drafts are checked before the session is started, and on any error there is
        neither the session nor a moment. Returns the session and the moments."""
        return self._recording.record_in_new_session(task, drafts, started)

    def check_drafts(
        self, drafts: Iterable[MomentDraft | dict[str, Any]], where: str = "moment"
    ) -> list[MomentDraft]:
        """The drafts as :meth:`record_many` takes them, or :class:`InvalidInput` naming the
        first bad one (see :mod:`.drafts`)."""
        return self._recording.check_drafts(drafts, where)

    def media_store(self) -> MediaStore:
        """``<home>/media/``, where attached images and audio are kept."""
        return self._context.media_store()

    def ingest(self, plan: IngestPlan, progress: Progress | None = None) -> IngestReport:
        """Record a parsed file (:func:`agent_notebook.ingest.parse_file`), a session for each
        of its sessions; idempotent, and safe to stop (see :meth:`.recording.Recording.ingest`)."""
        return self._recording.ingest(plan, progress)

    # -- reading and search (:mod:`.finding`) --------------------------------------------------

    def get_moment(self, moment_id: str) -> Moment:
        return self._finding.get_moment(moment_id)

    def moments(
        self, session_id: str | None = None, offset: int = 0, limit: int | None = None
    ) -> list[Moment]:
        return self._finding.moments(session_id, offset, limit)

    def moments_by_source(
        self, session_id: str, source_ids: Collection[str] | None = None
    ) -> dict[str, Moment]:
        """The session's active, unredacted moments by the id their source gave them
        (``source_id``), the latest of each, for those of ``source_ids`` it holds (all of
        them for None); a scan of the session's moments."""
        return self._finding.moments_by_source(session_id, source_ids)

    def moment_count(self, *, since: datetime | None = None, until: datetime | None = None) -> int:
        """How many active moments (and rollups) the notebook holds; with ``since`` (from,
        inclusive) or ``until`` (before), those of that time only."""
        return self._finding.moment_count(since, until)

    def concept(self, name: str) -> ConceptEntry:
        return self._finding.concept(name)

    def concepts(
        self, offset: int = 0, limit: int | None = None, *, text: str = ""
    ) -> list[ConceptEntry]:
        """The concept index; with ``text``, the concepts whose name holds it (any case)."""
        return self._finding.concepts(offset, limit, text)

    def search(
        self,
        query: str,
        *,
        session: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        speaker: str | None = None,
        concept: str | None = None,
        limit: int = 10,
        exclude: Collection[str] = (),
        mode: Mode = "hybrid",
        include_archive: bool = False,
        image: Path | str | None = None,
        audio: Path | str | None = None,
        min_score: float | None = None,
        current: bool = False,
        as_of: datetime | None = None,
        current_session_id: str | None = None,
        asked_at: datetime | None = None,
        asker: str | None = None,
    ) -> SearchResults:
        """Moments relevant to ``query``, best first, within the filters (``hybrid``,
        ``min_score``, ``current``, ``as_of``, ``current_session_id``, ``asked_at`` when
        it is asked, ``asker`` who asks, ``image``/``audio``: by example): see
        :meth:`.finding.Finding.search`; when nothing is relevant enough, ``hint()`` says so."""
        return self._finding.search(
            query,
            session=session,
            since=since,
            until=until,
            speaker=speaker,
            concept=concept,
            limit=limit,
            exclude=exclude,
            mode=mode,
            include_archive=include_archive,
            image=image,
            audio=audio,
            min_score=min_score,
            current=current,
            as_of=as_of,
            current_session_id=current_session_id,
            asked_at=asked_at,
            asker=asker,
        )

    def slice(
        self,
        query: str,
        budget_tokens: int = 4000,
        *,
        audience: str = "guest",
        session: str | None = None,
        fmt: SliceFormat = "markdown",
        limit: int | None = None,
        exclude: Collection[str] = (),
        mode: Mode = "hybrid",
        scope: GuestScope | None = None,
        asked_at: datetime | None = None,
    ) -> Slice:
        """A read-only, relevance-ranked, provenance-tagged slice for ``audience`` within
        ``budget_tokens`` (at most 256K; :mod:`agent_notebook.search.slice`) and a guest
        token's ``scope`` (:mod:`.scoping`); the other arguments are :meth:`search`'s."""
        args = (query, budget_tokens, audience, session, fmt, limit, exclude, mode, scope)
        return self._finding.slice(*args, asked_at=asked_at)

    def turns_around(self, moments: Sequence[Moment]) -> dict[str, list[Moment]]:
        """Each moment's id → the turns just before and after it in its session (not
        redacted), all read at once (a chat turn asks on every turn)."""
        return self._finding.turns_around(moments)

    # -- deletion, redaction, forgetting, stats (:mod:`.maintenance`) -------------------------

    def delete_session(self, session_id: str) -> SessionDeletion:
        """Delete a session for good, with its moments, archived records, media files and
        threads (see :meth:`.maintenance.Maintenance.delete_session`)."""
        return self._maintenance.delete_session(session_id)

    def redact(self, moment_id: str, reason: str, who: str = "owner") -> Moment:
        """Remove a moment's content for good, everywhere it was copied, leaving a tombstone
        that says who, when and why (see :mod:`.redaction`)."""
        return self._maintenance.redact(moment_id, reason, who)

    def redact_moments(self, moment_ids: Sequence[str], reason: str, who: str = "owner") -> None:
        """:meth:`redact` of several active moments in one pass (one purge of the files)."""
        self._maintenance.redact_moments(moment_ids, reason, who)

    def forget(
        self,
        concept: str,
        reason: str = "",
        *,
        who: str = "owner",
        dry_run: bool = False,
        words_only: bool = False,
    ) -> ForgetReport:
        """Redact every moment, rollup and session-notebook line tied to ``concept``, then
        drop it from the index; ``dry_run`` only lists what would go; ``words_only`` redacts
        the phrase's words and keeps the rest of each moment (see :mod:`.redaction`)."""
        return self._maintenance.forget(concept, reason, who, dry_run, words_only)

    def forget_by_policy(
        self,
        *,
        older_than: str | timedelta | None = None,
        inactive_for: str | timedelta | None = None,
        keep_top: int | None = None,
        session: str | None = None,
        reason: str = "",
        who: str = "owner",
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> PolicyReport:
        """Redact the moments the forgetting policy picks (durations such as ``30d``; the
        top ``keep_top`` by decayed importance stay); see :mod:`.forgetting`."""
        return self._maintenance.forget_by_policy(
            older_than, inactive_for, keep_top, session, reason, who, dry_run, now
        )

    def stats(self) -> NotebookStats:
        return self._maintenance.stats()

    # -- flat names of the named parts, kept for a release (:mod:`.aliases`) -------------------

    decision_log = Alias("facts", OwnerFacts.decision_log)
    edit_decision = Alias("facts", OwnerFacts.edit_decision)
    pending_items = Alias("facts", OwnerFacts.pending_items)
    edit_pending = Alias("facts", OwnerFacts.edit_pending)
    mark_moment = Alias("facts", OwnerFacts.mark_moment)
    conflicts = Alias("facts", OwnerFacts.conflicts)
    resolve_conflict = Alias("facts", OwnerFacts.resolve_conflict)
    compact = Alias("archive", Archive.compact)
    cold_archive = Alias("archive", Archive.cold_archive)
    archived_record = Alias("archive", Archive.record)
    archived_moment = Alias("archive", Archive.moment)
    archived_count = Alias("archive", Archive.count)
    export_to = Alias("transfer", Transfer.export_to)
    export_file = Alias("transfer", Transfer.export_file)
    import_from = Alias("transfer", Transfer.import_from)
    migrate_to = Alias("transfer", Transfer.migrate_to)
    reindex = Alias("vectors", Vectors.reindex)
    unembedded = Alias("vectors", Vectors.unembedded)
    checkpointer_for = Alias("langgraph", LangGraphState.checkpointer_for)
    set_up_chat_state = Alias("langgraph", LangGraphState.set_up)
    start_store_sweeper = Alias("langgraph", LangGraphState.start_ttl_sweeper)
    sweep_store = Alias("langgraph", LangGraphState.sweep_ttl)
    session_notebook_threads = Alias("langgraph", LangGraphState.session_notebook_threads)

    @property
    def archive_dir(self) -> Path | None:
        """Alias of ``nb.archive.root``."""
        return self.archive.root

    @property
    def semantic(self) -> SemanticIndex | None:
        """Alias of ``nb.vectors.semantic``."""
        return self.vectors.semantic

    @property
    def wants_vectors(self) -> bool:
        """Alias of ``nb.vectors.wants_vectors``."""
        return self.vectors.wants_vectors

    @property
    def embedder_name(self) -> str:
        """Alias of ``nb.vectors.embedder_name``."""
        return self.vectors.embedder_name

    @property
    def checkpointer(self) -> BaseCheckpointSaver[Any]:
        """LangGraph's checkpointer on this notebook (``nb.langgraph.checkpointer``)."""
        return self.langgraph.checkpointer

    @property
    def store(self) -> BaseStore:
        """LangGraph's store in this notebook (``nb.langgraph.store``)."""
        return self.langgraph.store
