"""The notebook's LangGraph store: LangGraph's ``SqliteStore`` serving both the sync and the
async API, with a semantic index that costs nothing until something needs it.

* ``abatch`` runs ``batch`` on a worker thread (``asyncio.to_thread``): one connection and
  one lock serve sync and async callers, and the event loop never waits on SQLite.
* The index (LangGraph's ``index`` config: ``embed``, ``fields``, ``distance_type``) is
  either given, or made by ``index_factory`` the first time an operation needs it, and the
  items are embedded again after a model change: see :mod:`.vectors`, shared with the
  PostgreSQL store.
* Vectors follow their items: foreign keys are enforced on the store's connection, so a put
  (LangGraph writes ``INSERT OR REPLACE``) or a delete drops the item's old vectors before
  any new ones are written, and nothing of a replaced value lingers in ``store_vectors``.
* A search with a query scores an in-process copy of the vectors that follows a change log
  kept by triggers on ``store_vectors`` (:mod:`.vector_cache`, shared with the
  PostgreSQL store), without the sqlite-vec extension, which many Pythons' ``sqlite3``
  cannot load. SQLite runs one writer at a time, so the log's ``seq`` grows in commit order.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from langgraph.store.base import SearchItem, SearchOp
from langgraph.store.sqlite import SqliteStore
from langgraph.store.sqlite.base import VECTOR_MIGRATIONS as _VECTOR_TABLES

from ..private import (
    sqlite_store_decode_namespace,
    sqlite_store_ensure_index_config,
    sqlite_store_json_loads,
    sqlite_store_namespace_text,
    sqlite_store_search_item,
)
from .vector_cache import HORIZON_TABLE, LOG_KEPT, LOG_TABLE, PRUNE_EVERY, Item
from .vectors import MODEL_TABLE, IndexedStore, IndexFactory, StoreIndex

__all__ = ["MODEL_TABLE", "VECTOR_TABLE", "IndexFactory", "NotebookStore", "StoreIndex"]

#: LangGraph's table of the store's vectors (made by its vector migrations).
VECTOR_TABLE = "store_vectors"
#: The change log of ``store_vectors`` (see :mod:`.vector_cache`): every insert,
#: update and delete of a vector row (a cascade from its item's put or delete included)
#: names its item; every 1024th entry prunes the log to its newest ``LOG_KEPT``.
_LOG_TABLES = f"""
CREATE TABLE IF NOT EXISTS {LOG_TABLE} (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, prefix TEXT NOT NULL, key TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {HORIZON_TABLE} (seq INTEGER NOT NULL);
INSERT INTO {HORIZON_TABLE} SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM {HORIZON_TABLE});
CREATE TRIGGER IF NOT EXISTS store_vectors_logged_insert AFTER INSERT ON {VECTOR_TABLE}
BEGIN INSERT INTO {LOG_TABLE} (prefix, key) VALUES (NEW.prefix, NEW.key); END;
CREATE TRIGGER IF NOT EXISTS store_vectors_logged_update AFTER UPDATE ON {VECTOR_TABLE}
BEGIN
    INSERT INTO {LOG_TABLE} (prefix, key) VALUES (OLD.prefix, OLD.key);
    INSERT INTO {LOG_TABLE} (prefix, key) VALUES (NEW.prefix, NEW.key);
END;
CREATE TRIGGER IF NOT EXISTS store_vectors_logged_delete AFTER DELETE ON {VECTOR_TABLE}
BEGIN INSERT INTO {LOG_TABLE} (prefix, key) VALUES (OLD.prefix, OLD.key); END;
CREATE TRIGGER IF NOT EXISTS store_vector_log_pruned AFTER INSERT ON {LOG_TABLE}
WHEN NEW.seq % {PRUNE_EVERY} = 0
BEGIN
    UPDATE {HORIZON_TABLE} SET seq = max(seq, NEW.seq - {LOG_KEPT});
    DELETE FROM {LOG_TABLE} WHERE seq <= NEW.seq - {LOG_KEPT};
END;
"""


class NotebookStore(IndexedStore, SqliteStore):
    """``SqliteStore`` with ``abatch``, a lazily made index, and vectors that follow items."""

    def _ensure_config(self, config: dict[str, Any]) -> tuple[Any, Any]:
        # SqliteStore reads the paths to embed from "text_fields", not from LangGraph's
        # IndexConfig key "fields" (langgraph-checkpoint-sqlite 3.1): give it both.
        if "fields" in config and "text_fields" not in config:
            config = {**config, "text_fields": config["fields"]}
        return sqlite_store_ensure_index_config(config)

    def _get_filter_condition(self, key: str, op: str, value: Any) -> tuple[str, list[Any]]:
        # SqliteStore binds a list or an object under $eq or $ne as bytes, which no field's
        # JSON text ever equals; its plain form ({key: value}) binds the text: do as that
        # does, as the PostgreSQL store compares them (see .filters).
        condition, params = super()._get_filter_condition(key, op, value)
        if op in ("$eq", "$ne") and isinstance(value, list | dict):
            params = [p.decode() if isinstance(p, bytes) else p for p in params]
        return condition, params

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        index: StoreIndex | None = None,
        index_factory: IndexFactory | None = None,
    ) -> None:
        conn.execute("PRAGMA foreign_keys = ON")  # store_vectors cascade with their items
        super().__init__(conn)
        self._init_index(index, index_factory)

    def _use_index(self, index: StoreIndex) -> None:
        super()._use_index(index)
        self.is_setup = False  # the vector tables' migrations run on the next setup()

    # -- IndexedStore's statements ---------------------------------------------------------

    def _stored_model_id(self) -> str | None:
        with self.lock:
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS {MODEL_TABLE} (model_id TEXT NOT NULL)")
            row = self.conn.execute(f"SELECT model_id FROM {MODEL_TABLE}").fetchone()
        return None if row is None else str(row[0])

    def _remember_model_id(self, model_id: str) -> None:
        with self.lock:
            self.conn.execute("BEGIN")
            self.conn.execute(f"DELETE FROM {MODEL_TABLE}")
            self.conn.execute(f"INSERT INTO {MODEL_TABLE} VALUES (?)", (model_id,))
            self.conn.execute("COMMIT")

    def _indexed_items(self) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
        with self.lock:
            stale = self.conn.execute(
                f"SELECT DISTINCT s.prefix, s.key, s.value FROM store s "
                f"JOIN {VECTOR_TABLE} v ON v.prefix = s.prefix AND v.key = s.key"
            ).fetchall()
        return [
            (sqlite_store_decode_namespace(prefix), key, sqlite_store_json_loads(value))
            for prefix, key, value in stale
        ]

    def is_indexed(self, namespace: tuple[str, ...], key: str) -> bool:
        with self.lock:
            try:
                row = self.conn.execute(
                    f"SELECT 1 FROM {VECTOR_TABLE} WHERE prefix = ? AND key = ? LIMIT 1",
                    (sqlite_store_namespace_text(namespace), key),
                ).fetchone()
            except sqlite3.OperationalError:  # no store_vectors table: never indexed
                return False
        return row is not None

    def setup(self) -> None:
        """LangGraph's migrations, then the vector table without loading sqlite-vec."""
        index, self.index_config = self.index_config, None
        try:
            super().setup()
        finally:
            self.index_config = index
        if index is not None:
            with self.lock:
                for statement in _VECTOR_TABLES:
                    self.conn.executescript(statement)
                self.conn.executescript(_LOG_TABLES)

    # -- IndexedStore's search statements --------------------------------------------------

    def _log_position(self, cur: Any) -> tuple[int, int]:
        horizon, newest = cur.execute(
            f"SELECT (SELECT max(seq) FROM {HORIZON_TABLE}), "
            f"(SELECT coalesce(max(seq), 0) FROM {LOG_TABLE})"
        ).fetchone()
        return int(horizon or 0), int(newest)

    def _changed_items(self, cur: Any, after: int, through: int) -> list[Item]:
        rows = cur.execute(
            f"SELECT DISTINCT prefix, key FROM {LOG_TABLE} WHERE seq > ? AND seq <= ?",
            (after, through),
        ).fetchall()
        return [(prefix, key) for prefix, key in rows]

    def _item_vectors(self, cur: Any, items: list[Item] | None) -> list[tuple[Item, bytes]]:
        if items is None:
            rows = cur.execute(f"SELECT prefix, key, embedding FROM {VECTOR_TABLE}").fetchall()
        else:
            rows = []
            for start in range(0, len(items), _PAIRS_PER_QUERY):
                chunk = items[start : start + _PAIRS_PER_QUERY]
                rows += cur.execute(
                    f"SELECT prefix, key, embedding FROM {VECTOR_TABLE} WHERE (prefix, key) "
                    f"IN (VALUES {', '.join(['(?, ?)'] * len(chunk))})",
                    [part for item in chunk for part in item],
                ).fetchall()
        return [((prefix, key), blob) for prefix, key, blob in rows if blob is not None]

    def _filtered_items(self, op: SearchOp, cur: Any) -> set[Item]:
        every = op._replace(query=None, limit=-1, offset=0, refresh_ttl=False)
        (selected, params, _), *_ = self._prepare_batch_search_queries([(0, every)])[0]
        return {(p, k) for p, k in cur.execute(f"SELECT prefix, key FROM ({selected})", params)}

    def _page_items(
        self, op: SearchOp, page: list[tuple[Item, float]], cur: Any
    ) -> list[SearchItem]:
        if not page:
            return []
        pairs = ", ".join(["(?, ?)"] * len(page))
        params = [part for item, _ in page for part in item]
        if op.refresh_ttl and self.ttl_config and self.ttl_config.get("refresh_on_read"):
            cur.execute(
                "UPDATE store SET expires_at = DATETIME(CURRENT_TIMESTAMP, '+' || ttl_minutes "
                f"|| ' minutes') WHERE (prefix, key) IN (VALUES {pairs}) "
                "AND ttl_minutes IS NOT NULL",
                params,
            )
        rows = {
            (row[0], row[1]): row
            for row in cur.execute(
                "SELECT prefix, key, value, created_at, updated_at FROM store "
                f"WHERE (prefix, key) IN (VALUES {pairs})",
                params,
            )
        }
        return [
            sqlite_store_search_item(
                sqlite_store_decode_namespace(prefix),
                {
                    "key": key,
                    "value": rows[prefix, key][2],
                    "created_at": rows[prefix, key][3],
                    "updated_at": rows[prefix, key][4],
                    "score": score,
                },
                loader=self._deserializer,
            )
            for (prefix, key), score in page
            if (prefix, key) in rows
        ]


#: Items per ``(prefix, key) IN (VALUES ...)`` statement (SQLite's bound on parameters).
_PAIRS_PER_QUERY = 400
