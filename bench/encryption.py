"""The cost of encryption at rest on record and search, as a ratio to the same run without it.

Two fresh SQLite notebooks in a temporary directory, one plain and one encrypted (AES-GCM,
keyed index tokens, sealed vectors), receive the same ``--moments`` LoCoMo turns (names and
numbers redrawn as in ``bench/search_latency.py``; generated turns without the data set):

* record: one ``nb.record`` per moment (a chat turn: one transaction, fsync'd), timed each,
  through a notebook with no embedder;
* embed: the file reopened with the default embedder (MiniLM) and ``nb.reindex()``;
* index load: the first hybrid search, which reads (and, encrypted, opens) every vector;
* search: ``--queries`` LoCoMo questions, each timed in lexical then hybrid mode, after 10
  warm-up queries per mode.

The two notebooks are measured turn about (plain, encrypted, plain, ...) per phase, so
drift in the machine hits both alike. Printed: per phase p50/p95 for each and the
encrypted/plain ratio of the medians.

    python bench/encryption.py [--moments 5000] [--queries 200] [--no-vectors] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile
from agent_notebook import Notebook
from agent_notebook.core.crypto import Cipher, generate_key
from agent_notebook.storage import open_backend
from search_latency import (
    DEFAULT_DATA,
    generated_corpus,
    generated_questions,
    locomo_corpus,
    locomo_questions,
)

WARMUP = 10
KINDS = ("plain", "encrypted")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def open_notebook(location: Path, cipher: Cipher | None, *, vectors: bool) -> Notebook:
    backend = open_backend(location, cipher=cipher)
    return Notebook(backend, embedder="default" if vectors else None, background_embedding=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moments", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-vectors", action="store_true", help="lexical search only")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    n_questions = args.queries + WARMUP
    if args.data.exists():
        data = json.loads(args.data.read_text(encoding="utf-8"))
        corpus = locomo_corpus(data, rng)
        questions = locomo_questions(data, n_questions, rng)
        source = f"LoCoMo turns from {args.data.name}"
    else:
        corpus = generated_corpus(rng)
        questions = generated_questions(n_questions, rng)
        source = "generated turns (no LoCoMo file)"
    texts = [next(corpus) for _ in range(args.moments)]
    vectors = not args.no_vectors
    modes = ("lexical", "hybrid") if vectors else ("lexical",)
    times: dict[str, dict[str, list[float]]] = {k: {} for k in KINDS}

    def add(kind: str, phase: str, seconds: float) -> None:
        times[kind].setdefault(phase, []).append(seconds)

    with tempfile.TemporaryDirectory() as tmp:
        cipher = Cipher(generate_key())
        locations = {k: Path(tmp) / f"{k}.db" for k in KINDS}
        ciphers = {"plain": None, "encrypted": cipher}
        notebooks = {k: open_notebook(locations[k], ciphers[k], vectors=False) for k in KINDS}
        start = datetime(2024, 1, 1, tzinfo=UTC)
        sessions = {k: notebooks[k].start_session("bench", started=start).id for k in KINDS}
        for i, text in enumerate(texts):
            for kind in KINDS:
                t0 = time.perf_counter()
                notebooks[kind].record(
                    sessions[kind], text, speaker="user", timestamp=start + timedelta(seconds=i)
                )
                add(kind, "record", time.perf_counter() - t0)
            if (i + 1) % 1000 == 0:
                log(f"recorded {i + 1} in each notebook")
        for nb in notebooks.values():
            nb.close()

        notebooks = {k: open_notebook(locations[k], ciphers[k], vectors=vectors) for k in KINDS}
        if vectors:
            for kind in KINDS:
                semantic = notebooks[kind].semantic
                if semantic is None:
                    raise SystemExit("no embedder: see 'agent-notebook doctor', or --no-vectors")
                semantic.embedder.embed_documents(["warm up the model"])
                t0 = time.perf_counter()
                notebooks[kind].reindex()
                add(kind, "embed (all)", time.perf_counter() - t0)
                log(f"{kind}: embedded")
            for kind in KINDS:
                t0 = time.perf_counter()
                notebooks[kind].search(questions[0], mode="hybrid")  # reads every vector
                add(kind, "index load", time.perf_counter() - t0)
        for q in questions[:WARMUP]:
            for kind in KINDS:
                for mode in modes:
                    notebooks[kind].search(q, mode=mode)
        hits = {k: 0 for k in KINDS}
        for q in questions[WARMUP:]:
            for mode in modes:
                for kind in KINDS:
                    t0 = time.perf_counter()
                    found = notebooks[kind].search(q, mode=mode)
                    add(kind, f"search {mode}", time.perf_counter() - t0)
                    hits[kind] += len(found)
        for nb in notebooks.values():
            nb.close()
        sizes = {k: locations[k].stat().st_size for k in KINDS}

    print(
        f"encryption at rest: {args.moments} moments ({source}), {args.queries} queries per "
        f"mode, SQLite, vectors {'on' if vectors else 'off'}"
    )
    print(f"{'phase':<16}{'plain p50':>14}{'p95':>14}{'encrypted p50':>16}{'p95':>14}{'ratio':>8}")
    for phase in times["plain"]:
        plain = [s * 1000 for s in times["plain"][phase]]
        sealed = [s * 1000 for s in times["encrypted"][phase]]
        p50, e50 = percentile(plain, 0.5), percentile(sealed, 0.5)
        print(
            f"{phase:<16}{p50:>12.3f}ms{percentile(plain, 0.95):>12.3f}ms"
            f"{e50:>14.3f}ms{percentile(sealed, 0.95):>12.3f}ms{e50 / p50:>8.2f}"
        )
    print(
        f"database size: plain {sizes['plain'] / 1e6:.1f} MB, encrypted "
        f"{sizes['encrypted'] / 1e6:.1f} MB ({sizes['encrypted'] / sizes['plain']:.2f}x); "
        f"hits returned: plain {hits['plain']}, encrypted {hits['encrypted']}"
    )


if __name__ == "__main__":
    main()
