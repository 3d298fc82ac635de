"""The owner's API: :class:`Notebook`, the long-term notebook of seed 002.

Front ends (CLI, HTTP, MCP, graph nodes) call this facade and nothing below it. It validates
input, derives what can be derived (ids, concepts, retrieval keys, importance, stats) and
composes the backend's primitives inside transactions, so every backend behaves alike.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar

from pydantic import ValidationError

from .. import config as cfg
from ..compaction import ARCHIVE_DIR, ColdArchive, CompactionReport, Compactor
from ..compaction.runner import Progress as CompactProgress
from ..core import files
from ..core.crypto import cipher_of, load_cipher
from ..core.enrich import enrich
from ..core.files import exclusive_lock as write_lock_file
from ..core.tokens import DEFAULT_COUNTER, TokenCounter
from ..errors import Conflict, InvalidInput, NotebookError, NotFound
from ..model import (
    MOMENT_ID_RE,
    SESSION_ID_RE,
    THREADS_NAMESPACE,
    ArchiveEntry,
    ConceptEntry,
    Decision,
    Escalation,
    Link,
    Moment,
    MomentContent,
    MomentDraft,
    MomentMetadata,
    NotebookStats,
    PendingItem,
    Relations,
    SearchHit,
    Session,
    TaskStatus,
    check_moment_id,
    check_session_id,
    describe_validation_error,
    moment_number,
    normalize_concept,
    now_utc,
    session_id_for,
    validate_record,
)
from ..privacy import audit, modalities, permissions
from ..privacy import secrets as secret_masking
from ..search.engine import Mode, SearchEngine, SearchRequest, matches_words, neighbour_ids
from ..search.slice import MAX_SLICE_TOKENS, Slice, build_slice
from ..search.slice import Format as SliceFormat
from ..storage import (
    MemoryBackend,
    MomentFilter,
    StorageBackend,
    is_postgres_url,
    open_backend,
)
from ..storage.base import Activity, activity_of
from .drafts import check_drafts
from .facts import FactKeeper, as_of_until, current_view, view_limit

# LangChain, LangGraph (stores, checkpoints, summarizers), the embedder, media and the
# session notebook load when first used: a command that reads the notebook needs none.
if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import BaseStore, IndexConfig

    from ..compaction.summarize import Summarizer
    from ..embed import Embedder
    from ..embed.multimodal import MultimodalEmbedder
    from ..ingest import IngestPlan, IngestReport, IngestSession
    from ..langgraph.stores import Closeable
    from ..media.store import Attachment, MediaStore
    from ..search.semantic import SemanticIndex
    from ..session import SessionNotebook
    from .exchange import CopyReport
    from .redaction import ForgetReport

#: How many of the latest moment ids a session keeps in ``context.recent_moments``.
RECENT_MOMENTS = 20
#: How many recorded moments a session's stored row may lag behind: a record rewrites the
#: session only every so many moments (or when it adds to the audit log); reads count the
#: moments since in (see ``Notebook.get_session``).
SESSION_ROW_LAG = 8
MAX_SEARCH_LIMIT = 1000
#: The longest query a search takes, in characters, on every front end (a longer one is
#: refused: it would cost seconds and memory and find nothing a shorter one would not).
MAX_QUERY_CHARS = 10_000
#: How long close() lets the worker embed what was just recorded before stopping it after
#: its current chunk: a turn's few moments get their vector, a big ingest's rest waits.
CLOSE_EMBED_WAIT_S = 2.0
#: Moments an ingest records per transaction (a stopped ingest, run again, goes on).
INGEST_BATCH = 500

Progress = Callable[[int], None]
WriteBackKind = Literal["decision", "pending", "escalation_outcome"]
log = logging.getLogger(__name__)
_thread_lock = threading.Lock()
_T = TypeVar("_T")
_Item = TypeVar("_Item", PendingItem, Escalation)


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
        """``embedder``: ``"default"`` follows ``search.embedder`` (the offline MiniLM model
        when installed); ``None`` keeps search lexical; or any :class:`Embedder`, such as a
        :class:`~agent_notebook.embed.LangChainEmbedder`. With ``background_embedding``
        (for a notebook that lives a while: a server, a chat) new moments are embedded on a
        worker thread; without it they wait in the queue for :meth:`reindex`.
        ``multimodal_embedder`` fills ``content.multimodal_embedding`` of the images (and
        audio) recorded; see :mod:`agent_notebook.embed.multimodal`. ``store_index`` is
        LangGraph's ``index`` config for :attr:`store`; ``"default"`` embeds with this
        notebook's embedder (when it has one and the notebook is not encrypted), ``None``
        makes the store non-semantic; see :mod:`agent_notebook.langgraph.store.index`."""
        self.backend = backend
        self.multimodal_embedder = multimodal_embedder
        self.home = home
        self.tokens = token_counter
        self.config = config or cfg.NotebookConfig()
        self._store: BaseStore | None = None
        self._checkpointers: dict[tuple[Path | None, int | None], BaseCheckpointSaver[Any]] = {}
        self._connections: list[Closeable] = []  # connections and pools, closed with it
        self._after_turn: ThreadPoolExecutor | None = None
        self._running_turns: set[_HeldWork] = set()  # their held work: see turn_running
        self._closed = False
        self._embedder_choice = embedder
        self._store_index_choice = store_index
        self._background_embedding = background_embedding
        self._semantic: SemanticIndex | None = None
        self._semantic_ready = False
        self._archive: ColdArchive | None = None
        self._in_use: files.UseLock | None = None  # held by Notebook.open (see use_lock)
        self.facts = FactKeeper(backend, self.config.facts.window)  # issue 30

    @classmethod
    def open(
        cls,
        home: Path | str | None = None,
        *,
        backend: str | None = None,
        create: bool = True,
        background_embedding: bool = True,
        store_index: IndexConfig | Literal["default"] | None = "default",
    ) -> Self:
        """Open (and with ``create``, make) the notebook in ``home``; see
        :mod:`agent_notebook.config` (``store_index``: see :class:`Notebook`). ``home`` may be
        a ``postgresql://`` URL: the notebook in that database, with the default home for its
        config."""
        if home is not None and is_postgres_url(home) and backend is None:
            home, backend = None, str(home)
        root = cfg.resolve_home(home)
        if not root.exists() and not create:
            raise NotFound(f"no notebook at {root}: run 'agent-notebook init --home {root}'")
        files.ensure_private_dir(root)
        permissions.report_on_open(root)  # logs what is open to others, and the fix
        in_use = cfg.use_lock(root, exclusive=False)  # a key rotation waits for it, and it for one
        try:
            conf = cfg.load_config(root)
            location = cfg.backend_location(root, conf, backend)
            cipher = load_cipher(conf.privacy.encryption, root)  # None unless encryption is on
            storage = open_backend(
                location, sqlite_synchronous=conf.sqlite_synchronous, cipher=cipher
            )
            if hasattr(storage, "local_dir"):  # a database server's notebook: side files here
                storage.local_dir = root
            notebook = cls(
                storage,
                home=root,
                config=conf,
                background_embedding=background_embedding,
                store_index=store_index,
            )
        except BaseException:
            in_use.release()
            raise
        notebook._in_use = in_use
        return notebook

    def after_turn(self, work: Callable[[], object]) -> Future[object]:
        """Run derived work (a session-notebook update) after the turn, off the hot path, one
        job at a time, in submission order. :meth:`close` and :meth:`drain` wait for it;
        a failure is logged (the raw log it derives from is already written). Work handed
        over while a turn runs (:meth:`turn_running`) starts when that turn ends, so that it
        takes no time (nor the interpreter lock) from the rest of the turn."""
        future: Future[object] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(work())
            except Exception as err:  # noqa: BLE001 (the future carries it; _log_failure logs it)
                future.set_exception(err)

        future.add_done_callback(_log_failure)
        held = _TURN_WORK.get()
        if held is None or held.notebook is not self or not held.hold(run):
            self._submit(run)
        return future

    def _submit(self, job: Callable[[], None]) -> None:
        if self._after_turn is None:
            self._after_turn = ThreadPoolExecutor(1, thread_name_prefix="agent-notebook")
        self._after_turn.submit(job)

    @contextmanager
    def turn_running(self) -> Iterator[None]:
        """Enter for the length of a chat turn: the embedding worker waits meanwhile (see
        :meth:`SemanticIndex.turn`), so the turn's moments are embedded after it returns
        rather than on the cores the rest of the turn needs; the work the turn hands to
        :meth:`after_turn` starts when it ends; after a turn that returned, the index
        upkeep of its moments runs as :meth:`after_turn` work, off the next turn's search,
        and so does a checkpoint of SQLite's write-ahead log now and then
        (:meth:`StorageBackend.fold_log`), off a later turn's commit.
        It loads nothing: before the first record starts the worker there is no worker to
        hold."""
        semantic = self._semantic if self._background_embedding else None
        held = _HeldWork(self)
        self._running_turns.add(held)
        token = _TURN_WORK.set(held)
        try:
            with nullcontext() if semantic is None else semantic.turn():
                yield
        finally:
            with suppress(ValueError):  # left in another context (a generator closed late)
                _TURN_WORK.reset(token)
            self._running_turns.discard(held)
            for job in held.release():
                self._submit(job)
        if not self._closed:  # closed meanwhile: close has settled what the turn wrote
            self.after_turn(self._after_a_turn)

    def _after_a_turn(self) -> None:
        self.backend.settle()  # the turn's moments indexed
        self.backend.fold_log()  # now and then the write-ahead log checkpointed, off a turn

    def settle(self) -> None:
        """Catch up what is derived lazily from the moments recorded so far: the backend's
        indexes and the sessions' stored stats. Reads do it for themselves before they
        answer; this moves the work off a later read and leaves the stored records current
        (it runs on :meth:`close`, before an export and before compaction)."""
        self.backend.settle()
        behind = [s.id for s in self.backend.list_sessions() if self._caught_up(s)[1]]
        if not behind:
            return  # no transaction (nor a YAML notebook's writer lock) for nothing
        with self.backend.atomic():
            for session_id in behind:
                stored = self.backend.get_session(session_id)
                if stored is not None and (caught_up := self._caught_up(stored))[1]:
                    self.backend.put_session(caught_up[0])

    def drain(self) -> None:
        """Wait until the work handed to :meth:`after_turn` so far is done (not the work a
        running turn holds: it starts when the turn ends)."""
        if self._after_turn is not None:
            self._after_turn.submit(lambda: None).result()

    def close(self) -> None:
        self._closed = True
        for held in list(self._running_turns):  # a turn still running: its work runs now,
            for job in held.release():  # before the close it would otherwise follow
                self._submit(job)
        if self._after_turn is not None:
            self._after_turn.shutdown(wait=True)
            self._after_turn = None
        if self._semantic is not None:
            # Moments recorded just now get their vectors unless that takes more than a
            # moment; any left stay queued, for the next search from the command line, the
            # next long-lived process or 'agent-notebook reindex'.
            self._semantic.wait_idle(timeout=CLOSE_EMBED_WAIT_S)
            self._semantic.close()
            self._semantic = None
            self._semantic_ready = False
        for conn in self._connections:
            conn.close()
        self._connections.clear()
        self._store = None
        self._checkpointers.clear()
        try:
            self.settle()
        except NotebookError as err:  # derived data: the next open catches up all the same
            log.warning("closing without catching up the derived records: %s", err)
        self.backend.close()
        if self._in_use is not None:
            self._in_use.release()
            self._in_use = None

    @property
    def checkpointer(self) -> BaseCheckpointSaver[Any]:
        """LangGraph's ``SqliteSaver`` on this notebook's file (or ``chat.checkpoints``),
        sync and async (:class:`~agent_notebook.langgraph.checkpoint.sqlite.NotebookSaver`):
        every checkpoint is kept unless ``chat.keep_checkpoints`` says how many of a thread's
        latest to keep."""
        return self.checkpointer_for(self.config.chat)

    def checkpointer_for(self, chat: cfg.ChatSettings) -> BaseCheckpointSaver[Any]:
        """The checkpointer ``chat`` settings ask for, opened once and closed with the notebook."""
        key = (chat.checkpoints, chat.keep_checkpoints)
        if key not in self._checkpointers:
            from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

            from ..langgraph.stores import open_checkpointer

            saver, conn = open_checkpointer(self.backend, chat.checkpoints, chat.keep_checkpoints)
            if (cipher := cipher_of(self.backend)) is not None:  # checkpoints hold the chat
                saver.serde = EncryptedSerializer(cipher.checkpoint_cipher(), saver.serde)
            self._checkpointers[key] = saver
            if conn is not None:
                self._connections.append(conn)
        return self._checkpointers[key]

    def set_up_chat_state(self) -> None:
        """Make the tables of :attr:`store` and :attr:`checkpointer` now, when they live in
        a PostgreSQL database shared with other servers: a server (and ``init``) does it at
        start-up, so no request waits on another server's migrations (issue 28). Elsewhere
        they are made on first use, as before."""
        from ..langgraph.stores import is_postgres

        if is_postgres(self.backend):
            _ = self.store, self.checkpointer

    @property
    def store(self) -> BaseStore:
        """A LangGraph ``BaseStore`` in this notebook's own file (``SqliteStore`` on
        ``notebook.db``, sync and async): give it to your LangGraph app, and the session
        notebooks and your app's items share one file. It is semantic: ``search(ns,
        query=...)`` ranks by meaning with scores (see ``store_index``)."""
        if self._store is None:
            from ..langgraph.store.index import default_store_index
            from ..langgraph.store.sqlite import StoreIndex
            from ..langgraph.stores import open_store

            cipher = cipher_of(self.backend)
            choice = self._store_index_choice
            index = StoreIndex(choice) if choice not in ("default", None) else None  # type: ignore[arg-type]
            semantic = choice == "default" and cipher is None and self.wants_vectors
            self._store, conn = open_store(
                self.backend,
                cipher,
                index=index,
                index_factory=(lambda: default_store_index(self._resolve_embedder()))
                if semantic
                else None,
            )
            if conn is not None:
                self._connections.append(conn)
        return self._store

    def thread_session(self, thread_id: str) -> str:
        """The long-term session of a LangGraph thread (a thread *is* a session): the thread
        id itself when it names a session, else the session started for it on first use,
        remembered in :attr:`store` under ``("threads",)``."""
        if SESSION_ID_RE.fullmatch(thread_id) and self.backend.get_session(thread_id):
            return thread_id
        item = self.store.get(THREADS_NAMESPACE, thread_id)
        if item is not None:
            return str(item.value["session_id"])
        from ..langgraph.stores import write_lock

        with _thread_lock, write_lock(self.store):
            item = self.store.get(THREADS_NAMESPACE, thread_id)  # another writer was first?
            if item is not None:
                return str(item.value["session_id"])
            session = self.start_session(f"Thread {thread_id}")
            self.link(session.id, f"thread:{thread_id}", relation="thread")
            self.store.put(THREADS_NAMESPACE, thread_id, {"session_id": session.id}, index=False)
            return session.id

    def session_notebook(self, thread_id: str) -> SessionNotebook:
        """The session notebook of ``thread_id`` in :attr:`store`, condensing into this
        notebook, with the budgets of ``config.yaml``."""
        from ..session import SessionNotebook

        return SessionNotebook(
            self.store, thread_id, notebook=self, budgets=self.config.session_notebook
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- sessions ---------------------------------------------------------------------------

    def start_session(self, task: str = "", *, started: datetime | None = None) -> Session:
        """Start a session; its id is ``s_<day it started>_<NNN>``."""
        when = now_utc() if started is None else _aware(started, "started")
        with self.backend.atomic():
            number = self.backend.next_number(f"session:{when.date().isoformat()}")
            session = validate_record(
                Session,
                {"id": session_id_for(when.date(), number), "task": task, "started": when},
                "session",
            )
            self.backend.put_session(session)
        return session

    def get_session(self, session_id: str) -> Session:
        """The session, its stats and recent moments counting every moment recorded."""
        return self._session_with_lag(session_id)[0]

    def _session_with_lag(self, session_id: str) -> tuple[Session, int]:
        """The session with the moments its stored row lags behind counted in, and how many
        they were. The row counts the moments up to the newest of its ``recent_moments``
        (a record does not rewrite it each time); the moments of the session above that
        number are the ones it lags behind, so the stats and that mark, stored together,
        always agree, whoever writes the row."""
        found = self.backend.get_session(check_session_id(session_id))
        if found is None:
            raise NotFound(
                f"no session {session_id} in {self.backend.location}; "
                "'agent-notebook sessions' lists them"
            )
        return self._caught_up(found)

    def _caught_up(self, session: Session) -> tuple[Session, int]:
        counted = max(map(moment_number, session.context.recent_moments), default=0)
        lagging = self.backend.session_activity_after(session.id, counted)
        if lagging:
            self._count(session, lagging)
        return session, len(lagging)

    def sessions(self, offset: int = 0, limit: int | None = None) -> list[Session]:
        found = self.backend.list_sessions(_offset(offset), _opt_limit(limit))
        return [self._caught_up(s)[0] for s in found]

    def update_session(
        self,
        session_id: str,
        *,
        task: str | None = None,
        task_status: TaskStatus | str | None = None,
        condensed_history: str | None = None,
    ) -> Session:
        changes: dict[str, Any] = {}
        if task is not None:
            changes["task"] = task
        if task_status is not None:
            changes["task_status"] = task_status
        return self._change_session(
            session_id, lambda s: _apply(s, changes, condensed_history), "session update"
        )

    def _change_session(self, session_id: str, change: Callable[[Session], _T], what: str) -> _T:
        """Read, change and write a session in one transaction; return what ``change`` gives."""
        with self.backend.atomic():
            session = self.get_session(session_id)
            before = session.model_dump()
            try:
                result = change(session)
            except ValidationError as err:
                raise InvalidInput(f"{what}: {describe_validation_error(err)}") from None
            if session.model_dump() != before:
                self.backend.put_session(validate_record(Session, session.model_dump(), what))
            return result

    # -- the audit log, pending threads, escalations, links ----------------------------------

    def decide(self, session_id: str, what: str, why: str = "", who: str = "owner") -> Decision:
        """Append a decision to the session's audit log."""
        _required(what, "decision", "what was decided")
        decision = validate_record(
            Decision, {"when": now_utc(), "what": what, "why": why, "who": who}, "decision"
        )

        def append(s: Session) -> Decision:
            s.decisions.append(decision)
            return decision

        return self._change_session(session_id, append, "decision")

    def open_pending(self, session_id: str, what: str) -> PendingItem:
        _required(what, "pending item", "what is open")

        def add(s: Session) -> PendingItem:
            item = validate_record(
                PendingItem,
                {"id": f"p_{len(s.pending) + 1}", "what": what, "since": now_utc()},
                "pending item",
            )
            s.pending.append(item)
            return item

        return self._change_session(session_id, add, "pending item")

    def close_pending(self, session_id: str, pending_id: str, resolution: str = "") -> PendingItem:
        def close(s: Session) -> PendingItem:
            item = _find(s.pending, pending_id, "pending item", s.id)
            if item.closed is not None:
                raise Conflict(f"{pending_id} of {s.id} was closed already at {item.closed}")
            item.closed = now_utc()
            item.resolution = resolution
            return item

        return self._change_session(session_id, close, "pending item")

    def escalate(self, session_id: str, to: str, why: str = "", slice: str = "") -> Escalation:
        """Record a hand-off to a bigger agent, with the slice it was given."""
        _required(to, "escalation", "the agent it goes to")

        def add(s: Session) -> Escalation:
            item = validate_record(
                Escalation,
                {
                    "id": f"e_{len(s.escalations) + 1}",
                    "when": now_utc(),
                    "to": to,
                    "why": why,
                    "slice": slice,
                },
                "escalation",
            )
            s.escalations.append(item)
            return item

        return self._change_session(session_id, add, "escalation")

    def resolve_escalation(self, session_id: str, escalation_id: str, outcome: str) -> Escalation:
        _required(outcome, "escalation outcome", "the outcome")

        def resolve(s: Session) -> Escalation:
            item = _find(s.escalations, escalation_id, "escalation", s.id)
            if item.resolved is not None:
                raise Conflict(f"{escalation_id} of {s.id} has an outcome already")
            item.outcome = outcome
            item.resolved = now_utc()
            return item

        return self._change_session(session_id, resolve, "escalation")

    def link(self, session_id: str, target: str, relation: str = "related", note: str = "") -> Link:
        """Cross-reference a session, a moment (checked to exist) or any URI from a session."""
        if SESSION_ID_RE.fullmatch(target):
            self.get_session(target)
        elif MOMENT_ID_RE.fullmatch(target):
            self.get_moment(target)
        link = validate_record(Link, {"target": target, "relation": relation, "note": note}, "link")

        def append(s: Session) -> Link:
            s.links.append(link)
            return link

        return self._change_session(session_id, append, "link")

    # -- moments ----------------------------------------------------------------------------

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
        media = {
            **({} if image is None else {"image_file": str(image)}),
            **({} if audio is None else {"audio_file": str(audio)}),
        }
        return self.record_many(session_id, [{"text": text, **fields, **media}])[0]

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
        check_session_id(session_id)
        checked = self.check_drafts(drafts)
        if not checked:
            if condensed_history is not None:
                self.update_session(session_id, condensed_history=condensed_history)
            return []
        privacy = self.config.privacy  # secrets first: no concept or key is made of one
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
                from ..media.store import media_paths_of

                in_use = media_paths_of(self.backend.iter_moments())
                self.media_store().remove_unused(copied, in_use)
            raise
        if self.config.facts.enabled:  # derived, after the raw moments (issue 30)
            self.facts.after_record(session_id, moments)
        if self._background_embedding and (semantic := self.semantic) is not None:
            semantic.notify()  # vectors are derived: made off the hot path
        return moments

    def check_drafts(
        self, drafts: Iterable[MomentDraft | dict[str, Any]], where: str = "moment"
    ) -> list[MomentDraft]:
        """The drafts as :meth:`record_many` takes them, or :class:`InvalidInput` naming the
        first bad one: unknown fields, ``image_path``/``audio_path`` (set by the media store
        alone), nothing to remember, or a text over ``moments.max_text_bytes``. A front end
        that starts a session for the moments checks them first; see :mod:`.drafts`."""
        return check_drafts(drafts, self.config.moments, where)

    def _commit(
        self,
        session_id: str,
        prepared: list[Moment],
        masked: dict[int, list[str]],
        stripped: list[tuple[MomentDraft, list[str]]],
        condensed_history: str | None = None,
    ) -> list[Moment]:
        with self.backend.atomic():
            session, lagging = self._session_with_lag(session_id)
            first = self.backend.next_number("moment", len(prepared))
            moments = [
                m.model_copy(update={"id": f"m_{first + i}"}) for i, m in enumerate(prepared)
            ]
            parents = self._adopt_children(moments)
            self.backend.put_moments([*moments, *parents])
            self._count(session, [activity_of(m) for m in moments])
            for i, kinds in masked.items():  # the audit log says what, never the secret
                audit.note(session, secret_masking.audit_text(kinds, moments[i].id))
            dropped = list(dict.fromkeys(name for _, names in stripped for name in names))
            for name in dropped:
                audit.note(session, modalities.audit_text(name), once=True)
            # The stats are derivable from the moments: the row is rewritten only now and
            # then (fewer pages per record), or when the audit log changed.
            changed = condensed_history is not None and (
                condensed_history != session.context.condensed_history
            )
            if changed:
                session.context.condensed_history = condensed_history or ""
            if changed or masked or dropped or lagging + len(moments) >= SESSION_ROW_LAG:
                self.backend.put_session(session)
        return moments

    def media_store(self) -> MediaStore:
        """``<home>/media/``, where attached images and audio are kept."""
        from ..media.store import MediaStore

        if self.home is None:
            raise InvalidInput(
                "attaching media needs a notebook with a home (Notebook.open(home)): the "
                "files are kept in <home>/media/"
            )
        return MediaStore(self.home)

    def _attachments(self, draft: MomentDraft) -> list[Attachment]:
        from ..media.store import attachment_of

        embedder = self.multimodal_embedder if self.config.privacy.modalities.embeddings else None
        found = []  # the errors name the file
        if draft.image_file is not None:
            found.append(attachment_of(draft.image_file, "image", embedder))
        if draft.audio_file is not None:
            found.append(attachment_of(draft.audio_file, "audio", embedder))
        if found and self.home is None:
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

    def _count(self, session: Session, moments: Sequence[Activity]) -> None:
        """Count recorded ``moments`` into ``session``'s stats and recent moments (each
        field assigned once: the models validate every assignment)."""
        if not moments:
            return
        stats, context = session.stats, session.context
        times = [m.timestamp for m in moments]
        firsts = [t for t in (stats.first_activity, min(times)) if t is not None]
        lasts = [t for t in (stats.last_activity, max(times)) if t is not None]
        stats.moments += len(moments)
        stats.tokens += sum(self.tokens.count(m.text) for m in moments)
        stats.bytes += sum(len(m.text.encode("utf-8")) for m in moments)
        stats.first_activity, stats.last_activity = min(firsts), max(lasts)
        context.raw_history_size += len(moments)
        context.recent_moments = [*context.recent_moments, *(m.id for m in moments)][
            -RECENT_MOMENTS:
        ]

    def get_moment(self, moment_id: str) -> Moment:
        found = self.backend.get_moment(check_moment_id(moment_id))
        if found is None:
            raise NotFound(f"no moment {moment_id} in {self.backend.location}")
        return found

    def moments(
        self, session_id: str | None = None, offset: int = 0, limit: int | None = None
    ) -> list[Moment]:
        if session_id is not None:
            self.get_session(session_id)
        return self.backend.list_moments(session_id, _offset(offset), _opt_limit(limit))

    # -- concepts and search ----------------------------------------------------------------

    def concept(self, name: str) -> ConceptEntry:
        entry = self._concept_with_archive(normalize_concept(name))
        if entry is None:
            raise NotFound(
                f"no concept {name!r} in the index; 'agent-notebook concepts' lists them"
            )
        return entry

    def concepts(self, offset: int = 0, limit: int | None = None) -> list[ConceptEntry]:
        return self.backend.list_concepts(_offset(offset), _opt_limit(limit))

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
    ) -> list[SearchHit]:
        """Moments relevant to ``query``, best first, within the filters. ``hybrid`` fuses
        lexical (BM25), vector and concept matches (lexical alone without an embedder);
        each hit's ``explain`` says what found it. Moments in ``exclude`` (say, those
        already in the live messages) are passed over. Rollups are found like moments
        (``tier="rollup"``); with ``include_archive`` the cold archive is searched too (by
        words) and its hits come ranked among the others, ``tier="archived"``. ``image`` or
        ``audio`` searches by example: moments whose stored signature is nearest (``media``
        in ``explain``), fused with the words when there is a query, alone without one.
        Hits less relevant than ``min_score`` (default ``search.min_score``, 0.3) are left
        out: relevance (``explain["relevance"]``) is 1 for a match on a word other than a
        stopword, on a concept or by example, else the vector similarity; an empty result
        then means nothing matches well (:func:`weak_match_hint` says so). ``current``
        leaves out what a later moment superseded or what expired (issue 30); ``as_of``
        reads the notebook as it stood then (moments said by then, current then)."""
        check_query(query, "search")
        if as_of is not None:  # issue 30: see notebook/facts.py
            until = as_of_until(_aware(as_of, "as_of"), until)
        example = self._example(image, audio)
        if min_score is None:
            min_score = self.config.search.min_score
        elif not 0.0 <= min_score <= 1.0:  # NaN fails too
            raise InvalidInput(f"search: min_score {min_score!r} must be between 0 and 1")
        if session is not None:
            self.get_session(session)
        if since is not None and until is not None and since >= until:
            raise InvalidInput(f"search: since ({since}) must be before until ({until})")
        if mode not in ("hybrid", "lexical", "vector"):
            raise InvalidInput(f"search: mode {mode!r} is not one of hybrid, lexical, vector")
        semantic = None if mode == "lexical" else self.semantic  # lexical: no model loaded
        if mode == "vector" and semantic is None:
            raise InvalidInput(
                "search: vector mode needs an embedder; 'agent-notebook doctor' says why "
                "there is none"
            )
        where = MomentFilter(
            session=session,
            since=None if since is None else _aware(since, "since"),
            until=None if until is None else _aware(until, "until"),
            speaker=speaker,
        )
        engine = SearchEngine(self.backend, self.config.search, semantic)
        request = SearchRequest(
            query,
            where,
            view_limit(_limit(limit), current or as_of is not None),
            concept=concept,
            exclude=set(exclude),
            mode=mode,
            example=example,
            min_score=min_score,
        )
        hits = self._with_tiers(engine.search(request), request, include_archive)
        return current_view(hits, limit, current, as_of)

    @staticmethod
    def _example(image: Path | str | None, audio: Path | str | None) -> str | None:
        """The signature of the example to search by (InvalidInput for a bad file)."""
        if image is not None and audio is not None:
            raise InvalidInput("search: give an example image or an example audio, not both")
        if image is None and audio is None:
            return None
        from ..media.store import attachment_of

        return attachment_of(
            image or audio or "", "image" if image is not None else "audio"
        ).signature

    def redact(self, moment_id: str, reason: str, who: str = "owner") -> Moment:
        """Remove a moment's content (text, concepts, retrieval keys, actions) for good,
        leaving a tombstone that says who, when and why; the session's audit log records it
        (without the text). The text also leaves the rollups, the cold archive, the session
        notebooks, condensed histories and checkpoints, and the files are purged; see
        :mod:`.redaction`. Search never returns it again, by words or by meaning."""
        from .redaction import Redaction

        check_moment_id(moment_id)
        _required(reason, "redact: the reason", "why the moment is redacted (for the tombstone)")
        with self._redaction_lock():
            return Redaction(self, reason, who).redact(moment_id)

    def forget(
        self, concept: str, reason: str = "", *, who: str = "owner", dry_run: bool = False
    ) -> ForgetReport:
        """Redact every moment, rollup and session-notebook line tied to ``concept`` (the
        concept index, and the phrase appearing as words), then drop the concept from the
        index; with ``dry_run`` only list what would go."""
        from .redaction import Redaction

        with self._redaction_lock():
            return Redaction(self, reason, who).forget(concept, dry_run=dry_run)

    def _redaction_lock(self) -> AbstractContextManager[None]:
        """Compaction's lock: a moment is not archived while it is being redacted."""
        if self.archive_dir is None:
            return nullcontext()
        files.ensure_private_dir(self.archive_dir)
        return write_lock_file(self.archive_dir / ".lock", 30.0)

    # -- slices for a guest -----------------------------------------------------------------

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
    ) -> Slice:
        """A read-only, relevance-ranked, provenance-tagged slice of the notebook for
        ``audience`` that fits ``budget_tokens`` (at most 256K); see
        :mod:`agent_notebook.search.slice`. ``limit`` caps the matched moments; those in
        ``exclude`` are left out; ``mode`` is the search's."""
        check_query(query, "slice")
        if not 1 <= budget_tokens <= MAX_SLICE_TOKENS:
            raise InvalidInput(
                f"slice: budget_tokens must be between 1 and {MAX_SLICE_TOKENS}, "
                f"not {budget_tokens}"
            )
        if fmt not in ("markdown", "yaml"):
            raise InvalidInput(f"slice: format {fmt!r} is not markdown or yaml")
        # Enough hits to fill the budget with room for those that do not fit.
        pool = limit or min(MAX_SEARCH_LIMIT, max(20, budget_tokens // 40))
        hits = (
            self.search(query, session=session, limit=pool, exclude=exclude, mode=mode)
            if query.strip()
            else []
        )
        sessions: dict[str, Session] = {}

        def session_of(session_id: str) -> Session:
            if session_id not in sessions:
                sessions[session_id] = self.get_session(session_id)
            return sessions[session_id]

        around = self.turns_around([hit.moment for hit in hits])
        return build_slice(
            query,
            hits,
            budget_tokens=budget_tokens,
            audience=audience,
            counter=self.tokens,
            session_of=session_of,
            neighbours_of=lambda moment: around.get(moment.id, []),
            fmt=fmt,
        )

    def turns_around(self, moments: Sequence[Moment]) -> dict[str, list[Moment]]:
        """Each moment's id → the turns just before and after it in its session (not
        redacted), all read at once (a chat turn asks on every turn)."""
        wanted = sorted({i for moment in moments for i in neighbour_ids(moment.number)})
        found = {m.id: m for m in self.backend.get_moments(wanted)} if wanted else {}
        return {
            moment.id: [
                near
                for i in neighbour_ids(moment.number)
                if (near := found.get(i)) is not None
                and near.session == moment.session
                and near.redacted is None
            ]
            for moment in moments
        }

    def write_back(
        self,
        guest: str,
        session_id: str,
        kind: WriteBackKind,
        text: str,
        *,
        why: str = "",
        escalation_id: str | None = None,
    ) -> Decision:
        """A guest's one write: a decision, a new pending item, or the outcome of an
        escalation; each is entered in the session's audit log under ``guest:<name>``.
        Returns that audit entry."""
        name = guest.strip()
        if not name or len(name) > 100:
            raise InvalidInput("write_back: guest must be a name of 1 to 100 characters")
        who = f"guest:{name}"
        _required(text, "write_back", "the decision, the open item or the outcome, as text")
        with self.backend.atomic():
            if kind == "decision":
                return self.decide(session_id, text, why, who=who)
            if kind == "pending":
                item = self.open_pending(session_id, text)
                return self.decide(session_id, f"opened pending {item.id}: {text}", why, who=who)
            if kind == "escalation_outcome":
                if escalation_id is None:
                    raise InvalidInput("write_back: an escalation outcome needs escalation_id")
                self.resolve_escalation(session_id, escalation_id, text)
                return self.decide(session_id, f"outcome of {escalation_id}: {text}", why, who=who)
        raise InvalidInput(
            f"write_back: kind {kind!r} is not decision, pending or escalation_outcome"
        )

    # -- vectors ----------------------------------------------------------------------------

    @property
    def semantic(self) -> SemanticIndex | None:
        """The vector side of search, or None without an embedder (see ``doctor``) or with
        ``privacy.modalities.embeddings`` off (no vector is made, stored or read)."""
        if not self.config.privacy.modalities.embeddings:
            return None
        if not self._semantic_ready:
            embedder = self._resolve_embedder()  # a bad name raises on every use
            self._semantic_ready = True
            if embedder is not None:
                from ..search.semantic import SemanticIndex

                index_file = None
                if (  # with encryption on, the faiss file (plain vectors) is not written
                    self.home is not None
                    and self.backend.capabilities.name == "yaml"
                    and cipher_of(self.backend) is None
                ):
                    index_file = self.home / "embeddings.faiss"
                self._semantic = SemanticIndex(self.backend, embedder, index_file=index_file)
        return self._semantic

    @property
    def wants_vectors(self) -> bool:
        """Whether moments are to get vectors (embeddings on, an embedder chosen), known
        without loading the model; whether the default model can run, ``doctor`` says."""
        if not self.config.privacy.modalities.embeddings or self._embedder_choice is None:
            return False
        if self._embedder_choice != "default":
            return True
        return self.embedder_name != "none"

    @property
    def embedder_name(self) -> str:
        """The offline embedder named by AGENT_NOTEBOOK_EMBEDDER or ``search.embedder``
        (``default``, ``minilm``, ``e5-small`` or ``none``)."""
        return os.environ.get(cfg.EMBEDDER_ENV) or self.config.search.embedder

    def _resolve_embedder(self) -> Embedder | None:
        if self._embedder_choice != "default":
            return self._embedder_choice
        if not self.wants_vectors:
            return None
        from ..embed import EMBEDDERS, default_embedder

        chosen = self.embedder_name
        if chosen == "none":
            return None
        if chosen != "default" and chosen not in EMBEDDERS:
            known = ", ".join(("default", *EMBEDDERS, "none"))
            raise InvalidInput(
                f"{cfg.EMBEDDER_ENV}={chosen!r} names no embedder: use one of {known}"
            )
        return default_embedder(chosen)

    def reindex(self, progress: Progress | None = None) -> int:
        """Embed every moment that has no vector yet (after a crash, a model change or
        an import); returns how many were embedded."""
        semantic = self.semantic
        if semantic is None:
            raise InvalidInput("reindex: no embedder; 'agent-notebook doctor' says why")
        return semantic.catch_up(progress)

    def unembedded(self) -> int:
        """How many moments wait for a vector (0 without an embedder)."""
        semantic = self.semantic
        return 0 if semantic is None else semantic.pending()

    # -- ingest, export, import -------------------------------------------------------------

    def ingest(self, plan: IngestPlan, progress: Progress | None = None) -> IngestReport:
        """Record a parsed file (see :func:`agent_notebook.ingest.parse_file`): a session for
        each of the plan's sessions, linked to its source (a LoCoMo session, the chat log's
        file). Idempotent: the moments an earlier ingest of the same source recorded (same
        ``source_id``) are skipped and counted, so a file that grew adds only its new turns.
        Written in transactions of ``INGEST_BATCH`` moments: an ingest stopped half-way,
        run again, adds what is missing. Every draft is checked before the first is
        recorded, so a bad one records nothing. ``progress`` gets the moments done, recorded
        or skipped. The new moments wait for a vector like recorded ones."""
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
            sessions=[self.get_session(sid) for sid in touched],
            sessions_created=created,
            moments_added=added,
            moments_skipped=skipped,
        )

    def _start_ingested(self, part: IngestSession) -> Session:
        from ..ingest import SOURCE_RELATION

        session = self.start_session(part.task, started=part.started)
        if part.source_id is None:
            return session
        linked = session.model_copy(
            update={"links": [Link(target=part.source_id, relation=SOURCE_RELATION)]}
        )
        self.backend.put_session(linked)
        return linked

    def export_to(
        self,
        target: StorageBackend,
        progress: Progress | None = None,
        *,
        media_to: Path | None = None,
    ) -> CopyReport:
        """Copy this notebook into ``target`` (for example a :class:`YamlDirBackend`): the
        records, vectors, archive entries, and the chat state (store items: session
        notebooks, the thread map; checkpoints) into ``target``'s own store and checkpoint
        files. With ``media_to``, the media files go to ``media_to/media/`` (each checked
        against its SHA-256 first) and the cold archive's files to ``media_to/archive/``."""
        from ..langgraph.stores import open_checkpointer, open_store, store_items
        from .exchange import Archives, ChatState, copy_notebook

        self.settle()  # the exported sessions count every moment
        archives = None
        if media_to is not None:
            from ..media.store import MediaStore

            _copy_media(self.backend, self.media_store(), MediaStore(media_to))
            if self.archive_dir is not None and self.backend.count_archived():
                archives = Archives(self._cold_archive(), ColdArchive(media_to / ARCHIVE_DIR))
        mine = ChatState(self.store, self.checkpointer)
        conns: list[Closeable] = []
        try:
            theirs = ChatState()
            if next(store_items(self.store), None) is not None:
                store, conn = open_store(target)
                theirs = ChatState(store=store)
                conns += [conn] if conn is not None else []
            if next(iter(self.checkpointer.list(None)), None) is not None:
                saver, conn = open_checkpointer(target, keep=self.config.chat.keep_checkpoints)
                theirs = ChatState(theirs.store, saver)
                conns += [conn] if conn is not None else []
            return copy_notebook(
                self.backend, target, progress, archives=archives, chat=(mine, theirs)
            )
        finally:
            for conn in conns:
                conn.close()

    def import_from(
        self,
        source: StorageBackend,
        progress: Progress | None = None,
        *,
        media_from: Path | None = None,
    ) -> CopyReport:
        """Copy ``source`` into this notebook, all of it or nothing (see
        :mod:`.exchange`): ids the notebook already uses for other records are renumbered
        (the report lists them), the chat state in ``source``'s store and checkpoint files
        comes along, so a chat on an imported thread goes on in its session. Imported
        moments without a vector are embedded like recorded ones. With
        ``media_from``, the media files they refer to are copied from ``media_from/media/``
        (checked against their SHA-256) and the archive files from ``media_from/archive/``."""
        from ..langgraph.stores import open_existing
        from .exchange import Archives, ChatState, copy_notebook

        copied: list[str] = []
        archives = None
        if media_from is not None:
            from ..media.store import MediaStore

            copied = _copy_media(source, MediaStore(media_from), self.media_store())
            if self.archive_dir is not None and source.count_archived():
                archives = Archives(ColdArchive(media_from / ARCHIVE_DIR), self._cold_archive())
        store, saver, conns = open_existing(source, cipher_of(source))
        try:
            theirs = ChatState(store, saver)
            mine = ChatState(
                self.store if store is not None else None,
                self.checkpointer if saver is not None else None,
            )
            report = copy_notebook(
                source, self.backend, progress, archives=archives, chat=(theirs, mine)
            )
        except BaseException:
            if copied:
                from ..media.store import media_paths_of

                in_use = media_paths_of(self.backend.iter_moments())
                self.media_store().remove_unused(copied, in_use)
            raise
        finally:
            for conn in conns:
                conn.close()
        if self._background_embedding and (semantic := self.semantic) is not None:
            semantic.notify()
        return report

    def delete_session(self, session_id: str) -> SessionDeletion:
        """Delete a session for good: its record, its moments with their full-text rows,
        concept-index entries and vectors, its cold-archive records, the media files no
        other moment uses, and its threads (their thread-map entries, session notebooks
        and checkpoints). Links and parents elsewhere that name it are left as they are."""
        from ..langgraph.stores import store_items, write_lock

        session = self.get_session(session_id)  # NotFound for an unknown one
        moments = self.backend.list_moments(session.id)
        archived = [e for e in self.backend.list_archived() if e.session == session.id]
        threads = [
            item.key
            for item in store_items(self.store, THREADS_NAMESPACE)
            if item.value.get("session_id") == session.id
        ]
        threads += [session.id]  # a thread may be named by its session
        with self.backend.atomic():
            self.backend.delete_session(session.id)
        self.facts.forget(session.id)  # issue 30: what its engine read goes with it
        if self._semantic is not None:
            self._semantic.forget([m.number for m in moments] + [e.number for e in archived])
        from ..media.store import media_paths_of

        gone = media_paths_of(moments)
        if gone:
            in_use = media_paths_of(self.backend.iter_moments())
            self.media_store().remove_unused(sorted(gone), in_use)
        if archived and self.archive_dir is not None:
            _drop_archived(self._cold_archive(), archived)
        with write_lock(self.store):
            for thread in threads:
                self.store.delete(THREADS_NAMESPACE, thread)
                for item in list(store_items(self.store, ("session", thread))):
                    self.store.delete(item.namespace, item.key)
        for thread in threads:
            self.checkpointer.delete_thread(thread)
        return SessionDeletion(
            session=session.id,
            moments=len(moments),
            archived=len(archived),
            media=sorted(gone),
            threads=threads[:-1],
        )

    # -- stats ------------------------------------------------------------------------------

    def stats(self) -> NotebookStats:
        sessions = self.sessions()
        firsts = [s.stats.first_activity for s in sessions if s.stats.first_activity]
        lasts = [s.stats.last_activity for s in sessions if s.stats.last_activity]
        return NotebookStats(
            sessions=len(sessions),
            moments=self.backend.count_moments(),
            concepts=self.backend.count_concepts(),
            tokens=sum(s.stats.tokens for s in sessions),
            bytes=sum(s.stats.bytes for s in sessions),
            first_activity=min(firsts, default=None),
            last_activity=max(lasts, default=None),
            backend=f"{self.backend.capabilities.name} at {self.backend.location}",
        )

    # -- compaction: rollups, lineage, the cold archive (seed 002) -----------------------------

    @property
    def archive_dir(self) -> Path | None:
        """``<home>/archive``, the cold archive (None for a notebook without a home)."""
        return None if self.home is None else self.home / ARCHIVE_DIR

    def _cold_archive(self, archive_dir: Path | None = None) -> ColdArchive:
        root = archive_dir or self.archive_dir
        if root is None:
            raise InvalidInput(
                "compaction needs an archive directory: open the notebook with a home "
                "(Notebook.open(home)) or pass archive_dir"
            )
        if self._archive is None or self._archive.root != root:
            self._archive = ColdArchive(root, cipher=cipher_of(self.backend))
        return self._archive

    def compact(
        self,
        *,
        now: datetime | None = None,
        dry_run: bool = False,
        summarizer: Summarizer | None = None,
        model: BaseChatModel | None = None,
        archive_dir: Path | None = None,
        progress: CompactProgress | None = None,
    ) -> CompactionReport:
        """Apply the age policy (``compaction:`` settings) as of ``now``: summarize faded
        moments into daily rollups, roll days into weeks and weeks into months, and move
        what the monthly rollups replace to the cold archive. Idempotent and safe to kill
        (see :mod:`agent_notebook.compaction.runner`). ``dry_run`` does the same on a copy
        and changes nothing. ``summarizer`` defaults to ``compaction.summarizer``: the
        extractive one, or with ``llm`` one over ``model`` that falls back to it."""
        from .exchange import copy_notebook

        when = now_utc() if now is None else _aware(now, "now")
        chosen = summarizer or self._compaction_summarizer(model)
        archive = self._cold_archive(archive_dir)
        settings = self.config.compaction
        files.ensure_private_dir(archive.root)
        with write_lock_file(archive.root / ".lock", 5.0):
            if not dry_run:
                self.settle()  # no moment archived before its session counted it
                compactor = Compactor(self.backend, archive, chosen, settings, self.tokens)
                try:
                    return compactor.run(when, progress=progress)
                finally:
                    if self._semantic is not None and compactor.archived_numbers:
                        self._semantic.forget(compactor.archived_numbers)
                    if self._background_embedding and (semantic := self.semantic) is not None:
                        semantic.notify()  # the new rollups wait for a vector
            with tempfile.TemporaryDirectory(prefix="compact-dry-run-") as scratch:
                copy = MemoryBackend()
                copy_notebook(self.backend, copy)
                offset = 0
                while page := self.backend.list_archived(offset, 1000):
                    copy.archive_moments(page)
                    offset += len(page)
                scratch_archive = ColdArchive(
                    Path(scratch), also=[archive.root], cipher=archive.cipher
                )
                compactor = Compactor(copy, scratch_archive, chosen, settings, self.tokens)
                report = compactor.run(when, progress=progress)
                return report.model_copy(update={"dry_run": True})

    def _compaction_summarizer(self, model: BaseChatModel | None) -> Summarizer:
        from ..compaction.summarize import ExtractiveSummarizer, LlmSummarizer

        extractive = ExtractiveSummarizer(self.tokens)
        if self.config.compaction.summarizer == "extractive":
            return extractive
        if model is None:
            raise InvalidInput(
                "compaction.summarizer is 'llm' but no chat model was given: pass model=, "
                "set compaction.model or chat.model in config.yaml, or use 'extractive'"
            )
        return LlmSummarizer(model, fallback=extractive, counter=self.tokens)

    def _archive_entry(self, moment_id: str) -> ArchiveEntry:
        found = self.backend.get_archived([check_moment_id(moment_id)])
        if not found:
            where = "is active: use get_moment" if self.backend.get_moment(moment_id) else ""
            raise NotFound(
                f"moment {moment_id} is not in the cold archive of {self.backend.location}"
                + (f"; it {where}" if where else "")
            )
        return found[0]

    def archived_record(self, moment_id: str, archive_dir: Path | None = None) -> bytes:
        """The archived moment's record, byte for byte as it was when archived (the JSON
        of :meth:`Moment.model_dump_json`), checked against its SHA-256."""
        entry = self._archive_entry(moment_id)  # the id is checked first
        return self._cold_archive(archive_dir).record(entry)

    def archived_moment(self, moment_id: str, archive_dir: Path | None = None) -> Moment:
        """An archived moment, read back from the cold archive by its id."""
        return Moment.model_validate_json(self.archived_record(moment_id, archive_dir))

    def archived_count(self) -> int:
        return self.backend.count_archived()

    def _with_tiers(
        self, hits: list[SearchHit], request: SearchRequest, include_archive: bool
    ) -> list[SearchHit]:
        """Tag rollups; with ``include_archive``, rank archived hits among the others by
        reciprocal rank (each list counts alike) and tag them."""
        tagged = [
            h.model_copy(update={"tier": "rollup", "explain": {**h.explain, "rollup": 1.0}})
            if h.moment.rollup is not None
            else h
            for h in hits
        ]
        if not include_archive:
            return tagged
        archive = self._cold_archive()
        found = archive.search(self.backend, request.query, request.where, request.limit)
        allowed = (
            None
            if request.concept is None
            else set(self.backend.archived_with_concept(normalize_concept(request.concept)))
        )
        k = self.config.search.rrf_k
        merged: list[tuple[float, int, SearchHit]] = []
        for rank, hit in enumerate(tagged, 1):
            merged.append(
                (
                    1 / (k + rank),
                    hit.moment.number,
                    hit.model_copy(update={"score": 1 / (k + rank)}),
                )
            )
        rank = 0
        for moment, raw in found:
            if moment.id in request.exclude or (allowed is not None and moment.id not in allowed):
                continue
            if request.min_score > 0 and not matches_words(moment.content.text, request.query):
                continue  # matched by stopwords only
            rank += 1
            explain = {"archived": 1.0, "lexical_rank": float(rank), "lexical_raw": raw}
            hit = SearchHit(moment=moment, score=1 / (k + rank), explain=explain, tier="archived")
            merged.append((hit.score, moment.number, hit))
        merged.sort(key=lambda item: (-item[0], item[1]))
        return [hit for _, _, hit in merged[: request.limit]]

    def _concept_with_archive(self, concept: str) -> ConceptEntry | None:
        """The concept's active moments and rollups, and the archived moments it had."""
        entry = self.backend.get_concept(concept)
        archived = self.backend.archived_with_concept(concept)
        if entry is None and not archived:
            return None
        return (entry or ConceptEntry(concept=concept)).model_copy(update={"archived": archived})


def _log_failure(future: Future[object]) -> None:
    if (err := future.exception()) is not None:
        log.error("work after a turn failed: %s", err, exc_info=err)


class _HeldWork:
    """The :meth:`Notebook.after_turn` work handed over during one running turn, held until
    the turn ends (then released, and closed: later work is submitted at once)."""

    def __init__(self, notebook: Notebook) -> None:
        self.notebook = notebook
        self._jobs: list[Callable[[], None]] = []
        self._open = True
        self._lock = threading.Lock()

    def hold(self, job: Callable[[], None]) -> bool:
        with self._lock:
            if self._open:
                self._jobs.append(job)
            return self._open

    def release(self) -> list[Callable[[], None]]:
        with self._lock:
            self._open = False
            jobs, self._jobs = self._jobs, []
            return jobs


#: The running turn's held work, seen by the threads the turn's run hands work to (LangGraph
#: and ``asyncio.to_thread`` copy the context).
_TURN_WORK: ContextVar[_HeldWork | None] = ContextVar("agent_notebook_turn_work", default=None)


def _apply(session: Session, changes: dict[str, Any], condensed_history: str | None) -> Session:
    for key, value in changes.items():
        setattr(session, key, value)
    if condensed_history is not None:
        session.context.condensed_history = condensed_history
    return session


def _find(items: Sequence[_Item], item_id: str, kind: str, session_id: str) -> _Item:
    for item in items:
        if item.id == item_id:
            return item
    raise NotFound(f"no {kind} {item_id} in session {session_id}")


def weak_match_hint(query: str, min_score: float) -> str:
    """What to say when a search found nothing relevant enough (every front end says it)."""
    return (
        f"nothing matches {query!r} well (minimum score {min_score:g}): try other words, "
        "or a lower minimum score (0 shows every match, however weak)"
    )


def _required(text: str, what: str, give: str) -> str:
    """``text`` unless it is empty or only blanks: a record of nothing is refused."""
    if not text.strip():
        raise InvalidInput(f"{what}: the text is empty; give {give}")
    return text


def _aware(when: datetime, name: str) -> datetime:
    if when.tzinfo is None or when.utcoffset() is None:
        raise InvalidInput(f"{name}: {when} has no timezone; pass an aware datetime (UTC)")
    return when


def check_query(query: str, what: str) -> str:
    """``query`` if it is within :data:`MAX_QUERY_CHARS`: the one cap of every front end."""
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(
            f"{what}: the query is {len(query):,} characters, over the limit of "
            f"{MAX_QUERY_CHARS:,}; shorten it to the words that matter (nothing was searched)"
        )
    return query


def _offset(offset: int) -> int:
    if offset < 0:
        raise InvalidInput(f"offset must be 0 or more, got {offset}")
    return offset


def _opt_limit(limit: int | None) -> int | None:
    if limit is not None and limit < 0:
        raise InvalidInput(f"limit must be 0 or more, got {limit}")
    return limit


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_SEARCH_LIMIT}, got {limit}")
    return limit


@dataclass(frozen=True, slots=True)
class SessionDeletion:
    """What :meth:`Notebook.delete_session` removed."""

    session: str
    moments: int
    archived: int
    media: list[str]
    threads: list[str]


def _drop_archived(archive: ColdArchive, entries: Sequence[ArchiveEntry]) -> None:
    """Take the records of ``entries`` out of their archive files (a file left empty is
    deleted); the other records of a file keep their bytes, so their entries stay valid."""
    ids_by_file: dict[str, set[str]] = {}
    for entry in entries:
        ids_by_file.setdefault(entry.file, set()).add(entry.id)
    for name, ids in ids_by_file.items():
        if not (archive.root / name).exists():
            continue
        kept = [line for mid, line in archive.records_of(name).items() if mid not in ids]
        if kept:
            archive.rewrite(name, kept)
        else:
            (archive.root / name).unlink(missing_ok=True)


def _copy_media(moments_of: StorageBackend, source: MediaStore, target: MediaStore) -> list[str]:
    """Copy the media files the moments of ``moments_of`` refer to from ``source`` to
    ``target`` (each checked against its SHA-256); returns the files new to ``target``."""
    from ..media.store import media_paths_of

    wanted = media_paths_of(moments_of.iter_moments())
    return target.copy_from(source, sorted(wanted)) if wanted else []
