"""PostgreSQL against SQLite, from one run: many servers, search at scale, LoCoMo recall.

Three parts, each on a fresh database of the server ``--pg`` names (dropped after) and a
SQLite notebook in a temporary directory, on the same machine:

* ``servers``: one ``agent-notebook serve`` on a SQLite notebook, and 1, 2 and 4 ``serve``
  processes on one PostgreSQL notebook, each notebook first given ``--load`` moments. All
  servers run at once; ``--clients`` HTTP clients (threads, keep-alive) send for
  ``--seconds`` per configuration a search (``GET /api/search``) then a record (``POST
  /api/sessions/{id}/moments``, a session per client), over and over, client ``w`` to server
  ``w mod k``. The configurations take turns for ``--rounds`` rounds (the order rotated
  each round), so load on the machine falls on each alike. The servers run without an
  embedder (``AGENT_NOTEBOOK_EMBEDDER=none``: lexical search; the embedding worker would
  compete for the two cores). Reported: requests/s and p50/p95 per configuration.
* ``search``: ``--moments`` synthetic chat turns (``bench/chat_turns.py``'s templates) bulk
  loaded through each backend's ``put_moments`` in batches of 1,000 (one session per
  batch), with random unit vectors written through ``put_vectors`` under the MiniLM model's
  id (embedding 100k texts would take half an hour; the vectors' values do not change the
  cost of a search). Then ``--queries`` searches (``nb.search(q, limit=10)``), each timed on
  SQLite then PostgreSQL, lexical then hybrid (the hybrid time includes embedding the
  query with MiniLM); one warm-up query per mode loads the vector index first, and the
  timing waits for its HNSW graph (built in the background above 50,000 vectors).
* ``locomo``: each LoCoMo dev conversation loaded into both backends as
  ``bench/retrieval_locomo.py`` loads it (its code), embedded (cached embeddings), and its
  questions asked with the shipped defaults, lexical and hybrid; recall@k on each backend
  and the difference, which must be within 0.5 points.

    python bench/postgres_scale.py [--parts servers,search,locomo] [--moments 100000]
        [--seconds 20] [--rounds 3] [--clients 8] [--load 2000] [--queries 200]
        [--conversations N]
        [--pg postgresql://postgres@127.0.0.1:5432/postgres]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile
from agent_notebook import Notebook
from agent_notebook.model import Moment, MomentContent
from agent_notebook.storage import StorageBackend, open_backend
from chat_turns import NAMES, PLACES, USER_TEMPLATES, make_text
from server_load import Server, build_notebook

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_DATA = next(
    (
        p
        for root in (Path(__file__).resolve().parents[1].parent, Path("/work"))
        if (p := root / "shared/data/locomo/locomo-dev.json").exists()
    ),
    Path("../shared/data/locomo/locomo-dev.json"),
)
BULK = 1000
DIM = 384
MODEL = "all-MiniLM-L6-v2-onnx-int8"  # the default embedder's id: hybrid search uses these
TEXT_CHARS = 300


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@contextmanager
def fresh_database(admin: str, part: str, *, keep: bool = False) -> Iterator[str]:
    """A new database on the server of ``admin`` (a URL), dropped after unless ``keep``."""
    import psycopg

    name = f"an_bench_{part}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(admin)._replace(path="/" + name))
    finally:
        if keep:
            log(f"kept database {name}")
        else:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- servers ------------------------------------------------------------------------------------


def drive(
    servers: list[Server], clients: int, seconds: float, sessions: list[list[str]], seed: int
) -> tuple[list[float], int, int, float]:
    """Clients send search, record, search, … for ``seconds``: (latencies, requests,
    errors, wall)."""
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    barrier = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def worker(w: int) -> None:
        nonlocal errors
        rng = random.Random(seed * 1000 + w)
        server = servers[w % len(servers)]
        session = sessions[w % len(servers)][w]
        mine: list[float] = []
        bad = 0
        with httpx.Client(base_url=server.url, timeout=60, headers=server.auth) as client:
            barrier.wait()
            for n in itertools.count():
                if time.perf_counter() >= stop_at[0]:
                    break
                start = time.perf_counter()
                if n % 2 == 0:
                    q = f"{rng.choice(NAMES)} {rng.choice(PLACES)}"
                    ok = client.get("/api/search", params={"q": q, "limit": 10}).status_code == 200
                else:
                    body = {"text": make_text(rng, USER_TEMPLATES, TEXT_CHARS, n), "speaker": "b"}
                    response = client.post(f"/api/sessions/{session}/moments", json=body)
                    ok = response.status_code == 201
                mine.append(time.perf_counter() - start)
                bad += not ok
        with lock:
            latencies.extend(mine)
            errors += bad

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(clients)]
    for t in threads:
        t.start()
    stop_at[0] = time.perf_counter() + seconds
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return latencies, len(latencies), errors, time.perf_counter() - start


def part_servers(args: argparse.Namespace) -> None:
    print(
        f"\n== servers: {args.clients} clients, {args.seconds:.0f} s per configuration, "
        f"{args.rounds} rounds, {args.load} moments loaded first, lexical (no embedder)"
    )
    with tempfile.TemporaryDirectory() as tmp, fresh_database(args.pg, "servers") as url:
        sqlite_home, pg_home = Path(tmp) / "sqlite", Path(tmp) / "pg"
        init = [sys.executable, "-m", "agent_notebook", "init", "--home", str(pg_home)]
        subprocess.run([*init, "--backend", url], check=True, capture_output=True)
        for home in (sqlite_home, pg_home):
            build_notebook(home, args.load, args.seed)
        log("loaded; starting servers")
        sqlite = Server(sqlite_home, "lexical")
        postgres: list[Server] = []
        try:
            postgres = [Server(pg_home, "lexical") for _ in range(4)]
            configs: dict[str, list[Server]] = {
                "SQLite, 1 server": [sqlite],
                "PostgreSQL, 1 server": postgres[:1],
                "PostgreSQL, 2 servers": postgres[:2],
                "PostgreSQL, 4 servers": postgres[:4],
            }
            sessions: dict[str, list[list[str]]] = {}
            for name, servers in configs.items():
                sessions[name] = [
                    [
                        httpx.post(
                            f"{s.url}/api/sessions", json={"task": f"client {w}"}, headers=s.auth
                        ).json()["id"]
                        for w in range(args.clients)
                    ]
                    for s in servers
                ]
            results: dict[str, list[tuple[list[float], int, int, float]]] = {n: [] for n in configs}
            names = list(configs)
            for r in range(args.rounds):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    run = drive(configs[name], args.clients, args.seconds, sessions[name], r)
                    results[name].append(run)
                    log(f"round {r + 1} {name}: {run[1] / run[3]:.1f} req/s")
        finally:
            for server in [sqlite, *postgres]:
                server.stop()
    for name, runs in results.items():
        latencies = [x * 1000 for run in runs for x in run[0]]
        requests, errors = sum(run[1] for run in runs), sum(run[2] for run in runs)
        rate = requests / sum(run[3] for run in runs)
        print(
            f"{name:24} {rate:8.1f} req/s  p50 {percentile(latencies, 0.5):7.1f} ms  "
            f"p95 {percentile(latencies, 0.95):7.1f} ms  ({requests} requests, {errors} errors)"
        )


# -- search at scale ----------------------------------------------------------------------------


def bulk_load(backend: StorageBackend, moments: int, seed: int) -> float:
    """``moments`` synthetic turns through ``put_moments``, random unit vectors through
    ``put_vectors``; returns the seconds it took."""
    import numpy as np

    from agent_notebook.search.semantic import encode_vector

    rng, vectors = random.Random(seed), np.random.default_rng(seed)
    nb = Notebook(backend, embedder=None)
    start = time.perf_counter()
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    for first in range(1, moments + 1, BULK):
        when = t0 + timedelta(hours=first // BULK)
        session = nb.start_session(f"bulk {first // BULK}", started=when)
        numbers = range(first, min(first + BULK, moments + 1))
        batch = [
            Moment(
                id=f"m_{n}",
                session=session.id,
                timestamp=when + timedelta(seconds=n - first),
                speaker=rng.choice(NAMES),
                content=MomentContent(text=make_text(rng, USER_TEMPLATES, TEXT_CHARS, n)),
            )
            for n in numbers
        ]
        unit = vectors.standard_normal((len(batch), DIM)).astype(np.float32)
        unit /= np.linalg.norm(unit, axis=1, keepdims=True)
        with backend.atomic():
            backend.put_moments(batch)
            backend.raise_counter("moment", numbers[-1])
            backend.put_vectors(
                MODEL,
                [
                    (m.number, m.content.text, encode_vector(v))
                    for m, v in zip(batch, unit, strict=True)
                ],
            )
        if first // BULK % 20 == 19:
            log(f"{backend.capabilities.name}: loaded {numbers[-1]}")
    return time.perf_counter() - start


def part_search(args: argparse.Namespace) -> None:
    print(
        f"\n== search at {args.moments} moments: {args.queries} queries, limit 10 "
        "(random unit vectors, MiniLM query embedding)"
    )
    with tempfile.TemporaryDirectory() as tmp, fresh_database(args.pg, "search") as url:
        backends = {
            "SQLite": open_backend(str(Path(tmp) / "notebook.db")),
            "PostgreSQL": open_backend(url),
        }
        for name, backend in backends.items():
            seconds = bulk_load(backend, args.moments, args.seed)
            print(f"{name:11} bulk load {args.moments / seconds:8.0f} moments/s")
        notebooks = {name: Notebook(b, embedder="default") for name, b in backends.items()}
        rng = random.Random(args.seed + 1)
        queries = [f"{rng.choice(NAMES)} {rng.choice(PLACES)} plan" for _ in range(args.queries)]
        times: dict[tuple[str, str], list[float]] = {}
        modes: tuple[Literal["lexical", "hybrid"], ...] = ("lexical", "hybrid")
        for name, nb in notebooks.items():
            for mode in modes:
                t0 = time.perf_counter()
                nb.search(queries[0], limit=10, mode=mode)  # loads the vector index
                log(f"{name} {mode}: first search {time.perf_counter() - t0:.1f} s")
            if nb.semantic is not None:  # above 50,000 vectors an HNSW graph builds first
                t0 = time.perf_counter()
                nb.semantic.index().wait_idle()
                log(f"{name}: vector index ready after {time.perf_counter() - t0:.1f} s")
        for q in queries:
            for mode in modes:
                for name, nb in notebooks.items():
                    t0 = time.perf_counter()
                    nb.search(q, limit=10, mode=mode)
                    times.setdefault((mode, name), []).append(time.perf_counter() - t0)
        for nb in notebooks.values():
            nb.close()
    for (shown, name), samples in sorted(times.items()):
        ms = [x * 1000 for x in samples]
        print(
            f"{shown:8} {name:11} p50 {percentile(ms, 0.5):7.1f} ms  p95 {percentile(ms, 0.95):7.1f} ms"
        )


# -- LoCoMo recall ------------------------------------------------------------------------------


def part_locomo(args: argparse.Namespace) -> None:
    from agent_notebook.embed import default_embedder
    from embed_cache import CachedEmbedder
    from retrieval_locomo import KS, load_conversation, normalise_evidence, recall_at

    if not args.data.exists():
        print(f"\n== locomo: skipped, {args.data} is absent")
        return
    data = json.loads(args.data.read_text(encoding="utf-8"))[: args.conversations]
    inner = default_embedder()
    if inner is None:
        raise SystemExit("no embedder: see 'agent-notebook doctor'")
    embedder = CachedEmbedder(inner)
    print(f"\n== locomo dev recall, {len(data)} conversations, shipped defaults")
    recall: dict[tuple[str, str], list[dict[int, float]]] = {}
    for i, conversation in enumerate(data):
        with tempfile.TemporaryDirectory() as tmp, fresh_database(args.pg, f"locomo{i}") as url:
            for name, location in (("SQLite", str(Path(tmp) / "notebook.db")), ("PostgreSQL", url)):
                nb = Notebook(open_backend(location), embedder=embedder, background_embedding=False)
                load_conversation(nb, conversation)
                nb.reindex()
                for mode in ("lexical", "hybrid"):
                    for q in conversation["qa"]:
                        found = [
                            h.moment.source_id or ""
                            for h in nb.search(q["question"], limit=50, mode=mode)
                        ]
                        evidence = normalise_evidence(q.get("evidence", []))
                        recall.setdefault((mode, name), []).append(recall_at(evidence, found))
                nb.close()
        embedder.save()
        log(f"locomo: {conversation['sample_id']} done")
    for mode in ("lexical", "hybrid"):
        cells = {}
        for name in ("SQLite", "PostgreSQL"):
            rows = recall[(mode, name)]
            cells[name] = {k: 100 * sum(r[k] for r in rows) / len(rows) for k in KS}
        for name, row in cells.items():
            print(f"{mode:8} {name:11} " + "  ".join(f"R@{k} {row[k]:5.1f}" for k in KS))
        gap = max(abs(cells["SQLite"][k] - cells["PostgreSQL"][k]) for k in KS)
        print(
            f"{mode:8} largest difference {gap:.2f} points ({'within' if gap <= 0.5 else 'OVER'} 0.5)"
        )


PARTS: dict[str, Callable[[argparse.Namespace], None]] = {
    "servers": part_servers,
    "search": part_search,
    "locomo": part_locomo,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--pg", default=os.environ.get("AGENT_NOTEBOOK_TEST_PG", DEFAULT_PG))
    parser.add_argument("--moments", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--load", type=int, default=2000)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", type=int, default=None, help="LoCoMo: the first N")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    for part in args.parts.split(","):
        PARTS[part](args)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
