"""The HNSW graph of the vector index (faiss), and faiss itself, which is optional: an
approximate index over the vectors whose entries map to keys, stale ones marked -1 (HNSW
cannot delete), rebuilt once too many are stale. See :mod:`.vectors`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from ..errors import MissingDependency

__all__ = [
    "HNSW_M",
    "STALE_FRACTION",
    "Graph",
    "faiss_available",
    "grown",
    "import_faiss",
    "new_hnsw",
]

#: HNSW graph degree (faiss ``M``).
HNSW_M: Final = 32
#: The HNSW graph is rebuilt once this fraction of its entries is stale.
STALE_FRACTION: Final = 0.10

FloatMatrix = NDArray[np.float32]
Keys = NDArray[np.int64]


def import_faiss() -> Any:
    try:
        import faiss
    except ImportError as err:
        raise MissingDependency("vector index files", package="faiss-cpu") from err
    return faiss


def faiss_available() -> bool:
    try:
        import_faiss()
    except MissingDependency:
        return False
    return True


def new_hnsw(faiss: Any, dim: int) -> Any:
    return faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)


def grown(array: NDArray[Any], needed: int) -> NDArray[Any]:
    """``array`` with room for ``needed`` rows; capacity doubles so appends stay O(1)."""
    if needed <= array.shape[0]:
        return array
    capacity = max(needed, 2 * array.shape[0], 1024)
    bigger = np.empty((capacity, *array.shape[1:]), dtype=array.dtype)
    bigger[: array.shape[0]] = array
    return bigger


class Graph:
    """An HNSW graph whose entries (faiss labels 0..ntotal-1) map to keys; -1 marks stale."""

    def __init__(self, hnsw: Any, labels: Keys, owner: Any = None) -> None:
        self.hnsw = hnsw
        self.owner = owner  # keeps a loaded IndexIDMap2, which owns ``hnsw``, alive
        self.labels = labels  # capacity >= ntotal
        live = labels[: self.ntotal]
        self.label_of: dict[int, int] = {
            key: label for label, key in enumerate(live.tolist()) if key >= 0
        }
        self.stale = int(live.size - len(self.label_of))

    @property
    def ntotal(self) -> int:
        return int(self.hnsw.ntotal)

    def retire(self, keys: Iterable[int]) -> None:
        for key in keys:
            label = self.label_of.pop(key, None)
            if label is not None:
                self.labels[label] = -1
                self.stale += 1

    def append(self, keys: Keys, vectors: FloatMatrix) -> None:
        """Add entries for keys that have none (callers retire the old entry first)."""
        if not keys.size:
            return
        start = self.ntotal
        self.hnsw.add(np.ascontiguousarray(vectors, dtype=np.float32))
        self.labels = grown(self.labels, start + keys.size)
        self.labels[start : start + keys.size] = keys
        self.label_of.update(zip(keys.tolist(), range(start, start + keys.size), strict=True))

    def too_stale(self) -> bool:
        return self.stale > STALE_FRACTION * self.ntotal
