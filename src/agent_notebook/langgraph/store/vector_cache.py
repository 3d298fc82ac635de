"""The in-process copy of a LangGraph store's vectors, so that a search by meaning is one
matrix product instead of reading (and decoding) every candidate's vector from the database.

The database stays the source of truth. Every write of a vector row, by any process, leaves
the item's name in a change log (``store_vector_log``, written by triggers on the vector
table, so LangGraph's own SQL, cascades from a put or a delete and TTL sweeps are all seen),
numbered by an ever-growing ``seq``. A cache remembers the last ``seq`` it applied; before a
search it reads the items named after it and loads their current vectors again (an item
with none left is dropped), which is idempotent, so reading the log and the vectors in two
statements is safe. The log is pruned by the triggers to its newest :data:`LOG_KEPT` rows;
``store_vector_horizon`` says up to which ``seq`` rows are gone, and a cache that has not
seen that far loads everything again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import numpy as np

from ...core.products import row_dots

__all__ = [
    "HORIZON_TABLE",
    "LOG_KEPT",
    "LOG_TABLE",
    "PRUNE_EVERY",
    "Item",
    "VectorCache",
    "similarities",
]

#: The store's change log of vector rows and the ``seq`` up to which it was pruned.
LOG_TABLE: Final = "store_vector_log"
HORIZON_TABLE: Final = "store_vector_horizon"
#: How many log rows the pruning keeps (it runs on every 1024th one).
LOG_KEPT: Final = 4096
PRUNE_EVERY: Final = 1024

#: An item as the store's tables name it: (namespace as dotted text, key).
Item = tuple[str, str]


class VectorCache:
    """The vectors (one row per indexed field) of a store's items, with their norms, and
    the log position they are up to date with (-1: never loaded). Not thread-safe: the
    store holds a lock around it."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.through = -1
        self._matrix = np.empty((0, dim), dtype=np.float32)
        self._norms = np.empty(0, dtype=np.float32)
        self._owners: list[Item] = []  # the item of each row
        self._rows: dict[Item, list[int]] = {}
        self._masks: dict[str, np.ndarray] = {}  # namespace prefix -> rows under it

    def __len__(self) -> int:
        return len(self._owners)

    def replace(self, items: Iterable[Item], vectors: Iterable[tuple[Item, bytes]]) -> None:
        """Forget ``items``' vectors, then add ``vectors`` (the current ones of some of
        them); a vector of another length (another model's) is left out."""
        for item in items:
            self._drop(item)
        fresh = [(item, blob) for item, blob in vectors if len(blob) == 4 * self.dim]
        if fresh:
            start = len(self._owners)
            added = np.frombuffer(b"".join(blob for _, blob in fresh), dtype=np.float32)
            added = added.reshape(len(fresh), self.dim)
            self._matrix = _grown(self._matrix, start + len(fresh))
            self._norms = _grown(self._norms, start + len(fresh))
            self._matrix[start : start + len(fresh)] = added
            self._norms[start : start + len(fresh)] = np.linalg.norm(added, axis=1)
            for row, (item, _) in enumerate(fresh, start):
                self._owners.append(item)
                self._rows.setdefault(item, []).append(row)
        self._masks.clear()

    def _drop(self, item: Item) -> None:
        # the last row fills each hole, so the matrix stays dense
        for row in sorted(self._rows.pop(item, ()), reverse=True):
            last = len(self._owners) - 1
            if row != last:
                moved = self._owners[last]
                self._matrix[row] = self._matrix[last]
                self._norms[row] = self._norms[last]
                self._owners[row] = moved
                places = self._rows[moved]
                places[places.index(last)] = row
            self._owners.pop()

    def ranked(
        self,
        distance_type: str,
        query: np.ndarray,
        namespace: str,
        allowed: set[Item] | None,
        count: int,
    ) -> list[tuple[Item, float]]:
        """The best ``count`` items under ``namespace`` (dotted, "" for all), among
        ``allowed`` when given, by their best field's score, best first."""
        n = len(self._owners)
        if not n or count <= 0:
            return []
        scores = similarities(distance_type, self._matrix[:n], query, self._norms[:n])
        keep = self._under(namespace)
        if allowed is not None:
            inside = np.fromiter((o in allowed for o in self._owners), dtype=bool, count=n)
            keep = inside if keep is None else keep & inside
        if keep is not None:
            scores = np.where(keep, scores, -np.inf)
        order = np.argsort(-scores, kind="stable")
        best: dict[Item, float] = {}
        for row in order.tolist():
            score = float(scores[row])
            if score == -np.inf or len(best) >= count:
                break
            best.setdefault(self._owners[row], score)  # an item's first row is its best
        return list(best.items())

    def _under(self, namespace: str) -> np.ndarray | None:
        """Which rows lie in ``namespace`` or below it (None: all of them)."""
        if not namespace:
            return None
        mask = self._masks.get(namespace)
        if mask is None:
            below = namespace + "."
            mask = np.fromiter(
                (p == namespace or p.startswith(below) for p, _ in self._owners),
                dtype=bool,
                count=len(self._owners),
            )
            self._masks[namespace] = mask
        return mask


def similarities(
    distance_type: str, vectors: np.ndarray, query: np.ndarray, norms: np.ndarray
) -> np.ndarray:
    """The score of each row of ``vectors`` (whose norms are ``norms``) for ``query``, as
    LangGraph's Postgres store gives it (higher is nearer): cosine similarity (the default;
    0 for a zero vector), ``-`` the Euclidean distance for ``l2``, the dot product for
    ``inner_product``; all from one matrix product."""
    dots = np.asarray(row_dots(vectors, query), dtype=np.float64)
    if distance_type == "inner_product":
        return dots
    norms = np.asarray(norms, dtype=np.float64)
    query_norm = float(np.linalg.norm(query))
    if distance_type == "l2":  # |v - q|^2 = |v|^2 - 2 v.q + |q|^2
        return np.asarray(-np.sqrt(np.maximum(norms**2 - 2 * dots + query_norm**2, 0.0)))
    scale = norms * query_norm
    return np.asarray(np.divide(dots, scale, out=np.zeros_like(dots), where=scale > 0))


def _grown(array: np.ndarray, needed: int) -> np.ndarray:
    """``array`` with room for ``needed`` rows; capacity doubles so appends stay O(1)."""
    if needed <= array.shape[0]:
        return array
    bigger = np.empty((max(needed, 2 * array.shape[0], 256), *array.shape[1:]), array.dtype)
    bigger[: array.shape[0]] = array
    return bigger
