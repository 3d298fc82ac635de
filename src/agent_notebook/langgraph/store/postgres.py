"""LangGraph's store and checkpointer for a PostgreSQL notebook, in its database and schema,
so that every server on the database shares the threads, the session notebooks, the thread
map and an app's items.

* Each gets a pool of its own, with the backend's URL, schema and bounds, and the row
  factory LangGraph's Postgres classes want (``dict_row``, no prepared statements).
* LangGraph's migrations (``setup()``) run under an advisory lock, taken without waiting
  inside a statement and without ``CREATE INDEX CONCURRENTLY``, so any number of servers
  can start at once (:mod:`.storage.postgres.setup`); a server makes them at start-up, not on first use.
* :func:`store_lock` serialises read-modify-write cycles on the store across servers with
  an advisory lock, as the file lock does beside a SQLite store.
* The store is semantic without pgvector (which ``PostgresStore``'s own index needs and this
  notebook does not require): the vectors are ``bytea`` rows of :data:`VECTOR_TABLE` in the
  schema, one per indexed field of an item, written with their item in one transaction (a
  put replaces them, a delete or a TTL sweep removes them: a foreign key cascades), and a
  search with a ``query`` scores an in-process copy of them that follows a change log
  (:mod:`.vectors`, shared with the SQLite store: the same lazy index,
  model-change re-embedding, cache and scores). Which texts of a value are embedded is
  ``PostgresStore``'s own choice (``fields``, ``put(index=[...])``).
* The change log's ``seq`` comes from a sequence, which transactions may commit out of
  order; so every statement writing the store or its vectors first takes the schema's
  :data:`LOG_LOCK` (a statement trigger, held to the commit): writers of the store commit
  one at a time, in ``seq`` order, and a reader that has seen seq N never later finds a
  change below it. Taken before any row lock, it cannot deadlock with them.
* With encryption at rest the store's values are sealed as on SQLite
  (:class:`~agent_notebook.langgraph.store.sealed.Sealing`), and it has no index.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Final, cast

from langgraph.store.base import PutOp, SearchItem, SearchOp
from langgraph.store.postgres import PostgresStore
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from ...core.crypto import Cipher
from ...errors import StorageError
from ...storage.postgres.pool import MappedPool
from ...storage.postgres.setup import SETUP_LOCK, plain, setup_connection, where
from ..checkpoint.postgres import NotebookPostgresSaver, rewrite_rows
from ..private import (
    pg_store_decode_namespace,
    pg_store_ensure_index_config,
    pg_store_json_loads,
    pg_store_namespace_text,
    pg_store_search_item,
)
from .filters import as_conditions, filter_condition
from .sealed import Sealing, resealed_value
from .vector_cache import HORIZON_TABLE, LOG_KEPT, LOG_TABLE, PRUNE_EVERY, Item
from .vectors import MODEL_TABLE, IndexedStore, IndexFactory, StoreIndex, to_blob

__all__ = [
    "SETUP_LOCK",
    "VECTOR_TABLE",
    "NotebookPostgresStore",
    "SealedPostgresStore",
    "open_pool",
    "reseal_store",
    "store_lock",
]

#: The advisory lock class of the store's writers (the schema's hash is the other key); the
#: migrations' is :data:`~.storage.postgres.setup.SETUP_LOCK`.
STORE_LOCK: Final = 0x4E57  # "NW"
LOG_LOCK: Final = 0x4E4C  # "NL"
#: The store's vectors (its semantic index), beside LangGraph's tables.
VECTOR_TABLE: Final = "store_index_vectors"
VECTOR_TABLES: Final = (
    f"""CREATE TABLE IF NOT EXISTS {VECTOR_TABLE} (
        prefix text NOT NULL,
        key text NOT NULL,
        field_name text NOT NULL,
        embedding bytea NOT NULL,             -- float32, little-endian
        PRIMARY KEY (prefix, key, field_name),
        FOREIGN KEY (prefix, key) REFERENCES store (prefix, key) ON DELETE CASCADE
    )""",
    # An embedding can be inverted to approximate text: ANALYZE keeps no sample of it
    # (a redaction's VACUUM never reaches pg_statistic).
    f"ALTER TABLE {VECTOR_TABLE} ALTER COLUMN embedding SET STATISTICS 0",
    f"CREATE TABLE IF NOT EXISTS {MODEL_TABLE} (model_id text NOT NULL)",
    # the change log the in-process caches follow (see the module's docstring)
    f"""CREATE TABLE IF NOT EXISTS {LOG_TABLE} (
        seq bigserial PRIMARY KEY, prefix text NOT NULL, key text NOT NULL
    )""",
    f"CREATE TABLE IF NOT EXISTS {HORIZON_TABLE} (seq bigint NOT NULL)",
    f"INSERT INTO {HORIZON_TABLE} SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM {HORIZON_TABLE})",
    f"""CREATE OR REPLACE FUNCTION store_writes_in_order() RETURNS trigger
    LANGUAGE plpgsql AS $$ BEGIN
        PERFORM pg_advisory_xact_lock({LOG_LOCK}, hashtext(current_schema()));
        RETURN NULL;
    END $$""",
    *(
        f"CREATE OR REPLACE TRIGGER {table}_writes_in_order BEFORE INSERT OR UPDATE OR DELETE "
        f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION store_writes_in_order()"
        for table in ("store", VECTOR_TABLE)
    ),
    f"""CREATE OR REPLACE FUNCTION store_vector_logged() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
        newest bigint;
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            INSERT INTO {LOG_TABLE} (prefix, key) VALUES (OLD.prefix, OLD.key)
            RETURNING seq INTO newest;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            INSERT INTO {LOG_TABLE} (prefix, key) VALUES (NEW.prefix, NEW.key)
            RETURNING seq INTO newest;
        END IF;
        IF newest % {PRUNE_EVERY} = 0 THEN
            UPDATE {HORIZON_TABLE} SET seq = greatest(seq, newest - {LOG_KEPT});
            DELETE FROM {LOG_TABLE} WHERE seq <= newest - {LOG_KEPT};
        END IF;
        RETURN NULL;
    END $$""",
    f"CREATE OR REPLACE TRIGGER {VECTOR_TABLE}_logged AFTER INSERT OR UPDATE OR DELETE "
    f"ON {VECTOR_TABLE} FOR EACH ROW EXECUTE FUNCTION store_vector_logged()",
)
#: ``(prefix, key) IN`` these pairs: two arrays.
_PAIRS: Final = "(SELECT * FROM unnest(%s::text[], %s::text[]))"
_DROP_VECTORS: Final = f"DELETE FROM {VECTOR_TABLE} WHERE (prefix, key) IN {_PAIRS}"
_PUT_VECTORS: Final = (
    f"INSERT INTO {VECTOR_TABLE} (prefix, key, field_name, embedding) "
    "VALUES (%s, %s, %s, %s) ON CONFLICT (prefix, key, field_name) "
    "DO UPDATE SET embedding = excluded.embedding"
)


def open_pool(backend: Any) -> ConnectionPool[Any]:
    """A pool on ``backend``'s database and schema, with its bounds, for LangGraph; a
    database that cannot be reached or does not answer in time is a StorageError
    (:class:`~agent_notebook.storage.postgres.pool.MappedPool`)."""
    kwargs = {**backend.connect_kwargs, "prepare_threshold": 0, "row_factory": dict_row}
    pool: ConnectionPool[Any] = MappedPool(
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
    """Hold ``kind``'s advisory lock of the pool's schema (one holder across servers),
    waiting at most the pool's timeout for it (then a StorageError: a 503)."""
    import psycopg

    with pool.connection() as conn:
        try:
            # lock_timeout bounds the wait; SET LOCAL ends with the transaction, the
            # session-level lock it took does not.
            with conn.transaction():
                conn.execute(f"SET LOCAL lock_timeout = {max(1, int(pool.timeout * 1000))}")
                conn.execute("SELECT pg_advisory_lock(%s, hashtext(current_schema()))", (kind,))
        except psycopg.errors.LockNotAvailable as err:
            raise StorageError(
                f"{where(pool)}: waited {pool.timeout:.0f} s for the store's write lock, which "
                "another server holds; retry"
            ) from err
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s, hashtext(current_schema()))", (kind,))


class _PlainStore(PostgresStore):
    """LangGraph's store migrations without ``CONCURRENTLY`` (see :mod:`.storage.postgres.setup`)."""

    MIGRATIONS = plain(PostgresStore.MIGRATIONS)


class NotebookPostgresStore(IndexedStore, PostgresStore):
    """``PostgresStore`` on a pool, with a semantic index in ``bytea`` (made when first
    needed), ``abatch`` on a worker thread."""

    def _ensure_config(self, config: dict[str, Any]) -> tuple[Any, Any]:
        return pg_store_ensure_index_config(config)

    def __init__(
        self,
        pool: ConnectionPool[Any],
        *,
        index: StoreIndex | None = None,
        index_factory: IndexFactory | None = None,
    ) -> None:
        super().__init__(pool)
        self.pool = pool
        self._set_up = False
        self._init_index(index, index_factory)

    def setup(self) -> None:
        """LangGraph's migrations (without its pgvector ones), then the vector tables, under
        the schema's setup lock, on a connection of their own (:mod:`.storage.postgres.setup`); once per
        store (an index made later needs no other table)."""
        if self._set_up:
            return
        with setup_connection(self.pool, "LangGraph's store tables") as conn:
            _PlainStore(conn).setup()  # no index config: no pgvector migrations
            for statement in VECTOR_TABLES:
                conn.execute(statement)
        self._set_up = True

    # -- puts: the item and its vectors in one transaction -------------------------------------

    def _batch_put_ops(self, put_ops: Sequence[tuple[int, PutOp]], cur: Any) -> None:
        # With an index, LangGraph's request lists the texts to embed (its fields, or the
        # put's index=[...]); its pgvector statement is not used.
        queries, request = self._prepare_batch_PUT_queries(put_ops)
        vectors: list[tuple[str, str, str, bytes]] = []
        if request is not None:
            texts = request[1]
            embedded = self.embeddings.embed_documents([text for *_, text in texts])
            vectors = [
                (ns, key, path, to_blob(vector))
                for (ns, key, path, _), vector in zip(texts, embedded, strict=True)
            ]
        items = sorted({(pg_store_namespace_text(op.namespace), op.key) for _, op in put_ops})
        with cur.connection.transaction():
            for query, params in queries:
                cur.execute(query, params)
            # A put replaces the item's vectors (an upsert does not cascade).
            cur.execute(_DROP_VECTORS, ([ns for ns, _ in items], [key for _, key in items]))
            if vectors:
                cur.executemany(_PUT_VECTORS, vectors)

    # -- searches: a filter means what it means on SQLite (:mod:`.filters`) --------------------

    def _prepare_batch_search_queries(self, search_ops: Sequence[tuple[int, SearchOp]]) -> Any:
        return super()._prepare_batch_search_queries(
            [
                (i, op._replace(filter=as_conditions(op.filter)) if op.filter else op)
                for i, op in search_ops
            ]
        )

    def _get_filter_condition(self, key: str, op: str, value: Any) -> tuple[str, list[Any]]:
        return filter_condition(key, op, value)

    # -- IndexedStore's search statements ---------------------------------------------------

    def _log_position(self, cur: Any) -> tuple[int, int]:
        cur.execute(
            f"SELECT (SELECT max(seq) FROM {HORIZON_TABLE}) AS horizon, "
            f"(SELECT coalesce(max(seq), 0) FROM {LOG_TABLE}) AS newest"
        )
        row = cur.fetchone()
        return int(row["horizon"] or 0), int(row["newest"])

    def _changed_items(self, cur: Any, after: int, through: int) -> list[Item]:
        cur.execute(
            f"SELECT DISTINCT prefix, key FROM {LOG_TABLE} WHERE seq > %s AND seq <= %s",
            (after, through),
        )
        return [(r["prefix"], r["key"]) for r in cur.fetchall()]

    def _item_vectors(self, cur: Any, items: list[Item] | None) -> list[tuple[Item, bytes]]:
        if items is None:
            cur.execute(f"SELECT prefix, key, embedding FROM {VECTOR_TABLE}")
        else:
            cur.execute(
                f"SELECT prefix, key, embedding FROM {VECTOR_TABLE} WHERE (prefix, key) IN "
                f"{_PAIRS}",
                _pair_arrays(items),
            )
        return [((r["prefix"], r["key"]), bytes(r["embedding"])) for r in cur.fetchall()]

    def _filtered_items(self, op: SearchOp, cur: Any) -> set[Item]:
        every = op._replace(query=None, limit=cast(int, None), offset=0, refresh_ttl=False)
        prepared, _ = self._prepare_batch_search_queries([(0, every)])
        selected, params = prepared[0]
        cur.execute(f"SELECT c.prefix, c.key FROM ({selected}) c", params)
        return {(r["prefix"], r["key"]) for r in cur.fetchall()}

    def _page_items(
        self, op: SearchOp, page: list[tuple[Item, float]], cur: Any
    ) -> list[SearchItem]:
        if not page:
            return []
        keys = _pair_arrays([item for item, _ in page])
        if op.refresh_ttl:
            cur.execute(
                "UPDATE store SET expires_at = NOW() + (ttl_minutes || ' minutes')::interval "
                f"WHERE (prefix, key) IN {_PAIRS} AND ttl_minutes IS NOT NULL",
                keys,
            )
        cur.execute(
            f"SELECT prefix, key, value, created_at, updated_at FROM store "
            f"WHERE (prefix, key) IN {_PAIRS}",
            keys,
        )
        rows = {(r["prefix"], r["key"]): r for r in cur.fetchall()}
        return [
            pg_store_search_item(
                pg_store_decode_namespace(rows[item]["prefix"]),
                cast(Any, {**rows[item], "score": score}),
                loader=self._deserializer,
            )
            for item, score in page
            if item in rows
        ]

    # -- IndexedStore's statements -------------------------------------------------------------

    def _stored_model_id(self) -> str | None:
        with self.pool.connection() as conn:
            row = conn.execute(f"SELECT model_id FROM {MODEL_TABLE}").fetchone()
        return None if row is None else str(row["model_id"])

    def _remember_model_id(self, model_id: str) -> None:
        with self.pool.connection() as conn, conn.transaction():
            conn.execute(f"DELETE FROM {MODEL_TABLE}")
            conn.execute(f"INSERT INTO {MODEL_TABLE} (model_id) VALUES (%s)", (model_id,))

    def _indexed_items(self) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
        with self.pool.connection() as conn:
            found = conn.execute(
                "SELECT s.prefix, s.key, s.value FROM store s WHERE EXISTS (SELECT 1 FROM "
                f"{VECTOR_TABLE} v WHERE v.prefix = s.prefix AND v.key = s.key)"
            ).fetchall()
        return [
            (pg_store_decode_namespace(r["prefix"]), r["key"], _value(r["value"])) for r in found
        ]

    def is_indexed(self, namespace: tuple[str, ...], key: str) -> bool:
        with self.pool.connection() as conn:
            row = conn.execute(
                f"SELECT 1 AS one FROM {VECTOR_TABLE} WHERE prefix = %s AND key = %s LIMIT 1",
                (pg_store_namespace_text(namespace), key),
            ).fetchone()
        return row is not None


def _pair_arrays(items: Sequence[Item]) -> tuple[list[str], list[str]]:
    """``items`` as the two arrays :data:`_PAIRS` takes."""
    return [str(prefix) for prefix, _ in items], [key for _, key in items]


def _value(stored: Any) -> dict[str, Any]:
    return stored if isinstance(stored, dict) else cast(dict[str, Any], pg_store_json_loads(stored))


class SealedPostgresStore(Sealing, NotebookPostgresStore):
    def __init__(self, pool: ConnectionPool[Any], *, cipher: Cipher) -> None:
        super().__init__(pool)
        self.cipher = cipher


def open_postgres_store(
    backend: Any,
    cipher: Cipher | None,
    *,
    index: StoreIndex | None = None,
    index_factory: IndexFactory | None = None,
) -> NotebookPostgresStore:
    """The store of ``backend``'s schema; with ``cipher`` its values are sealed and it has
    no index (see :func:`agent_notebook.langgraph.stores.open_store`)."""
    pool = open_pool(backend)
    store = (
        NotebookPostgresStore(pool, index=index, index_factory=index_factory)
        if cipher is None
        else SealedPostgresStore(pool, cipher=cipher)
    )
    try:
        store.setup()
    except BaseException:
        pool.close()
        raise
    return store


def open_postgres_saver(backend: Any, keep: int | None) -> NotebookPostgresSaver:
    pool = open_pool(backend)
    saver = NotebookPostgresSaver(pool, keep=keep)
    try:
        saver.setup()
    except BaseException:
        pool.close()
        raise
    return saver


#: LangGraph's tables that hold text: what a purge after a redaction rewrites.
TEXT_TABLES: Final = (
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_writes",
    "store",
    VECTOR_TABLE,
)


def vacuum_full(pool: ConnectionPool[Any], tables: Iterable[str] = TEXT_TABLES) -> None:
    """Rewrite ``tables`` (``VACUUM FULL``) so that scrubbed rows' old versions leave the
    data files; the WAL and backups keep them until recycled (see docs/storage.md)."""
    with pool.connection() as conn:
        for table in tables:
            found = conn.execute("SELECT to_regclass(%s) AS t", (table,)).fetchone()
            if found is not None and found["t"] is not None:  # LangGraph's setup() made it
                conn.execute(f"VACUUM FULL {table}")


def store_lock(store: NotebookPostgresStore) -> AbstractContextManager[None]:
    """Serialise a read-modify-write cycle on ``store`` across every server."""
    return advisory_lock(store.pool, STORE_LOCK)


def reseal_store(pool: ConnectionPool[Any], cipher: Cipher, batch: int = 500) -> int:
    """Seal every store value under ``cipher``'s key (a key rotation; plain values too), in
    batches (:func:`~agent_notebook.langgraph.checkpoint.postgres.rewrite_rows`): run it
    again to finish a killed one. The vectors of the values go: a sealed store has no
    semantic index. Returns how many values were sealed again."""

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
