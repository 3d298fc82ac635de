"""The HTTP server under load: requests/s and latency for search and for record, with
``--clients`` concurrent clients on loopback, on a notebook of ``--moments`` moments.

The notebook is built in a temporary directory with ``record_many`` (batches of 500, one
session per batch; 300-character chat turns from ``bench/chat_turns.py``'s templates, no
embedder while writing). Then, for each mode, ``agent-notebook serve`` runs in a subprocess
on a free loopback port:

* ``lexical``: the server with ``AGENT_NOTEBOOK_EMBEDDER=none`` (BM25 and concepts only);
* ``hybrid``: the default (the offline MiniLM embedder), after ``nb.reindex()`` gave every
  moment a vector (timed apart); the server's first search loads the vectors (warm-up).

Each client is a thread with its own keep-alive ``httpx.Client``. After 20 warm-up
searches, ``--requests`` searches (``GET /api/search?q=<name place>&limit=10``) are spread
over the clients, then ``--requests`` records (``POST /api/sessions/{id}/moments``, one
session per client, a 300-character turn each). Latency is per request as the client sees
it; requests/s is the requests over the wall time of the phase. Client and server share the
machine's cores, so these are the numbers of one box serving itself.

    python bench/server_load.py [--moments 10000] [--clients 8] [--requests 800]
        [--modes lexical,hybrid] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile
from agent_notebook import Notebook
from agent_notebook.privacy.tokens import read_owner_token
from chat_turns import NAMES, PLACES, USER_TEMPLATES, make_text

BATCH = 500
TEXT_CHARS = 300
WARMUP = 20
STARTUP_S = 120.0


@dataclass
class Phase:
    mode: str
    what: str
    latencies: list[float]
    wall_s: float
    errors: int

    def line(self) -> str:
        ms = [x * 1000 for x in self.latencies]
        rate = len(ms) / self.wall_s
        return (
            f"{self.mode:8} {self.what:7} {len(ms):6d} req  {rate:8.1f} req/s   "
            f"p50 {percentile(ms, 0.5):7.1f} ms   p95 {percentile(ms, 0.95):7.1f} ms   "
            f"errors {self.errors}"
        )


def build_notebook(home: Path, moments: int, seed: int) -> float:
    rng = random.Random(seed)
    start = time.perf_counter()
    with Notebook.open(home, background_embedding=False) as nb:
        for first in range(0, moments, BATCH):
            session = nb.start_session(f"bench batch {first // BATCH + 1}")
            drafts = [
                {
                    "text": make_text(rng, USER_TEMPLATES, TEXT_CHARS, i),
                    "speaker": rng.choice(NAMES),
                }
                for i in range(first, min(first + BATCH, moments))
            ]
            nb.record_many(session.id, drafts)
    return time.perf_counter() - start


def embed_all(home: Path) -> tuple[int, float] | None:
    with Notebook.open(home, background_embedding=False) as nb:
        if nb.semantic is None:
            return None
        start = time.perf_counter()
        done = nb.reindex()
        return done, time.perf_counter() - start


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, home: Path, mode: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        if mode == "lexical":
            env["AGENT_NOTEBOOK_EMBEDDER"] = "none"
        else:
            env.pop("AGENT_NOTEBOOK_EMBEDDER", None)
        command = [sys.executable, "-m", "agent_notebook", "serve", "--home", str(home)]
        command += ["--port", str(self.port), "--log-level", "warning"]
        self.process = subprocess.Popen(command, env=env)
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/api/health", timeout=1).status_code == 200:
                    # serve made the owner token if the home had none; every client sends it
                    self.auth = {"Authorization": f"Bearer {read_owner_token(home)}"}
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        self.stop()
        raise SystemExit("the server did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def run_phase(
    url: str | Sequence[str],
    auth: dict[str, str],
    clients: int,
    requests: int,
    call: Callable[[httpx.Client, int, int], bool],
) -> tuple[list[float], float, int]:
    """``requests`` calls spread over ``clients`` threads; call(client, worker, n) -> ok.
    Given several URLs (servers of one notebook), worker ``w`` talks to ``url[w % len]``."""
    urls = [url] if isinstance(url, str) else list(url)
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    barrier = threading.Barrier(clients + 1)

    def worker(w: int) -> None:
        nonlocal errors
        mine: list[float] = []
        bad = 0
        base = urls[w % len(urls)]
        with httpx.Client(base_url=base, timeout=60, headers=auth) as client:
            barrier.wait()
            for n in range(w, requests, clients):
                start = time.perf_counter()
                ok = call(client, w, n)
                mine.append(time.perf_counter() - start)
                bad += not ok
        with lock:
            latencies.extend(mine)
            errors += bad

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return latencies, time.perf_counter() - start, errors


def bench_mode(home: Path, mode: str, clients: int, requests: int, seed: int) -> list[Phase]:
    rng = random.Random(seed)
    queries = [f"{rng.choice(NAMES)} {rng.choice(PLACES)}" for _ in range(requests + WARMUP)]
    texts = [make_text(rng, USER_TEMPLATES, TEXT_CHARS, i) for i in range(requests)]
    server = Server(home, mode)
    try:
        with httpx.Client(base_url=server.url, timeout=120, headers=server.auth) as warm:
            for q in queries[:WARMUP]:
                warm.get("/api/search", params={"q": q, "limit": 10}).raise_for_status()
            sessions = [
                warm.post("/api/sessions", json={"task": f"load client {w}"}).json()["id"]
                for w in range(clients)
            ]

        def search(client: httpx.Client, w: int, n: int) -> bool:
            q = queries[WARMUP + n]
            return client.get("/api/search", params={"q": q, "limit": 10}).status_code == 200

        def record(client: httpx.Client, w: int, n: int) -> bool:
            body = {"text": texts[n], "speaker": "bench"}
            return client.post(f"/api/sessions/{sessions[w]}/moments", json=body).status_code == 201

        phases = []
        for what, call in (("search", search), ("record", record)):
            latencies, wall, errors = run_phase(server.url, server.auth, clients, requests, call)
            phases.append(Phase(mode, what, latencies, wall, errors))
            print(phases[-1].line(), flush=True)
        return phases
    finally:
        server.stop()


def report(phases: Sequence[Phase], clients: int, moments: int) -> None:
    print(f"\n== server load: {moments} moments, {clients} concurrent clients on loopback ==")
    for p in phases:
        print(p.line())
    by = {(p.mode, p.what): p for p in phases}
    for what in ("search", "record"):
        lex, hyb = by.get(("lexical", what)), by.get(("hybrid", what))
        if lex and hyb:
            ratio = percentile(hyb.latencies, 0.95) / percentile(lex.latencies, 0.95)
            print(f"{what}: hybrid p95 is {ratio:.2f}x lexical p95")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moments", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=800)
    parser.add_argument("--modes", default="lexical,hybrid")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    with tempfile.TemporaryDirectory(prefix="agent-notebook-load-") as tmp:
        home = Path(tmp) / "home"
        took = build_notebook(home, args.moments, args.seed)
        print(f"built {args.moments} moments with record_many in {took:.1f} s", flush=True)
        phases: list[Phase] = []
        for mode in modes:
            if mode == "hybrid":
                embedded = embed_all(home)
                if embedded is None:
                    print("hybrid: skipped, no embedder ('agent-notebook doctor' says why)")
                    continue
                print(f"embedded {embedded[0]} moments in {embedded[1]:.1f} s", flush=True)
            phases += bench_mode(home, mode, args.clients, args.requests, args.seed)
        report(phases, args.clients, args.moments)


if __name__ == "__main__":
    main()
