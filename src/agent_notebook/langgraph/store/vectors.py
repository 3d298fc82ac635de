"""The semantic index of the notebook's LangGraph stores, whatever holds their rows: the
SQLite one (:mod:`.sqlite`) and the PostgreSQL one (:mod:`agent_notebook.langgraph.store.postgres`).

* :class:`IndexedStore`, mixed in before LangGraph's store class, makes the index (LangGraph's
  ``index`` config) the first time an operation needs it (a put that is indexed, a search
  with a query) when it was not given: the notebook's own embedder takes seconds to load, and
  the session notebooks and the thread map, written with ``index=False``, never need it.
  It remembers the embedding model's id beside the vectors (table ``store_index_model``):
  vectors of another model are not comparable, so after a model change the indexed items
  are embedded again with the new one. Each store says how it reads and writes that.
* Vectors are float32 bytes. A search with a query scores every vector of the store in
  one matrix product over an in-process copy of them that follows the store's change log
  (:class:`~.vector_cache.VectorCache`): the score LangGraph's stores give a match
  (:func:`~.vector_cache.similarities`, higher is nearer), with no extension in the
  database (sqlite-vec, pgvector). The namespace is matched on the copy; a ``filter`` is
  LangGraph's own SQL; only the page's values are read. Each store says in its SQL how it
  reads the log, the vectors, the filtered items and the page's rows.
"""

from __future__ import annotations

import asyncio
import threading
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
from langgraph.store.base import IndexConfig, Op, PutOp, Result, SearchItem, SearchOp

from .reserved import check_op
from .vector_cache import Item, VectorCache

__all__ = [
    "MODEL_TABLE",
    "IndexFactory",
    "IndexedStore",
    "StoreIndex",
    "from_blob",
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
        self._vector_cache: VectorCache | None = None
        self._cache_lock = threading.Lock()
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
        ops = [check_op(op) for op in ops]  # the notebook's own namespaces: its writes only
        if self._index_factory is not None and self._index_needed(ops):
            self._resolve_index()
        return self._store_batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _store_batch(self, ops: list[Op]) -> list[Result]:
        """The LangGraph store's own ``batch`` (no lazy index, no re-embedding)."""
        return super().batch(ops)  # type: ignore[misc,no-any-return]

    # -- searches with a query: scored on the in-process copy of the vectors ---------------

    def _batch_search_ops(
        self, search_ops: Sequence[tuple[int, SearchOp]], results: list[Result], cur: Any
    ) -> None:
        by_meaning = [(i, op) for i, op in search_ops if op.query and self.index_config]
        others = [(i, op) for i, op in search_ops if not (op.query and self.index_config)]
        if others:
            super()._batch_search_ops(others, results, cur)  # type: ignore[misc]
        if not by_meaning:
            return
        # A query is embedded as a query: asymmetric models (e5) embed it apart from documents.
        queries = [self.embeddings.embed_query(op.query) for _, op in by_meaning]
        for (i, op), query in zip(by_meaning, queries, strict=True):
            results[i] = self._search_by_meaning(op, np.asarray(query, dtype=np.float32), cur)

    def _search_by_meaning(self, op: SearchOp, query: np.ndarray, cur: Any) -> list[SearchItem]:
        """The items of the namespace (and the filter) ranked by their best field's score,
        a page of them read from the store (an item deleted meanwhile is left out)."""
        allowed = self._filtered_items(op, cur) if op.filter else None
        distance = self.index_config.get("distance_type", "cosine")
        with self._cache_lock:
            cache = self._fresh_cache(cur, query.size)
            ranked = cache.ranked(
                distance, query, ".".join(op.namespace_prefix), allowed, op.offset + op.limit
            )
        return self._page_items(op, ranked[op.offset :], cur)

    def _fresh_cache(self, cur: Any, dim: int) -> VectorCache:
        """The cache, brought up to date with the log (all of it loaded again when it is
        new, of another dimension, or behind the log's pruning horizon)."""
        cache = self._vector_cache
        horizon, newest = self._log_position(cur)
        if cache is None or cache.dim != dim or cache.through < horizon:
            cache = self._vector_cache = VectorCache(dim)
            cache.replace((), self._item_vectors(cur, None))
        elif newest > cache.through:
            changed = self._changed_items(cur, cache.through, newest)
            cache.replace(changed, self._item_vectors(cur, changed))
        cache.through = newest
        return cache

    def change_log_position(self) -> tuple[int, int]:
        """(the seq up to which the vector change log was pruned, its newest seq)."""
        with self._cursor() as cur:  # type: ignore[attr-defined]
            return self._log_position(cur)

    # -- what each store says in its own SQL ---------------------------------------------------

    @abstractmethod
    def _log_position(self, cur: Any) -> tuple[int, int]:
        """(the seq up to which the change log was pruned, its newest seq)."""

    @abstractmethod
    def _changed_items(self, cur: Any, after: int, through: int) -> list[Item]:
        """The items the log names in ``(after, through]``, each once."""

    @abstractmethod
    def _item_vectors(self, cur: Any, items: list[Item] | None) -> list[tuple[Item, bytes]]:
        """The stored vectors of ``items`` (None: of every item)."""

    @abstractmethod
    def _filtered_items(self, op: SearchOp, cur: Any) -> set[Item]:
        """The items ``op``'s namespace and filter select (LangGraph's own SQL for them)."""

    @abstractmethod
    def _page_items(
        self, op: SearchOp, page: list[tuple[Item, float]], cur: Any
    ) -> list[SearchItem]:
        """The page's items with their scores, read from the store (their TTLs refreshed
        when ``op`` asks); an item no longer there is left out."""

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
