"""LangGraph stores on a notebook's own storage, so an app's store and the session notebooks
share one file: LangGraph's ``SqliteStore`` on ``notebook.db`` for the SQLite backend, on
``store.db`` beside a YAML notebook, and ``InMemoryStore`` for in-memory notebooks.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from .errors import StorageError
from .storage import StorageBackend
from .storage.files import ensure_private_file, exclusive_lock

STORE_FILE = "store.db"
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


def open_store(backend: StorageBackend) -> tuple[BaseStore, sqlite3.Connection | None]:
    """A store for ``backend`` and the connection to close with it (None in memory)."""
    path = store_path(backend)
    if path is None:
        return InMemoryStore(), None
    ensure_private_file(path)
    try:
        # SqliteStore wants an autocommit connection; it runs its own BEGIN/COMMIT.
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        store = SqliteStore(conn)
        _setup(store)
    except sqlite3.Error as err:
        raise StorageError(f"{path}: cannot open the LangGraph store: {err}") from err
    return store, conn


def write_lock(store: BaseStore) -> AbstractContextManager[None]:
    """A lock that serialises read-modify-write cycles on ``store`` across processes: a file
    lock beside a ``SqliteStore``'s database file. Stores that live in one process need
    none (callers also lock in-process); others get none, so only their writes' own
    atomicity holds."""
    if isinstance(store, SqliteStore):
        rows = store.conn.execute("PRAGMA database_list").fetchall()
        main = next((file for _, name, file in rows if name == "main"), "")
        if main:
            return exclusive_lock(Path(main + LOCK_SUFFIX), LOCK_TIMEOUT_S)
    return nullcontext()


def _setup(store: SqliteStore) -> None:
    """Run the store's migrations; a second process doing the same at once may collide on
    the migration table, after which the tables exist and a retry finds them."""
    try:
        store.setup()
    except sqlite3.IntegrityError:
        store.is_setup = False
        store.setup()
