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
    from ..session import SessionNotebook
    from .facade import Notebook

#: How long closing waits for the TTL sweeper to stop (it only waits between sweeps).
SWEEPER_STOP_S = 10.0
#: One thread map writer at a time in this process (the store's write lock covers others).
_thread_lock = threading.Lock()


class LangGraphState:
    """One notebook's store and checkpointers (see :attr:`Notebook.store`)."""

    def __init__(
        self, notebook: Notebook, store_index: IndexConfig | Literal["default"] | None
    ) -> None:
        self.nb = notebook
        self.store_index_choice = store_index
        self._store: BaseStore | None = None
        self._checkpointers: dict[tuple[Path | None, int | None], BaseCheckpointSaver[Any]] = {}
        self._connections: list[Closeable] = []  # connections and pools, closed with it
        self._sweeping = False  # the store's TTL sweeper thread runs

    def checkpointer_for(self, chat: cfg.ChatSettings) -> BaseCheckpointSaver[Any]:
        key = (chat.checkpoints, chat.keep_checkpoints)
        if key not in self._checkpointers:
            from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

            from ..langgraph.stores import open_checkpointer

            backend = self.nb.backend
            saver, conn = open_checkpointer(backend, chat.checkpoints, chat.keep_checkpoints)
            if (cipher := backend.cipher) is not None:  # checkpoints hold the chat
                saver.serde = EncryptedSerializer(cipher.checkpoint_cipher(), saver.serde)
            self._checkpointers[key] = saver
            if conn is not None:
                self._connections.append(conn)
        return self._checkpointers[key]

    def set_up(self) -> None:
        if self.nb.backend.capabilities.langgraph_tables == "database":
            _ = self.store, self.checkpointer_for(self.nb.config.chat)

    @property
    def store(self) -> BaseStore:
        if self._store is None:
            from ..langgraph.store.index import default_store_index
            from ..langgraph.store.sqlite import StoreIndex
            from ..langgraph.stores import open_store

            cipher = self.nb.backend.cipher
            choice = self.store_index_choice
            index = StoreIndex(choice) if choice not in ("default", None) else None  # type: ignore[arg-type]
            semantic = choice == "default" and cipher is None and self.nb.wants_vectors
            self._store, conn = open_store(
                self.nb.backend,
                cipher,
                index=index,
                index_factory=(lambda: default_store_index(self.nb._vectors.resolve_embedder()))
                if semantic
                else None,
            )
            if conn is not None:
                self._connections.append(conn)
            if self._store.supports_ttl:  # SQLite's and PostgreSQL's (not the in-memory one)
                settings = self.nb.config.store
                self._store.ttl_config = {  # type: ignore[misc]  # a slot of BaseStore's
                    "default_ttl": settings.default_ttl_minutes,
                    "refresh_on_read": settings.refresh_on_read,
                    "sweep_interval_minutes": settings.sweep_interval_minutes,
                }
        return self._store

    def start_ttl_sweeper(self) -> bool:
        store = self.store
        if self._sweeping or not hasattr(store, "start_ttl_sweeper") or not store.supports_ttl:
            return False
        store.start_ttl_sweeper()  # every store.sweep_interval_minutes, on a daemon thread
        self._sweeping = True
        return True

    def sweep_ttl(self) -> int:
        store = self.store
        if not store.supports_ttl or not hasattr(store, "sweep_ttl"):
            return 0
        return int(store.sweep_ttl())

    def thread_session(self, thread_id: str) -> str:
        nb = self.nb
        if SESSION_ID_RE.fullmatch(thread_id) and nb.backend.get_session(thread_id):
            return thread_id
        item = self.store.get(THREADS_NAMESPACE, thread_id)
        if item is not None:
            return str(item.value["session_id"])
        from ..langgraph.stores import write_lock

        with _thread_lock, write_lock(self.store):
            item = self.store.get(THREADS_NAMESPACE, thread_id)  # another writer was first?
            if item is not None:
                return str(item.value["session_id"])
            session = nb.start_session(f"Thread {thread_id}")
            nb.link(session.id, f"thread:{thread_id}", relation="thread")
            self.store.put(THREADS_NAMESPACE, thread_id, {"session_id": session.id}, index=False)
            return session.id

    def session_notebook(self, thread_id: str) -> SessionNotebook:
        from ..session import SessionNotebook

        return SessionNotebook(
            self.store, thread_id, notebook=self.nb, budgets=self.nb.config.session_notebook
        )

    def session_notebook_threads(self) -> list[str]:
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
