"""LangGraph's store and checkpointer for a PostgreSQL notebook, in its database and schema,
so that every server on the database shares the threads, the session notebooks, the thread
map and an app's items.

* Each gets a pool of its own, with the backend's URL, schema and bounds, and the row
  factory LangGraph's Postgres classes want (``dict_row``, no prepared statements).
* LangGraph's migrations (``setup()``) run under an advisory lock, so two servers starting
  at once do not collide on the migration tables.
* :func:`store_lock` serialises read-modify-write cycles on the store across servers with
  an advisory lock, as the file lock does beside a SQLite store.
* The store has no semantic index: ``PostgresStore``'s needs pgvector, which is not
  required here. Asking for one, or searching with a ``query``, is a clear error.
* With encryption at rest the store's values are sealed as on SQLite
  (:class:`~agent_notebook.privacy.sealed_store.Sealing`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Final

from langgraph.store.base import Op, Result, SearchOp
from langgraph.store.postgres import PostgresStore
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from .errors import InvalidInput, StorageError
from .pg_saver import NotebookPostgresSaver, rewrite_rows
from .privacy.crypto import Cipher
from .privacy.sealed_store import Sealing, resealed_value

__all__ = ["NotebookPostgresStore", "SealedPostgresStore", "open_pool", "store_lock"]

#: The advisory lock class of LangGraph's migrations and of the store's writers (the
#: schema's hash is the other key).
SETUP_LOCK: Final = 0x4E53  # "NS"
STORE_LOCK: Final = 0x4E57  # "NW"
#: The store's vectors (its semantic index), beside LangGraph's tables.
VECTOR_TABLE: Final = "store_index_vectors"
NO_INDEX: Final = (
    "the store of a PostgreSQL notebook has no semantic index (LangGraph's PostgresStore "
    "needs the pgvector extension, which this notebook does not require)"
)


def open_pool(backend: Any) -> ConnectionPool[Any]:
    """A pool on ``backend``'s database and schema, with its bounds, for LangGraph."""
    kwargs = {**backend.connect_kwargs, "prepare_threshold": 0, "row_factory": dict_row}
    pool: ConnectionPool[Any] = ConnectionPool(
        backend.url,
        min_size=1,
        max_size=backend.pool_size,
        kwargs=kwargs,
        timeout=backend.timeout_s,
        open=False,
    )
    try:
        pool.open(wait=True, timeout=backend.timeout_s)
    except Exception as err:
        pool.close()
        raise StorageError(f"{backend.location}: cannot open LangGraph's pool: {err}") from err
    return pool


@contextmanager
def advisory_lock(pool: ConnectionPool[Any], kind: int) -> Iterator[None]:
    """Hold ``kind``'s advisory lock of the pool's schema (one holder across servers)."""
    with pool.connection() as conn:
        conn.execute("SELECT pg_advisory_lock(%s, hashtext(current_schema()))", (kind,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s, hashtext(current_schema()))", (kind,))


class NotebookPostgresStore(PostgresStore):
    """``PostgresStore`` on a pool, without a semantic index, ``abatch`` on a worker thread."""

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        super().__init__(pool)
        self.pool = pool

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if any(isinstance(op, SearchOp) and op.query for op in ops):
            raise InvalidInput(
                f"store.search(query=...): {NO_INDEX}; search by namespace and filter, "
                "or keep the notebook in SQLite for a semantic store"
            )
        return super().batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))


class SealedPostgresStore(Sealing, NotebookPostgresStore):
    def __init__(self, pool: ConnectionPool[Any], *, cipher: Cipher) -> None:
        super().__init__(pool)
        self.cipher = cipher


def open_postgres_store(backend: Any, cipher: Cipher | None) -> NotebookPostgresStore:
    pool = open_pool(backend)
    store = (
        NotebookPostgresStore(pool) if cipher is None else SealedPostgresStore(pool, cipher=cipher)
    )
    with advisory_lock(pool, SETUP_LOCK):
        store.setup()
    return store


def open_postgres_saver(backend: Any, keep: int | None) -> NotebookPostgresSaver:
    pool = open_pool(backend)
    saver = NotebookPostgresSaver(pool, keep=keep)
    with advisory_lock(pool, SETUP_LOCK):
        saver.setup()
    return saver


#: LangGraph's tables that hold text: what a purge after a redaction rewrites.
TEXT_TABLES: Final = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "store")


def vacuum_full(pool: ConnectionPool[Any], tables: Iterable[str] = TEXT_TABLES) -> None:
    """Rewrite ``tables`` (``VACUUM FULL``) so that scrubbed rows' old versions leave the
    data files; the WAL and backups keep them until recycled (see the README)."""
    with pool.connection() as conn:
        for table in tables:
            conn.execute(f"VACUUM FULL {table}")


def store_lock(store: NotebookPostgresStore) -> AbstractContextManager[None]:
    """Serialise a read-modify-write cycle on ``store`` across every server."""
    return advisory_lock(store.pool, STORE_LOCK)


def reseal_store(pool: ConnectionPool[Any], cipher: Cipher, batch: int = 500) -> int:
    """Seal every store value under ``cipher``'s key (a key rotation; plain values too), in
    batches (:func:`~agent_notebook.pg_saver.rewrite_rows`): run it again to finish a killed
    one. The vectors of the values go: a sealed store has no semantic index. Returns how
    many values were sealed again."""

    def reseal(_: Any, row: dict[str, Any]) -> dict[str, Any] | None:
        namespace = tuple(row["prefix"].split("."))
        new = resealed_value(cipher, namespace, row["key"], row["value"])
        return None if new is None else {"value": Jsonb(new)}

    done = rewrite_rows(pool, "store", ("prefix", "key"), ("value",), reseal, batch)
    with pool.connection() as conn:
        found = conn.execute("SELECT to_regclass(%s) AS t", (VECTOR_TABLE,)).fetchone()
        if found is not None and found["t"] is not None:
            conn.execute(f"DELETE FROM {VECTOR_TABLE}")
    return done
