"""LangGraph stores and checkpointers on a notebook's own storage, so an app's store, its
threads' checkpoints and the session notebooks share one file: LangGraph's ``SqliteStore``
and ``SqliteSaver`` on ``notebook.db`` for the SQLite backend, on ``store.db`` beside a YAML
notebook, and in-memory ones for in-memory notebooks.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from .errors import StorageError
from .privacy.crypto import Cipher
from .privacy.sealed_store import SealedSqliteStore
from .storage import StorageBackend
from .storage.files import ensure_private_dir, ensure_private_file, exclusive_lock
from .storage.sqlite.backend import database_file

STORE_FILE = "store.db"
CHECKPOINT_FILE = "checkpoints.db"
BUSY_TIMEOUT_MS = 60_000
LOCK_SUFFIX = ".lock"
LOCK_TIMEOUT_S = 60.0


def store_path(backend: StorageBackend) -> Path | None:
    """The SQLite file a store for ``backend`` lives in; None when it is in memory."""
    if not backend.capabilities.persistent:
        return None
    if backend.capabilities.name == "sqlite":
        return Path(backend.location)
    return Path(backend.location) / STORE_FILE


def open_store(
    backend: StorageBackend, cipher: Cipher | None = None
) -> tuple[BaseStore, sqlite3.Connection | None]:
    """A store for ``backend`` and the connection to close with it (None in memory); with
    ``cipher`` (encryption at rest) its values are sealed."""
    path = store_path(backend)
    if path is None:
        return InMemoryStore(), None
    ensure_private_file(path)
    try:
        # SqliteStore wants an autocommit connection; it runs its own BEGIN/COMMIT.
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        store = SqliteStore(conn) if cipher is None else SealedSqliteStore(conn, cipher=cipher)
        _setup(store)
    except sqlite3.Error as err:
        raise StorageError(f"{path}: cannot open the LangGraph store: {err}") from err
    return store, conn


class BoundedSqliteSaver(SqliteSaver):
    """LangGraph's ``SqliteSaver`` that keeps only the latest ``keep`` checkpoints of each
    thread (and their writes), so a thread's database footprint stays bounded however long
    it runs. Time travel reaches back ``keep`` checkpoints."""

    def __init__(self, conn: sqlite3.Connection, *, keep: int = 2) -> None:
        super().__init__(conn)
        self.keep = keep

    def put(self, config: RunnableConfig, *args: Any, **kwargs: Any) -> RunnableConfig:
        saved = super().put(config, *args, **kwargs)
        thread = saved["configurable"]
        with self.cursor() as cur:
            for table in ("checkpoints", "writes"):
                cur.execute(
                    f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = ? "
                    "AND checkpoint_id NOT IN (SELECT checkpoint_id FROM checkpoints "
                    "WHERE thread_id = ? AND checkpoint_ns = ? "
                    "ORDER BY checkpoint_id DESC LIMIT ?)",
                    (thread["thread_id"], thread["checkpoint_ns"]) * 2 + (self.keep,),
                )
        return saved


def open_checkpointer(
    backend: StorageBackend, path: Path | None = None, keep: int = 2
) -> tuple[BaseCheckpointSaver[Any], sqlite3.Connection | None]:
    """A checkpointer for ``backend``'s threads (on ``path`` when given) and its connection."""
    if path is None:
        path = store_path(backend)
        if path is not None and backend.capabilities.name != "sqlite":
            path = path.with_name(CHECKPOINT_FILE)
    if path is None:
        return InMemorySaver(), None
    path = Path(path).expanduser()
    ensure_private_dir(path.parent)
    ensure_private_file(path)  # created again if it was deleted
    try:
        conn = sqlite3.connect(path, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # Checkpoints are derived: every message is also a moment, written with the
        # notebook's own durability. In WAL mode NORMAL survives a crash of the process
        # and spares an fsync per checkpoint.
        conn.execute("PRAGMA synchronous = NORMAL")
        saver = BoundedSqliteSaver(conn, keep=keep)
        saver.setup()
    except sqlite3.Error as err:
        raise StorageError(f"{path}: cannot open the checkpoint database: {err}") from err
    return saver, conn


def write_lock(store: BaseStore) -> AbstractContextManager[None]:
    """A lock that serialises read-modify-write cycles on ``store`` across processes: a file
    lock beside a ``SqliteStore``'s database file. Stores that live in one process need
    none (callers also lock in-process); others get none, so only their writes' own
    atomicity holds."""
    if isinstance(store, SqliteStore) and (main := database_file(store.conn)) is not None:
        return exclusive_lock(main.with_name(main.name + LOCK_SUFFIX), LOCK_TIMEOUT_S)
    return nullcontext()


def _setup(store: SqliteStore) -> None:
    """Run the store's migrations; a second process doing the same at once may collide on
    the migration table, after which the tables exist and a retry finds them."""
    try:
        store.setup()
    except sqlite3.IntegrityError:
        store.is_setup = False
        store.setup()
