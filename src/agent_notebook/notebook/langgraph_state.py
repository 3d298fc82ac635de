"""The notebook's LangGraph state: its store (session notebooks, the thread map, an app's
own items) and its checkpointers, opened on first use and closed with the notebook, and the
map from a LangGraph thread to its long-term session."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .. import config as cfg
from ..model import SESSION_ID_RE, THREADS_NAMESPACE

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import BaseStore, IndexConfig

    from ..langgraph.stores import Closeable
    from .context import NotebookContext
    from .sessions import Sessions
    from .vectors import Vectors

#: How long closing waits for the TTL sweeper to stop (it only waits between sweeps).
SWEEPER_STOP_S = 10.0
#: One thread map writer at a time in this process (the store's write lock covers others).
_thread_lock = threading.Lock()


class LangGraphState:
    """One notebook's LangGraph store, checkpointers and thread map, ``nb.langgraph``:
    ``nb.langgraph.store``, ``nb.langgraph.thread_session(thread_id)``…"""

    def __init__(
        self,
        context: NotebookContext,
        sessions: Sessions,
        vectors: Vectors,
        store_index: IndexConfig | Literal["default"] | None,
    ) -> None:
        self.context = context
        self.sessions = sessions
        self.vectors = vectors
        self.store_index_choice = store_index
        self._store: BaseStore | None = None
        self._checkpointers: dict[tuple[Path | None, int | None], BaseCheckpointSaver[Any]] = {}
        self._connections: list[Closeable] = []  # connections and pools, closed with it
        self._sweeping = False  # the store's TTL sweeper thread runs

    @property
    def checkpointer(self) -> BaseCheckpointSaver[Any]:
        """LangGraph's ``SqliteSaver`` on this notebook's file (or ``chat.checkpoints``), sync
        and async (:class:`~agent_notebook.langgraph.checkpoint.sqlite.NotebookSaver`); it keeps
        every checkpoint unless ``chat.keep_checkpoints`` says how many of a thread's to keep."""
        return self.checkpointer_for(self.context.config.chat)

    def checkpointer_for(self, chat: cfg.ChatSettings) -> BaseCheckpointSaver[Any]:
        """The checkpointer ``chat`` settings ask for, opened once and closed with the notebook."""
        key = (chat.checkpoints, chat.keep_checkpoints)
        if key not in self._checkpointers:
            from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

            from ..langgraph.stores import open_checkpointer

            backend = self.context.backend
            saver, conn = open_checkpointer(backend, chat.checkpoints, chat.keep_checkpoints)
            if (cipher := backend.cipher) is not None:  # checkpoints hold the chat
                saver.serde = EncryptedSerializer(cipher.checkpoint_cipher(), saver.serde)
            self._checkpointers[key] = saver
            if conn is not None:
                self._connections.append(conn)
        return self._checkpointers[key]

    def set_up(self) -> None:
        """Make the tables of :attr:`store` and :attr:`checkpointer` now when they live in a
        database shared with other servers (at start-up, so no request waits: issue 28)."""
        if self.context.backend.capabilities.langgraph_tables == "database":
            _ = self.store, self.checkpointer

    @property
    def store(self) -> BaseStore:
        """A LangGraph ``BaseStore`` in this notebook's own file (``SqliteStore`` on
        ``notebook.db``, sync and async) for your LangGraph app and the session notebooks;
        semantic: ``search(ns, query=...)`` ranks by meaning (see ``store_index``)."""
        if self._store is None:
            from ..langgraph.store.index import default_store_index
            from ..langgraph.store.sqlite import StoreIndex
            from ..langgraph.stores import open_store

            cipher = self.context.backend.cipher
            choice = self.store_index_choice
            index = StoreIndex(choice) if choice not in ("default", None) else None  # type: ignore[arg-type]
            semantic = choice == "default" and cipher is None and self.vectors.wants_vectors
            self._store, conn = open_store(
                self.context.backend,
                cipher,
                index=index,
                index_factory=(lambda: default_store_index(self.vectors.resolve_embedder()))
                if semantic
                else None,
            )
            if conn is not None:
                self._connections.append(conn)
            if self._store.supports_ttl:  # SQLite's and PostgreSQL's (not the in-memory one)
                settings = self.context.config.store
                self._store.ttl_config = {  # type: ignore[misc]  # a slot of BaseStore's
                    "default_ttl": settings.default_ttl_minutes,
                    "refresh_on_read": settings.refresh_on_read,
                    "sweep_interval_minutes": settings.sweep_interval_minutes,
                }
        return self._store

    def start_ttl_sweeper(self) -> bool:
        """Delete the store's expired items every ``store.sweep_interval_minutes``, on a
        thread stopped when the notebook closes (long-lived processes: ``serve``, ``mcp``);
        False when it already runs or the store has no TTL (a notebook in memory)."""
        store = self.store
        if self._sweeping or not hasattr(store, "start_ttl_sweeper") or not store.supports_ttl:
            return False
        store.start_ttl_sweeper()  # every store.sweep_interval_minutes, on a daemon thread
        self._sweeping = True
        return True

    def sweep_ttl(self) -> int:
        """Delete the store's expired items now (see ``store:`` in ``config.yaml``); how many."""
        store = self.store
        if not store.supports_ttl or not hasattr(store, "sweep_ttl"):
            return 0
        return int(store.sweep_ttl())

    def thread_session(self, thread_id: str) -> str:
        """The long-term session of a LangGraph thread: the thread id when it names one, else
        the session started for it on first use, kept in :attr:`store` under ``("threads",)``."""
        if SESSION_ID_RE.fullmatch(thread_id) and self.context.backend.get_session(thread_id):
            return thread_id
        item = self.store.get(THREADS_NAMESPACE, thread_id)
        if item is not None:
            return str(item.value["session_id"])
        from ..langgraph.stores import write_lock

        with _thread_lock, write_lock(self.store):
            item = self.store.get(THREADS_NAMESPACE, thread_id)  # another writer was first?
            if item is not None:
                return str(item.value["session_id"])
            session = self.sessions.start(f"Thread {thread_id}")
            self.sessions.link(session.id, f"thread:{thread_id}", "thread", "")
            self.store.put(THREADS_NAMESPACE, thread_id, {"session_id": session.id}, index=False)
            return session.id

    def knows_thread(self, thread_id: str) -> bool:
        """Whether ``thread_id`` is a registered thread or names a session."""
        if self.store.get(THREADS_NAMESPACE, thread_id) is not None:
            return True
        return self.sessions.exists(thread_id)

    def threads(self, offset: int, limit: int) -> list[tuple[str, str]]:
        """(thread id, session id) of the registered threads, oldest first."""
        items = self.store.search(THREADS_NAMESPACE, limit=limit, offset=offset)
        return [(item.key, str(item.value["session_id"])) for item in items]

    def forget_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints, its session notebook and its entry in the thread
        map; its turns stay in the notebook as moments of its session."""
        from ..langgraph.stores import write_lock
        from ..session.session_notebook import KEY, NAMESPACE_ROOT

        self.checkpointer.delete_thread(thread_id)
        with write_lock(self.store):  # the notebook's own items: its write
            self.store.delete((NAMESPACE_ROOT, thread_id), KEY)
            self.store.delete(THREADS_NAMESPACE, thread_id)

    def session_notebook_threads(self) -> list[str]:
        """The threads that have a session notebook, sorted."""
        from ..langgraph.stores import thread_ids

        return sorted(thread_ids(self.store, None))

    def close(self) -> None:
        if self._sweeping and self._store is not None:
            self._store.stop_ttl_sweeper(timeout=SWEEPER_STOP_S)  # type: ignore[attr-defined]
            self._sweeping = False
        for conn in self._connections:
            conn.close()
        self._connections.clear()
        self._store = None
        self._checkpointers.clear()
