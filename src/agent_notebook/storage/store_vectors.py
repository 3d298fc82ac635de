"""The semantic index of the notebook's LangGraph stores, whatever holds their rows: the
SQLite one (:mod:`.langgraph_store`) and the PostgreSQL one (:mod:`agent_notebook.pg_store`).

* :class:`IndexedStore`, mixed in before LangGraph's store class, makes the index (LangGraph's
  ``index`` config) the first time an operation needs it (a put that is indexed, a search
  with a query) when it was not given: the notebook's own embedder takes seconds to load, and
  the session notebooks and the thread map, written with ``index=False``, never need it.
  It remembers the embedding model's id beside the vectors (table ``store_index_model``):
  vectors of another model are not comparable, so after a model change the indexed items
  are embedded again with the new one. Each store says how it reads and writes that.
* Vectors are float32 bytes; :func:`similarities` is the score LangGraph's stores give a
  match (higher is nearer), computed with numpy: by brute force over a store's items, which
  is fast enough for what apps keep there, and needs no extension in the database
  (sqlite-vec, pgvector).
"""

from __future__ import annotations

import asyncio
import threading
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
from langgraph.store.base import IndexConfig, Op, PutOp, Result, SearchOp

__all__ = [
    "MODEL_TABLE",
    "IndexFactory",
    "IndexedStore",
    "StoreIndex",
    "best_per_item",
    "from_blob",
    "similarities",
    "to_blob",
]

#: Where a store remembers the model its vectors are of (one row).
MODEL_TABLE = "store_index_model"


class StoreIndex(NamedTuple):
    """An index config for the store and the id of its embedding model (None: unknown, as
    for an app's own ``embed``; then a model change goes unnoticed)."""

    config: IndexConfig
    model_id: str | None = None


IndexFactory = Callable[[], StoreIndex | None]


class IndexedStore:
    """A lazily made index and re-embedding after a model change, for the LangGraph store
    class it is mixed into (before it)."""

    index_config: Any
    embeddings: Any
    #: The store's ``setup()``: LangGraph's migrations and, with an index, the vector tables.
    setup: Callable[[], None]

    def _init_index(self, index: StoreIndex | None, index_factory: IndexFactory | None) -> None:
        self._index_factory = index_factory
        self._index_lock = threading.Lock()
        self._model_id: str | None = None
        if index is not None:
            self._use_index(index)

    def _use_index(self, index: StoreIndex) -> None:
        self.embeddings, self.index_config = self._ensure_config(dict(index.config))
        self._model_id = index.model_id
        self._index_factory = None

    @staticmethod
    def _index_needed(ops: list[Op]) -> bool:
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
        if self._model_id is None or self._stored_model_id() == self._model_id:
            return
        if stale := self._indexed_items():
            self._store_batch([PutOp(ns, key, value, index=None) for ns, key, value in stale])
        self._remember_model_id(self._model_id)

    @property
    def has_index(self) -> bool:
        """Whether items are (or, once needed, will be) embedded."""
        return self.index_config is not None or self._index_factory is not None

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if self._index_factory is not None and self._index_needed(ops):
            self._resolve_index()
        return self._store_batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _store_batch(self, ops: list[Op]) -> list[Result]:
        """The LangGraph store's own ``batch`` (no lazy index, no re-embedding)."""
        return super().batch(ops)  # type: ignore[misc,no-any-return]

    # -- what each store says in its own SQL ---------------------------------------------------

    @abstractmethod
    def _ensure_config(self, config: dict[str, Any]) -> tuple[Any, Any]:
        """LangGraph's validation of an index config for that store: (embeddings, config)."""

    @abstractmethod
    def is_indexed(self, namespace: tuple[str, ...], key: str) -> bool:
        """Whether the item has vectors (was put with indexing on, maybe by another process)."""

    @abstractmethod
    def _stored_model_id(self) -> str | None:
        """The model the stored vectors are of (None: not recorded yet)."""

    @abstractmethod
    def _remember_model_id(self, model_id: str) -> None: ...

    @abstractmethod
    def _indexed_items(self) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
        """(namespace, key, value) of every item that has vectors."""


def to_blob(vector: Sequence[float]) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def similarities(distance_type: str, vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The score of each row of ``vectors`` for ``query``, as LangGraph's Postgres store
    gives it (higher is nearer): cosine similarity (the default; 0 for a zero vector),
    ``-`` the Euclidean distance for ``l2``, the dot product for ``inner_product``."""
    if distance_type == "l2":
        return np.asarray(-np.linalg.norm(vectors - query, axis=1))
    dots = vectors @ query
    if distance_type == "inner_product":
        return np.asarray(dots)
    norms = np.linalg.norm(vectors, axis=1) * float(np.linalg.norm(query))
    return np.asarray(np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0))


def best_per_item(keys: Sequence[Any], scores: np.ndarray) -> list[tuple[Any, float]]:
    """Each key's best score (an item has a vector per indexed field), best first; equal
    scores keep the order of ``keys``."""
    best: dict[Any, float] = {}
    for key, score in zip(keys, scores.tolist(), strict=True):
        if key not in best or score > best[key]:
            best[key] = score
    return sorted(best.items(), key=lambda pair: -pair[1])
