"""The in-process vector index: exact search up to a size, approximate (HNSW) above it.

The storage backend keeps every moment's vector (the source of truth); this index is derived
from it, lives in memory, and can be thrown away and rebuilt at any time. Keys are moment
numbers (the ``N`` of ``m_N``); scores are cosine similarities.

* Up to :data:`EXACT_LIMIT` vectors, a search is one matrix-vector product over a contiguous
  float32 matrix: exact, and a few milliseconds even at 50,000 x 384.
* Above it, a faiss HNSW graph answers in about a millisecond. Building one takes seconds
  (tens of seconds at 100,000 vectors on two cores), so it is built on a background thread
  from a copy of the matrix while searches stay exact; it takes over when it is complete.
  HNSW cannot delete, so removed or changed vectors leave stale entries that searches skip,
  and the graph is rebuilt the same way once they pass a tenth of it.
* The matrix is kept in both modes: scores are always recomputed from it, and a search
  restricted to a small ``allowed`` set scores just those vectors exactly.

:meth:`VectorIndex.save` writes a real faiss file and a JSON sidecar with the model,
dimension and checksum (:mod:`.vector_files`), so :meth:`load` can refuse a file made for
another model and detect a damaged one. The graph itself is :mod:`.hnsw`'s.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Collection, Iterable, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Final

import numpy as np
from numpy.typing import NDArray

from ..core.products import row_dots
from ..errors import InvalidInput
from .hnsw import (
    FloatMatrix,
    Graph,
    Keys,
    faiss_available,
    grown,
    import_faiss,
    new_hnsw,
)
from .vector_files import read_index_files, serialized, write_index_files

__all__ = ["EXACT_LIMIT", "VectorIndex"]

#: At or below this many vectors a search is exact; above it, approximate (HNSW).
EXACT_LIMIT: Final = 50_000
#: HNSW search breadth (faiss ``efSearch``; the graph's degree is :data:`.hnsw.HNSW_M`).
EF_SEARCH: Final = 128
#: An ``allowed`` set this small (or within 4 x k) is scored exactly even in approximate mode.
SMALL_ALLOWED: Final = 20_000
#: Vectors per faiss call while building in the background (the granularity of stopping).
BUILD_CHUNK: Final = 2048
#: Changes made during a build that are replayed while holding the lock, at most.
FINAL_REPLAY: Final = 64
#: An upsert whose vector has at least this cosine with the old one keeps its graph entry
#: (re-adding the same text's vector, as float16 from the store, is not a change).
SAME_VECTOR: Final = 1.0 - 1e-4

log = logging.getLogger(__name__)


def _top(scores: NDArray[np.float32], k: int) -> NDArray[np.intp]:
    """Positions of the ``k`` highest scores, best first."""
    if k >= scores.size:
        return np.argsort(-scores, kind="stable")
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")]


# Background builds are stopped (between chunks) at interpreter exit, so faiss is never
# mid-call while the process tears down.
_builds_lock = threading.Lock()
_builds: dict[threading.Thread, threading.Event] = {}


@atexit.register
def _stop_builds() -> None:
    with _builds_lock:
        builds = list(_builds.items())
    for _, stop in builds:
        stop.set()
    for thread, _ in builds:
        thread.join()


class VectorIndex:
    """Vectors keyed by moment number, searched by cosine similarity. Thread-safe: a
    background worker may add while another thread searches."""

    def __init__(self, dim: int, model_id: str, *, exact_limit: int = EXACT_LIMIT) -> None:
        if dim < 1:
            raise InvalidInput(f"vector dimension must be at least 1, got {dim}")
        if exact_limit < 0:
            raise InvalidInput(f"exact_limit must be 0 or more, got {exact_limit}")
        self.dim = dim
        self.model_id = model_id
        self.exact_limit = exact_limit
        self._lock = threading.RLock()
        self._save_lock = threading.Lock()
        self._matrix: FloatMatrix = np.empty((0, dim), dtype=np.float32)
        self._keys: Keys = np.empty(0, dtype=np.int64)
        self._rows: dict[int, int] = {}  # key -> row of _matrix / _keys
        self._n = 0
        self._graph: Graph | None = None
        # Keys changed while a graph is built in the background, replayed into it after.
        self._dirty: set[int] | None = None
        self._stop = threading.Event()
        self._build_failed = False

    # -- reading -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n

    def last_key(self) -> int:
        """The highest key in the index (0 when empty)."""
        with self._lock:
            return int(self._keys[: self._n].max()) if self._n else 0

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    @property
    def approximate(self) -> bool:
        """True while searches go through the HNSW graph (built once above ``exact_limit``)."""
        return self._graph is not None

    def search(
        self, query: NDArray[np.float32], k: int, *, allowed: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """``(key, cosine similarity)`` of the ``k`` nearest vectors, best first.

        ``allowed`` restricts the results to those keys (the caller's filters by session,
        time or speaker). A small set is scored exactly; a large one filters the graph
        search, which widens, then falls back to exact scoring, until it finds enough.
        """
        q = self._check_query(query)
        if k <= 0:
            return []
        with self._lock:
            if not self._n:
                return []
            rows: NDArray[np.int64] | None = None
            if allowed is not None:
                rows = self._rows_of(allowed)
                if not rows.size:
                    return []
            if (
                self._graph is None
                or 8 * k > self._n  # most of the index: a graph walk would not be faster
                or (rows is not None and rows.size <= max(SMALL_ALLOWED, 4 * k))
            ):
                return self._search_exact(q, k, rows)
            return self._search_graph(self._graph, q, k, rows)

    def _check_query(self, query: NDArray[np.float32]) -> NDArray[np.float32]:
        q = np.asarray(query)
        if q.ndim == 2 and q.shape[0] == 1:
            q = q[0]
        if q.shape != (self.dim,) or q.dtype.kind != "f":
            raise InvalidInput(
                f"query vector must be {self.dim} floats, got shape {q.shape} of {q.dtype}"
            )
        if not np.isfinite(q).all():
            raise InvalidInput("query vector has NaN or infinite values")
        q = q.astype(np.float32)
        norm = float(np.linalg.norm(q))
        return q / norm if norm > 0 else q

    def _rows_of(self, allowed: Collection[int]) -> NDArray[np.int64]:
        """Rows of the allowed keys that have a vector, each once."""
        index = self._rows
        if isinstance(allowed, AbstractSet):
            if len(allowed) > len(index):
                found = [row for key, row in index.items() if key in allowed]
            else:
                found = [row for key in allowed if (row := index.get(key)) is not None]
            return np.asarray(found, dtype=np.int64)
        found = [row for key in allowed if (row := index.get(key)) is not None]
        return np.unique(np.asarray(found, dtype=np.int64))  # a list may repeat a key

    def _search_exact(
        self, q: NDArray[np.float32], k: int, rows: NDArray[np.int64] | None
    ) -> list[tuple[int, float]]:
        n = self._n
        if rows is None:
            scores = row_dots(self._matrix[:n], q)
        elif 4 * rows.size < n:
            scores = row_dots(self._matrix[rows], q)  # gather a few rows rather than score them all
        else:
            scores = row_dots(self._matrix[:n], q)[rows]
        best = _top(scores, k)
        picked = best if rows is None else rows[best]
        return list(zip(self._keys[picked].tolist(), scores[best].tolist(), strict=True))

    def _search_graph(
        self, graph: Graph, q: NDArray[np.float32], k: int, rows: NDArray[np.int64] | None
    ) -> list[tuple[int, float]]:
        faiss = import_faiss()
        ntotal = graph.ntotal
        mask: NDArray[np.bool_] | None
        if rows is not None:
            mask = np.zeros(ntotal, dtype=bool)
            label_of = graph.label_of
            mask[[label_of[key] for key in self._keys[rows].tolist()]] = True
            wanted = min(k, rows.size)
        else:
            mask = graph.labels[:ntotal] >= 0 if graph.stale else None
            wanted = min(k, self._n)
        selector = None
        bits = np.packbits(mask, bitorder="little") if mask is not None else None
        if bits is not None:  # ``bits`` must outlive the searches that read it
            selector = faiss.IDSelectorBitmap(bits.size, faiss.swig_ptr(bits))
        ef = max(EF_SEARCH, k)
        for breadth in (ef, 4 * ef):
            params = faiss.SearchParametersHNSW(efSearch=breadth, sel=selector)
            _, found = graph.hnsw.search(q[None, :], wanted, params=params)
            labels = found[0][found[0] >= 0]
            if mask is not None:
                labels = labels[mask[labels]]  # the selector did this; never trust, check
            keys = graph.labels[labels]
            keys = keys[keys >= 0]
            if keys.size >= wanted:
                break
        else:  # a narrow filter the graph walk keeps missing: score exactly instead
            return self._search_exact(q, k, rows)
        del selector, bits
        picked = np.asarray([self._rows[key] for key in keys.tolist()], dtype=np.int64)
        scores = row_dots(self._matrix[picked], q)  # exact scores, from the source vectors
        order = np.argsort(-scores, kind="stable")
        return list(zip(keys[order].tolist(), scores[order].tolist(), strict=True))

    # -- writing -----------------------------------------------------------------------------

    def vectors(self, keys: Sequence[int]) -> FloatMatrix:
        """The (unit) vectors of ``keys``, one row each, in their order (a copy); KeyError
        for a key the index does not hold."""
        with self._lock:
            return self._matrix[[self._rows[key] for key in keys]].copy()

    def add(self, keys: Sequence[int], vectors: NDArray[np.float32]) -> None:
        """Insert or replace these keys' vectors (normalised to unit length here).

        Everything is checked first, so a bad batch changes nothing.
        """
        key_array, matrix = self._check_batch(keys, vectors)
        if not key_array.size:
            return
        with self._lock:
            rows = self._rows
            old_rows = [rows.get(key, -1) for key in key_array.tolist()]
            present = np.asarray(old_rows, dtype=np.int64) >= 0
            changed = np.ones(key_array.size, dtype=bool)
            if present.any():
                existing = np.asarray(old_rows, dtype=np.int64)[present]
                similarity = np.einsum("ij,ij->i", self._matrix[existing], matrix[present])
                changed[present] = similarity < SAME_VECTOR
                self._matrix[existing] = matrix[present]
            fresh = ~present
            count = int(fresh.sum())
            if count:
                n = self._n
                self._matrix = grown(self._matrix, n + count)
                self._keys = grown(self._keys, n + count)
                self._matrix[n : n + count] = matrix[fresh]
                self._keys[n : n + count] = key_array[fresh]
                rows.update(zip(key_array[fresh].tolist(), range(n, n + count), strict=True))
                self._n = n + count
            moved = key_array[changed]
            if self._dirty is not None:
                self._dirty.update(moved.tolist())
            if self._graph is not None and moved.size:
                self._graph.retire(moved.tolist())
                self._graph.append(moved, matrix[changed])
            self._maybe_rebuild()

    def _check_batch(
        self, keys: Sequence[int], vectors: NDArray[np.float32]
    ) -> tuple[Keys, FloatMatrix]:
        key_array = np.asarray(keys)
        if key_array.size == 0:
            key_array = key_array.astype(np.int64)
        if key_array.ndim != 1 or key_array.dtype.kind not in "iu":
            raise InvalidInput(f"vector keys must be a flat list of integers, got {keys!r:.80}")
        if key_array.size and int(key_array.min()) < 1:
            raise InvalidInput(f"vector keys are moment numbers (1 or more), got {keys!r:.80}")
        if np.unique(key_array).size != key_array.size:
            raise InvalidInput("vector keys must be distinct within one add()")
        matrix = np.asarray(vectors)
        if matrix.shape != (key_array.size, self.dim) or matrix.dtype.kind != "f":
            raise InvalidInput(
                f"expected {key_array.size} vectors of {self.dim} floats (one per key), "
                f"got shape {matrix.shape} of {matrix.dtype}"
            )
        if not np.isfinite(matrix).all():
            raise InvalidInput("vectors have NaN or infinite values")
        matrix = matrix.astype(np.float32)  # a copy: the caller's array is never kept
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        return key_array.astype(np.int64), matrix

    def remove(self, keys: Iterable[int]) -> None:
        """Drop these keys; keys not in the index are ignored."""
        with self._lock:
            rows = self._rows
            gone = []
            for key in keys:
                row = rows.pop(key, None)
                if row is None:
                    continue
                gone.append(key)
                last = self._n - 1
                if row != last:  # the last row fills the hole: O(1), the matrix stays dense
                    moved_key = int(self._keys[last])
                    self._matrix[row] = self._matrix[last]
                    self._keys[row] = moved_key
                    rows[moved_key] = row
                self._n = last
            if not gone:
                return
            if self._dirty is not None:
                self._dirty.update(gone)
            if self._graph is not None:
                self._graph.retire(gone)
            self._maybe_rebuild()

    # -- the graph ---------------------------------------------------------------------------

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no graph is being built in the background; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:  # a finished build may start the next one (churn while it ran)
            with _builds_lock:
                threads = [t for t, stop in _builds.items() if stop is self._stop]
            if not threads:
                return True
            for thread in threads:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                thread.join(left)
                if thread.is_alive():
                    return False

    def _maybe_rebuild(self) -> None:
        """Start a graph build when crossing ``exact_limit``, or when a tenth is stale.

        Called with the lock held."""
        if self._dirty is not None or self._build_failed:
            return  # a build is running, or failed: stay as we are
        graph = self._graph
        if graph is None:
            if self._n > self.exact_limit and faiss_available():
                self._start_build()
        elif graph.too_stale():
            if self._n <= self.exact_limit:
                self._graph = None  # small again: exact search needs no graph
            else:
                self._start_build()

    def _start_build(self) -> None:
        self._dirty = set()
        keys = self._keys[: self._n].copy()
        matrix = self._matrix[: self._n].copy()
        thread = threading.Thread(
            target=self._build, args=(keys, matrix), name="agent-notebook-vector-index"
        )
        thread.daemon = True
        thread.start()
        with _builds_lock:  # before the thread can end: its exit waits for our lock
            _builds[thread] = self._stop

    def _build(self, keys: Keys, matrix: FloatMatrix) -> None:
        """Build a graph from a snapshot without the lock, replay what changed meanwhile,
        then swap it in. Runs on its own thread."""
        done = False
        try:
            faiss = import_faiss()
            graph = Graph(new_hnsw(faiss, self.dim), np.empty(0, dtype=np.int64))
            for start in range(0, keys.size, BUILD_CHUNK):
                if self._stop.is_set():
                    return
                graph.append(keys[start : start + BUILD_CHUNK], matrix[start : start + BUILD_CHUNK])
            del matrix
            for _ in range(100):  # catch up with changes outside the lock, then inside it
                if self._stop.is_set():
                    return
                with self._lock:
                    assert self._dirty is not None
                    if len(self._dirty) <= FINAL_REPLAY:
                        self._replay(graph)
                        self._graph = graph
                        done = True
                        return
                    changes = self._take_changes()
                self._apply(graph, *changes)
            with self._lock:
                self._replay(graph)
                self._graph = graph
                done = True
        except Exception:
            log.exception("building the vector index graph failed; searches stay as they were")
            with self._lock:
                self._build_failed = True
        finally:
            with self._lock:
                self._dirty = None
                if done:
                    self._maybe_rebuild()
            with _builds_lock:
                _builds.pop(threading.current_thread(), None)

    def _take_changes(self) -> tuple[list[int], Keys, FloatMatrix]:
        """The keys changed since the last call, and the current vectors of those still
        here. Called with the lock held."""
        assert self._dirty is not None
        changed = list(self._dirty)
        self._dirty = set()
        present = np.asarray([key for key in changed if key in self._rows], dtype=np.int64)
        vectors = self._matrix[[self._rows[key] for key in present.tolist()]]
        return changed, present, vectors.reshape(-1, self.dim)

    @staticmethod
    def _apply(graph: Graph, changed: list[int], present: Keys, vectors: FloatMatrix) -> None:
        graph.retire(changed)
        graph.append(present, vectors)

    def _replay(self, graph: Graph) -> None:
        self._apply(graph, *self._take_changes())

    # -- files -------------------------------------------------------------------------------

    def save_compacted(self, path: Path) -> None:
        """:meth:`save` without the stale entries an HNSW graph keeps of removed vectors
        (after a redaction): the graph is dropped, the exact index saved, a new graph built."""
        self.wait_idle()
        with self._lock:
            if self._graph is not None and self._graph.stale:
                self._graph = None
            self.save(path)
            self._maybe_rebuild()

    def save(self, path: Path) -> None:
        """Write the index to ``path`` and its sidecar ``<path>.json`` (see
        :mod:`.vector_files`)."""
        with self._lock:
            data = serialized(self.dim, self._graph, self._matrix[: self._n], self._keys[: self._n])
            count = self._n
        data_bytes = data.tobytes()
        del data
        with self._save_lock:
            write_index_files(path, data_bytes, model_id=self.model_id, dim=self.dim, count=count)

    @classmethod
    def load(
        cls, path: Path, *, model_id: str, dim: int, exact_limit: int = EXACT_LIMIT
    ) -> VectorIndex | None:
        """The index saved at ``path``, or None when there is none for this model and
        dimension (the caller rebuilds it from the stored vectors).

        Raises :class:`CorruptFile` when the file is damaged.
        """
        saved = read_index_files(path, model_id=model_id, dim=dim)
        if saved is None:
            return None
        count = saved.count
        self = cls(dim, model_id, exact_limit=exact_limit)
        if saved.vectors is not None:
            self._matrix = np.ascontiguousarray(saved.vectors[saved.live], dtype=np.float32)
            self._keys = saved.ids[saved.live]
            self._rows = dict(zip(self._keys.tolist(), range(count), strict=True))
            self._n = count
        if saved.hnsw is not None and count > exact_limit:
            self._graph = Graph(saved.hnsw, saved.ids, owner=saved.owner)
        with self._lock:
            self._maybe_rebuild()  # a flat file above the limit: build the graph now
        return self
