"""LangGraph stores and checkpointers on a notebook's own storage, so an app's store, its
threads' checkpoints and the session notebooks share one file: LangGraph's ``SqliteStore``
and ``SqliteSaver`` (as :class:`NotebookStore` and :class:`NotebookSaver`, sync and async)
on ``notebook.db`` for the SQLite backend, on ``store.db`` beside a YAML notebook, and
in-memory ones for in-memory notebooks. A PostgreSQL notebook has LangGraph's
``PostgresStore`` and ``PostgresSaver`` in its own database and schema (:mod:`.store.postgres`),
shared by every server on it.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore, Item
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from ..core.crypto import Cipher
from ..core.files import (
    ensure_private_dir,
    ensure_private_file,
    exclusive_lock,
    register_live_database,
)
from ..errors import InvalidInput, StorageError
from ..storage import StorageBackend
from ..storage.sqlite.maintenance import database_file
from .checkpoint.sqlite import NotebookSaver
from .store.index import lazy_index_config
from .store.reserved import notebook_writes
from .store.sealed import SealedSqliteStore
from .store.sqlite import IndexFactory, NotebookStore, StoreIndex
from .store.vectors import IndexedStore

STORE_FILE = "store.db"
CHECKPOINT_FILE = "checkpoints.db"
BUSY_TIMEOUT_MS = 60_000
LOCK_SUFFIX = ".lock"
LOCK_TIMEOUT_S = 60.0
#: Where the store maps a thread id to its long-term session: key thread id, value
#: ``{"session_id": …}``.
PAGE = 500


class Closeable(Protocol):
    """What the notebook closes with a store or checkpointer: a connection or a pool."""

    def close(self) -> None: ...


def in_database(backend: StorageBackend) -> bool:
    """Whether ``backend``'s store and threads live in its database server's tables."""
    return backend.capabilities.langgraph_tables == "database"


def store_path(backend: StorageBackend) -> Path | None:
    """The SQLite file a store for ``backend`` lives in; None when it is in memory or in a
    PostgreSQL database (see :func:`in_database`)."""
    if not backend.capabilities.persistent or in_database(backend):
        return None
    if backend.capabilities.langgraph_tables == "own_file":
        return Path(backend.location)
    return Path(backend.location) / STORE_FILE


def open_store(
    backend: StorageBackend,
    cipher: Cipher | None = None,
    *,
    index: StoreIndex | None = None,
    index_factory: IndexFactory | None = None,
) -> tuple[BaseStore, Closeable | None]:
    """A store for ``backend`` and the connection to close with it (None in memory); with
    ``cipher`` (encryption at rest) its values are sealed and it has no semantic index.
    ``index`` is LangGraph's index config; ``index_factory`` makes one when first needed
    (a PostgreSQL notebook's store keeps its vectors in its schema: see :mod:`.store.postgres`)."""
    if cipher is not None and index is not None:
        raise InvalidInput(
            "the store of an encrypted notebook cannot have a semantic index: vectors of its "
            "values would give their meaning away; open it without store_index"
        )
    if in_database(backend):
        from .store.postgres import open_postgres_store

        pg_store = open_postgres_store(backend, cipher, index=index, index_factory=index_factory)
        return pg_store, pg_store.pool
    path = store_path(backend)
    if path is None:
        if index is None and index_factory is not None:
            return InMemoryStore(index=lazy_index_config(index_factory)), None
        return InMemoryStore(index=index.config if index is not None else None), None
    ensure_private_file(path)
    try:
        # SqliteStore wants an autocommit connection; it runs its own BEGIN/COMMIT.
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        register_live_database(path)
        store = (
            NotebookStore(conn, index=index, index_factory=index_factory)
            if cipher is None
            else SealedSqliteStore(conn, cipher=cipher)
        )
        _setup(store)
    except sqlite3.Error as err:
        raise StorageError(f"{path}: cannot open the LangGraph store: {err}") from err
    return store, conn


def open_checkpointer(
    backend: StorageBackend, path: Path | None = None, keep: int | None = None
) -> tuple[BaseCheckpointSaver[Any], Closeable | None]:
    """A checkpointer for ``backend``'s threads (on ``path`` when given) and its connection:
    a :class:`NotebookSaver` keeping every checkpoint, or the latest ``keep`` of a thread;
    a PostgreSQL notebook's is in its database (without ``path``)."""
    if path is None and in_database(backend):
        from .store.postgres import open_postgres_saver

        pg_saver = open_postgres_saver(backend, keep)
        return pg_saver, pg_saver.pool
    if path is None:
        path = checkpoint_path(backend)
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
        register_live_database(path)
        saver = NotebookSaver(conn, keep=keep)
        saver.setup()
    except sqlite3.Error as err:
        raise StorageError(f"{path}: cannot open the checkpoint database: {err}") from err
    return saver, conn


def checkpoint_path(backend: StorageBackend) -> Path | None:
    """The SQLite file ``backend``'s checkpoints live in by default; None in memory."""
    path = store_path(backend)
    if path is not None and backend.capabilities.langgraph_tables != "own_file":
        path = path.with_name(CHECKPOINT_FILE)
    return path


def open_existing(
    backend: StorageBackend, cipher: Cipher | None = None
) -> tuple[BaseStore | None, BaseCheckpointSaver[Any] | None, list[Closeable]]:
    """The store and the checkpointer of ``backend`` when its files hold them (nothing is
    created for a notebook that has none), and the connections to close after."""
    store = saver = None
    conns: list[Closeable] = []
    if in_database(backend):  # LangGraph's setup() is idempotent: nothing of it is lost
        store, conn = open_store(backend, cipher)
        saver, pool = open_checkpointer(backend)
        return store, saver, [c for c in (conn, pool) if c is not None]
    path = store_path(backend)
    if path is not None and _has_table(path, "store"):
        store, conn = open_store(backend, cipher)
        conns += [conn] if conn is not None else []
    path = checkpoint_path(backend)
    if path is not None and _has_table(path, "checkpoints"):
        saver, conn = open_checkpointer(backend)
        conns += [conn] if conn is not None else []
    return store, saver, conns


def _has_table(path: Path, table: str) -> bool:
    if not path.is_file():
        return False
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            found = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return found is not None


@contextmanager
def write_lock(store: BaseStore) -> Iterator[None]:
    """A lock that serialises read-modify-write cycles on ``store`` across processes: a file
    lock beside a ``SqliteStore``'s database file. Stores that live in one process need
    none (callers also lock in-process); others get none, so only their writes' own
    atomicity holds. Within it the notebook writes its own items: the reserved namespaces
    may be written (:mod:`.store.reserved`)."""
    with _cross_process_lock(store), notebook_writes():
        yield


def _cross_process_lock(store: BaseStore) -> AbstractContextManager[None]:
    if isinstance(store, SqliteStore) and (main := database_file(store.conn)) is not None:
        return exclusive_lock(main.with_name(main.name + LOCK_SUFFIX), LOCK_TIMEOUT_S)
    if type(store).__module__.endswith(".store.postgres"):  # not imported for other stores
        from .store.postgres import store_lock

        lock: AbstractContextManager[None] = store_lock(store)  # type: ignore[arg-type]
        return lock
    return nullcontext()


def _setup(store: SqliteStore) -> None:
    """Run the store's migrations; a second process doing the same at once may collide on
    the migration table, after which the tables exist and a retry finds them."""
    try:
        store.setup()
    except sqlite3.IntegrityError:
        store.is_setup = False
        store.setup()


# -- carrying the chat state from one notebook to another (export, import) ---------------------

#: Renames a store item (namespace, key, value) for the target.
ItemRename = Callable[
    [tuple[str, ...], str, dict[str, Any]], tuple[tuple[str, ...], str, dict[str, Any]]
]


def store_items(store: BaseStore, prefix: tuple[str, ...] = ()) -> Iterator[Item]:
    """Every item of ``store`` under ``prefix``, a page at a time."""
    offset = 0
    while page := store.search(prefix, limit=PAGE, offset=offset):
        yield from (item for item in page if isinstance(item, Item))
        offset += len(page)


def thread_ids(store: BaseStore | None, saver: BaseCheckpointSaver[Any] | None) -> set[str]:
    """The threads ``store`` (its session notebooks) and ``saver`` hold something of."""
    found = set()
    if store is not None:
        for namespace in store.list_namespaces(prefix=("session",), max_depth=2, limit=10**9):
            if len(namespace) == 2:
                found.add(namespace[1])
    if saver is not None:
        found |= {t.config["configurable"]["thread_id"] for t in saver.list(None)}
    return found


def copy_store_items(
    source: BaseStore, target: BaseStore, rename: ItemRename
) -> tuple[int, list[str]]:
    """Put every item of ``source`` into ``target`` as ``rename`` says; an item the target
    holds with the same value is skipped, one it holds with another value is kept (the
    target's). Returns the items written and the names of those kept."""
    written, kept = 0, []
    with write_lock(target):
        for item in store_items(source):
            namespace, key, value = rename(item.namespace, item.key, item.value)
            there = target.get(namespace, key)
            if there is None:
                # an item the source indexed is indexed by the target too (its embedder,
                # its fields), where the target has an index; others stay unindexed
                indexed = isinstance(source, IndexedStore) and source.is_indexed(
                    item.namespace, item.key
                )
                target.put(namespace, key, value, index=None if indexed else False)
                written += 1
            elif there.value != value:
                kept.append("/".join((*namespace, key)))
    return written, kept


def copy_checkpoints(
    source: BaseCheckpointSaver[Any],
    target: BaseCheckpointSaver[Any],
    threads: Mapping[str, str],
    session: Callable[[str], str],
) -> int:
    """Copy every checkpoint of ``source`` (and its pending writes), oldest first, to
    ``target``, under the thread names of ``threads``; the ``notebook`` channel's
    ``session_id`` goes through ``session``. A checkpoint already there is skipped.
    Returns how many were written."""
    by_thread: dict[str, list[Any]] = defaultdict(list)
    for snapshot in source.list(None):
        by_thread[snapshot.config["configurable"]["thread_id"]].append(snapshot)
    written = 0
    for thread, snapshots in by_thread.items():
        name = threads.get(thread, thread)
        for snapshot in reversed(snapshots):  # list() gives the newest first
            where = snapshot.config["configurable"]
            here = {"thread_id": name, "checkpoint_ns": where.get("checkpoint_ns", "")}
            mine: RunnableConfig = {
                "configurable": {**here, "checkpoint_id": where["checkpoint_id"]}
            }
            if target.get_tuple(mine) is not None:
                continue
            parent = (snapshot.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            checkpoint = _renamed_checkpoint(snapshot.checkpoint, session)
            base: RunnableConfig = {
                "configurable": {**here, **({"checkpoint_id": parent} if parent else {})}
            }
            saved = target.put(
                base, checkpoint, snapshot.metadata, checkpoint.get("channel_versions", {})
            )
            writes: dict[str, list[tuple[str, Any]]] = defaultdict(list)
            for task_id, channel, value in snapshot.pending_writes or ():
                writes[task_id].append((channel, value))
            for task_id, items in writes.items():
                target.put_writes(saved, items, task_id)
            written += 1
    return written


def _renamed_checkpoint(checkpoint: Any, session: Callable[[str], str]) -> Any:
    values = checkpoint.get("channel_values", {})
    notes = values.get("notebook")
    if not isinstance(notes, dict) or not isinstance(notes.get("session_id"), str):
        return checkpoint
    renamed = {**notes, "session_id": session(notes["session_id"])}
    return {**checkpoint, "channel_values": {**values, "notebook": renamed}}
