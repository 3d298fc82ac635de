"""An embedder that remembers: vectors of texts already embedded are read from a file under
/tmp, so a benchmark run over the same data costs seconds after the first (bench only)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

CACHE_DIR = Path("/tmp/agent-notebook-bench-embeddings")


class CachedEmbedder:
    """Wraps an embedder (same ``model_id``, ``dim`` and symmetry); :meth:`save` writes the
    vectors learned since loading to ``CACHE_DIR/<model_id>.npz``."""

    def __init__(self, inner: Any, cache_dir: Path = CACHE_DIR) -> None:
        self.inner = inner
        self.model_id: str = inner.model_id
        self.dim: int = inner.dim
        self.symmetric = bool(getattr(inner, "symmetric", False))
        self.path = cache_dir / f"{self.model_id}.npz"
        self._lock = threading.Lock()
        self._vectors: dict[tuple[str, str], npt.NDArray[np.float32]] = {}
        self._new = 0
        if self.path.exists():
            with np.load(self.path) as saved:
                keys, kinds, matrix = saved["keys"], saved["kinds"], saved["vectors"]
                for key, kind, row in zip(keys.tolist(), kinds.tolist(), matrix, strict=True):
                    self._vectors[(kind, key)] = row

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        keys = [("d", self._key(t)) for t in texts]
        with self._lock:
            todo = [i for i, k in enumerate(keys) if k not in self._vectors]
        if todo:
            fresh = self.inner.embed_documents([texts[i] for i in todo])
            with self._lock:
                for i, row in zip(todo, fresh, strict=True):
                    self._vectors[keys[i]] = row
                self._new += len(todo)
        with self._lock:
            rows = [self._vectors[k] for k in keys]
        return np.stack(rows) if rows else np.empty((0, self.dim), dtype=np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        key = ("q", self._key(text))
        with self._lock:
            known = self._vectors.get(key)
        if known is None:
            known = self.inner.embed_query(text)
            with self._lock:
                self._vectors[key] = known
                self._new += 1
        return known

    def save(self) -> None:
        if not self._new:
            return
        with self._lock:
            items = list(self._vectors.items())
            self._new = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(
            tmp,
            kinds=np.array([k for (k, _), _ in items]),
            keys=np.array([h for (_, h), _ in items]),
            vectors=np.stack([v for _, v in items]).astype(np.float32),
        )
        tmp.replace(self.path)
