"""The notebook's LangGraph store: LangGraph's ``SqliteStore`` serving both the sync and the
async API, with a semantic index that costs nothing until something needs it.

* ``abatch`` runs ``batch`` on a worker thread (``asyncio.to_thread``): one connection and
  one lock serve sync and async callers, and the event loop never waits on SQLite.
* The index (LangGraph's ``index`` config: ``embed``, ``fields``, ``distance_type``) is
  either given, or made by ``index_factory`` the first time an operation needs it (a put
  that is indexed, a search with a query): the notebook's own embedder takes seconds to
  load, and the session notebooks and the thread map, written with ``index=False``, never
  need it. A factory that returns None leaves the store without an index.
* Vectors follow their items: foreign keys are enforced on the store's connection, so a put
  (LangGraph writes ``INSERT OR REPLACE``) or a delete drops the item's old vectors before
  any new ones are written, and nothing of a replaced value lingers in ``store_vectors``.
* Vector search runs LangGraph's own SQL, with its distance functions (``vec_distance_*``,
  which the sqlite-vec extension would provide) registered as Python functions on the
  connection: many Pythons' ``sqlite3`` cannot load extensions, and brute force over a
  store's items is fast enough.
* The embedding model's id is remembered beside the vectors (``store_index_model``): vectors
  of another model are not comparable, so after a model change the indexed items are
  embedded again with the new one.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np
from langgraph.store.base import IndexConfig, Op, PutOp, Result, SearchOp
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

__all__ = ["NotebookStore", "StoreIndex"]

MODEL_TABLE = "store_index_model"
#: LangGraph's table of the store's vectors (made by its vector migrations).
VECTOR_TABLE = "store_vectors"


class StoreIndex(NamedTuple):
    """An index config for the store and the id of its embedding model (None: unknown, as
    for an app's own ``embed``; then a model change goes unnoticed)."""

    config: IndexConfig
    model_id: str | None = None


IndexFactory = Callable[[], StoreIndex | None]


class NotebookStore(SqliteStore):
    """``SqliteStore`` with ``abatch``, a lazily made index, and vectors that follow items."""

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
        self._index_factory = index_factory
        self._index_lock = threading.Lock()
        self._model_id: str | None = None
        if index is not None:
            self._use_index(index)

    # -- the index ---------------------------------------------------------------------------

    def _use_index(self, index: StoreIndex) -> None:
        self.embeddings, self.index_config = _ensure_index_config(dict(index.config))  # type: ignore[arg-type]
        self._model_id = index.model_id
        self._index_factory = None
        self.is_setup = False  # the vector tables' migrations run on the next setup()

    def _index_needed(self, ops: list[Op]) -> bool:
        return any(
            (isinstance(op, PutOp) and op.value is not None and op.index is not False)
            or (isinstance(op, SearchOp) and bool(op.query))
            for op in ops
        )

    def _resolve_index(self) -> None:
        with self._index_lock:  # once: a second caller waits for the first one's index
            factory, self._index_factory = self._index_factory, None
            made = factory() if factory is not None else None
            if made is not None:
                self._use_index(made)
                self.setup()
                self._reembed_if_model_changed()

    def _reembed_if_model_changed(self) -> None:
        """Embed the indexed items again when the vectors are another model's."""
        if self._model_id is None:
            return
        with self.lock:
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS {MODEL_TABLE} (model_id TEXT NOT NULL)")
            row = self.conn.execute(f"SELECT model_id FROM {MODEL_TABLE}").fetchone()
            if row is not None and row[0] == self._model_id:
                return
            stale = self.conn.execute(
                "SELECT DISTINCT s.prefix, s.key, s.value FROM store s "
                "JOIN store_vectors v ON v.prefix = s.prefix AND v.key = s.key"
            ).fetchall()
        if stale:
            super().batch(
                [
                    PutOp(_decode_ns_text(prefix), key, _json_loads(value), index=None)
                    for prefix, key, value in stale
                ]
            )
        with self.lock:
            self.conn.execute("BEGIN")
            self.conn.execute(f"DELETE FROM {MODEL_TABLE}")
            self.conn.execute(f"INSERT INTO {MODEL_TABLE} VALUES (?)", (self._model_id,))
            self.conn.execute("COMMIT")

    @property
    def has_index(self) -> bool:
        """Whether items are (or, once needed, will be) embedded."""
        return self.index_config is not None or self._index_factory is not None

    def is_indexed(self, namespace: tuple[str, ...], key: str) -> bool:
        """Whether the item has vectors (was put with indexing on, maybe by another process)."""
        with self.lock:
            try:
                row = self.conn.execute(
                    "SELECT 1 FROM store_vectors WHERE prefix = ? AND key = ? LIMIT 1",
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

    # -- operations --------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if self._index_factory is not None and self._index_needed(ops):
            self._resolve_index()
        return super().batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))


def _vector(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def _cosine_distance(a: bytes, b: bytes) -> float:
    x, y = _vector(a), _vector(b)
    norms = float(np.linalg.norm(x) * np.linalg.norm(y))
    return 1.0 - float(np.dot(x, y)) / norms if norms else 1.0


def _l2_distance(a: bytes, b: bytes) -> float:
    return float(np.linalg.norm(_vector(a) - _vector(b)))


def _l1_distance(a: bytes, b: bytes) -> float:
    return float(np.abs(_vector(a) - _vector(b)).sum())


#: The sqlite-vec functions LangGraph's vector search SQL calls.
_DISTANCES = {
    "vec_distance_cosine": _cosine_distance,
    "vec_distance_L2": _l2_distance,
    "vec_distance_L1": _l1_distance,
}
