"""The notebook's LangGraph store: LangGraph's ``SqliteStore`` serving both the sync and the
async API, with a semantic index that costs nothing until something needs it.

* ``abatch`` runs ``batch`` on a worker thread (``asyncio.to_thread``): one connection and
  one lock serve sync and async callers, and the event loop never waits on SQLite.
* The index (LangGraph's ``index`` config: ``embed``, ``fields``, ``distance_type``) is
  either given, or made by ``index_factory`` the first time an operation needs it, and the
  items are embedded again after a model change: see :mod:`.store_vectors`, shared with the
  PostgreSQL store.
* Vectors follow their items: foreign keys are enforced on the store's connection, so a put
  (LangGraph writes ``INSERT OR REPLACE``) or a delete drops the item's old vectors before
  any new ones are written, and nothing of a replaced value lingers in ``store_vectors``.
* Vector search runs LangGraph's own SQL, with its distance functions (``vec_distance_*``,
  which the sqlite-vec extension would provide) registered as Python functions on the
  connection (:func:`.store_vectors.similarities`): many Pythons' ``sqlite3`` cannot load
  extensions, and brute force over a store's items is fast enough.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np
from langgraph.store.sqlite import SqliteStore
from langgraph.store.sqlite.base import VECTOR_MIGRATIONS as _VECTOR_TABLES

# SqliteStore's own helpers (langgraph-checkpoint-sqlite 3.1): how it validates an index
# config and spells namespaces in SQL, so that ours are its.
from langgraph.store.sqlite.base import (
    _decode_ns_text,
    _ensure_index_config,
    _json_loads,
    _namespace_to_text,
)

from .store_vectors import MODEL_TABLE, IndexedStore, IndexFactory, StoreIndex, from_blob
from .store_vectors import similarities as _similarities

__all__ = ["MODEL_TABLE", "VECTOR_TABLE", "IndexFactory", "NotebookStore", "StoreIndex"]

#: LangGraph's table of the store's vectors (made by its vector migrations).
VECTOR_TABLE = "store_vectors"


class NotebookStore(IndexedStore, SqliteStore):
    """``SqliteStore`` with ``abatch``, a lazily made index, and vectors that follow items."""

    def _ensure_config(self, config: dict[str, Any]) -> tuple[Any, Any]:
        # SqliteStore reads the paths to embed from "text_fields", not from LangGraph's
        # IndexConfig key "fields" (langgraph-checkpoint-sqlite 3.1): give it both.
        if "fields" in config and "text_fields" not in config:
            config = {**config, "text_fields": config["fields"]}
        return _ensure_index_config(config)  # type: ignore[arg-type]

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        index: StoreIndex | None = None,
        index_factory: IndexFactory | None = None,
    ) -> None:
        conn.execute("PRAGMA foreign_keys = ON")  # store_vectors cascade with their items
        for name, distance in _DISTANCES.items():
            conn.create_function(name, 2, distance, deterministic=True)
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
        return [(_decode_ns_text(prefix), key, _json_loads(value)) for prefix, key, value in stale]

    def is_indexed(self, namespace: tuple[str, ...], key: str) -> bool:
        with self.lock:
            try:
                row = self.conn.execute(
                    f"SELECT 1 FROM {VECTOR_TABLE} WHERE prefix = ? AND key = ? LIMIT 1",
                    (_namespace_to_text(namespace), key),
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


def _pair(a: bytes, b: bytes) -> tuple[np.ndarray, np.ndarray]:
    return from_blob(a)[None, :], from_blob(b)


def _cosine_distance(a: bytes, b: bytes) -> float:
    return 1.0 - float(_similarities("cosine", *_pair(a, b))[0])


def _l2_distance(a: bytes, b: bytes) -> float:
    return -float(_similarities("l2", *_pair(a, b))[0])


def _l1_distance(a: bytes, b: bytes) -> float:
    return float(np.abs(from_blob(a) - from_blob(b)).sum())


#: The sqlite-vec functions LangGraph's vector search SQL calls.
_DISTANCES = {
    "vec_distance_cosine": _cosine_distance,
    "vec_distance_L2": _l2_distance,
    "vec_distance_L1": _l1_distance,
}
