"""Writers sharing one notebook: serve alone and beside CLI/MCP writers (SQLite), 1-4 servers (PostgreSQL).

Issue 28's "Measure": the HTTP server's throughput and latency alone and with a CLI and an
MCP client writing beside it on one SQLite home, and 1, 2 and 4 servers on one PostgreSQL
notebook; after every run, every acknowledged write is looked for and must be there exactly
once (a data-safety bench as much as a speed one).

Two parts, in one run:

* ``sqlite``: a home of ``--load`` moments (built once with ``record_many``, copied afresh
  for every run, so a run that damaged its home harms no other) served by one
  ``agent-notebook serve``. ``--clients`` HTTP clients (threads, each with its own
  keep-alive ``httpx.Client``, as in ``bench/server_load.py``) send ``--requests``
  requests in all, alternately a record (``POST /api/sessions/{id}/moments``, a session
  per client) and a search (``GET /api/search?q=<name place>&limit=10``). Configurations:

  - ``alone``: the server alone on its home;
  - ``shared``: while the clients run, beside the server on the same home, a loop of
    ``agent-notebook record`` processes (one after another, one moment each, into one
    session) and an MCP stdio client (``agent-notebook mcp`` driven by the ``mcp`` SDK's
    ``stdio_client``: the ``record`` tool, call after call). Both start before the clients
    and stop when the clients are done (the call under way finishes);
  - ``cli``: the loop of ``agent-notebook record`` processes alone beside the server. The
    last connection to close a SQLite file in WAL mode checkpoints the WAL and deletes it
    when it can lock the file exclusively; in ``shared`` the MCP process's open connection
    prevents that, here only the server's locks do: a server that lost them (the bug of
    issue 28) loses writes here first.

* ``postgres``: a fresh database of the server ``--pg`` names (dropped after) with
  ``--load`` moments, four ``serve`` processes on it, started one after another (each
  waited for on ``/api/health``), and the same clients spread round-robin over k = 1, 2
  and 4 of them (client w to server w mod k).

Every server, once up, is asked for its chat sessions (``GET /api/chat/sessions``, as the
web UI's chat page does), which opens the notebook's LangGraph store in the server: a server
that never did is not the server people run (``--no-store-open`` skips it, to compare).

Each part's configurations take turns for ``--rounds`` rounds, the first of them rotating
each round, so load on the machine falls on each alike; within a round every configuration
sends the same texts and queries. Every process runs without an embedder
(``AGENT_NOTEBOOK_EMBEDDER=none``: lexical search; the embedding worker would compete for
the cores).

Each written text ends in a marker ``[bench-<run>-<writer>-<n>]``. A write is acknowledged
when the server answered 201 with the moment, the CLI exited 0 and printed it, or the MCP
tool's result was no error. After each run its sessions are read back through the API (the
server's view) and, once the servers stopped, with ``Notebook.open`` on the home (the
notebook's own view; PostgreSQL: after the last round): each acknowledged marker must be in
exactly one moment, under the id its writer was given. Each run prints ``writes
acknowledged N, present N``; anything else prints ``!!! DATA LOSS`` lines and the script
exits with status 1.

How to read it: ``req/s`` is the HTTP clients' requests (records and searches) over the
phase's wall time, and p50/p95 are per request as a client sees it; each configuration's
line gives the median over the rounds, then every round's value in brackets. ``shared /
alone`` (and ``cli / alone``) divides (b) by (a): a req/s ratio below 1 (a p95 ratio above 1) is what the server
pays for sharing the home. Part of it is only CPU: each CLI record is a new Python process
that spends most of its time starting, on the cores the server and the clients use; the CLI
and MCP lines give their own rate and latency (a CLI record's latency is its process's whole
life). The PostgreSQL lines show whether more servers on one database add throughput on this
machine, which clients and servers share. The load averages at start and end say whether
something else ran meanwhile.

    python bench/shared_load.py [--requests 800] [--clients 8] [--rounds 3] [--load 1000]
        [--skip-postgres] [--keep] [--no-store-open] [--seed 0]
        [--pg postgresql://postgres@127.0.0.1:5432/postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile
from acks_check import Acks, Check, api_moments, notebook_moments, read_back, report_check
from chat_turns import NAMES, PLACES, USER_TEMPLATES, make_text
from postgres_scale import DEFAULT_PG, fresh_database, log
from server_load import Server, build_notebook, run_phase

TEXT_CHARS = 200
AGENT_NOTEBOOK = [sys.executable, "-m", "agent_notebook"]
PG_SERVERS = (1, 2, 4)
#: The SQLite configurations: who writes beside the server's HTTP clients.
SQLITE_CONFIGS: dict[str, tuple[str, ...]] = {
    "alone": (),
    "shared": ("mcp", "cli"),
    "cli": ("cli",),
}
STARTUP_S = 120.0


def open_store(server: Server) -> None:
    """What the web UI's chat page asks first: it opens the server's LangGraph store."""
    response = httpx.get(f"{server.url}/api/chat/sessions", headers=server.auth, timeout=60)
    response.raise_for_status()


# -- the writers --------------------------------------------------------------------------------


@dataclass
class Tally:
    """One writer's calls in one run (the HTTP clients together count as one)."""

    latencies: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    errors: int = 0
    first_error: str = ""

    def failed(self, what: str) -> None:
        self.errors += 1
        self.first_error = self.first_error or what.strip().splitlines()[-1][:200]

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.wall_s if self.wall_s else 0.0

    def ms(self, q: float) -> float:
        return percentile(self.latencies, q) * 1000 if self.latencies else float("nan")

    def line(self, what: str) -> str:
        error = f" (first: {self.first_error})" if self.first_error else ""
        return (
            f"{what:5} {len(self.latencies):5d} calls {self.rate:7.1f}/s  p50 {self.ms(0.5):7.1f} ms  "
            f"p95 {self.ms(0.95):7.1f} ms  errors {self.errors}{error}"
        )


def http_clients(
    urls: Sequence[str],
    auth: dict[str, str],
    clients: int,
    requests: int,
    tag: str,
    seed: int,
    acks: Acks,
) -> Tally:
    """``requests`` requests over ``clients`` keep-alive clients (client w to server
    w mod len(urls)): records (one session per client) and searches, alternately."""
    rng = random.Random(seed)
    texts = [make_text(rng, USER_TEMPLATES, TEXT_CHARS, n) for n in range(requests)]
    queries = [f"{rng.choice(NAMES)} {rng.choice(PLACES)}" for _ in range(requests)]
    sessions = []
    for w in range(clients):
        response = httpx.post(
            f"{urls[w % len(urls)]}/api/sessions",
            json={"task": f"bench {tag} http client {w}"},
            headers=auth,
            timeout=60,
        )
        response.raise_for_status()
        sessions.append(response.json()["id"])
        acks.session(sessions[-1])
    tally = Tally()
    lock = threading.Lock()

    def call(client: httpx.Client, w: int, n: int) -> bool:
        try:
            if n % 2:
                params = {"q": queries[n], "limit": 10}
                response = client.get("/api/search", params=params)
                ok = response.status_code == 200
            else:
                marker = f"bench-{tag}-http{w}-{n}"
                body = {"text": f"{texts[n]} [{marker}]", "speaker": "http"}
                response = client.post(f"/api/sessions/{sessions[w]}/moments", json=body)
                ok = response.status_code == 201
                if ok:
                    acks.add(marker, response.json()["id"], sessions[w])
            if not ok:
                with lock:
                    tally.first_error = (
                        tally.first_error or f"{response.status_code} {response.text[:200]}"
                    )
            return ok
        except httpx.HTTPError as err:
            with lock:
                tally.first_error = tally.first_error or f"{type(err).__name__}: {err}"
            return False

    tally.latencies, tally.wall_s, tally.errors = run_phase(
        list(urls), auth, clients, requests, call
    )
    return tally


def cli_loop(
    home: Path, tag: str, seed: int, acks: Acks, stop: threading.Event, tally: Tally
) -> None:
    """``agent-notebook record`` processes, one after another, until ``stop``."""
    rng = random.Random(seed)
    session: str | None = None
    start = time.perf_counter()
    n = 0
    while not stop.is_set():
        marker = f"bench-{tag}-cli-{n}"
        draft = {
            "text": f"{make_text(rng, USER_TEMPLATES, TEXT_CHARS, n)} [{marker}]",
            "speaker": "cli",
        }
        where = ["--session", session] if session else ["--task", f"bench {tag} cli"]
        command = [*AGENT_NOTEBOOK, "record", "--home", str(home), *where, "--format", "json"]
        t0 = time.perf_counter()
        try:
            done = subprocess.run(
                command, input=json.dumps(draft), capture_output=True, text=True, timeout=300
            )
        except subprocess.TimeoutExpired:
            tally.latencies.append(time.perf_counter() - t0)
            tally.failed("agent-notebook record: no answer in 300 s")
            break
        tally.latencies.append(time.perf_counter() - t0)
        if done.returncode == 0:
            moment = json.loads(done.stdout)[0]
            session = moment["session"]
            acks.add(marker, moment["id"], moment["session"])
        else:
            tally.failed(f"exit {done.returncode}: {done.stderr or done.stdout}")
        n += 1
    tally.wall_s = time.perf_counter() - start


def mcp_loop(
    home: Path,
    tag: str,
    seed: int,
    acks: Acks,
    stop: threading.Event,
    ready: threading.Event,
    tally: Tally,
) -> None:
    """An MCP stdio client calling ``record`` over and over until ``stop``; ``ready`` is
    set once its session is initialized (or it failed)."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.types import TextContent

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent_notebook", "mcp", "--home", str(home)],
        env={**os.environ, "AGENT_NOTEBOOK_EMBEDDER": "none"},
    )
    rng = random.Random(seed)

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            ready.set()
            session: str | None = None
            start = time.perf_counter()
            n = 0
            while not stop.is_set():
                marker = f"bench-{tag}-mcp-{n}"
                text = f"{make_text(rng, USER_TEMPLATES, TEXT_CHARS, n)} [{marker}]"
                where = {"session_id": session} if session else {"task": f"bench {tag} mcp"}
                t0 = time.perf_counter()
                result = await client.call_tool("record", {"text": text, "speaker": "mcp", **where})
                tally.latencies.append(time.perf_counter() - t0)
                first = result.content[0] if result.content else None
                said = first.text if isinstance(first, TextContent) else repr(result.content)
                if result.isError:
                    tally.failed(said)
                else:
                    got = json.loads(said)
                    session = got["session"]
                    acks.add(marker, got["id"], got["session"])
                n += 1
            tally.wall_s = time.perf_counter() - start

    try:
        anyio.run(main)
    except Exception as err:  # noqa: BLE001 - reported with the run; the others go on
        tally.failed(f"the MCP client failed: {type(err).__name__}: {err}")
    finally:
        ready.set()


# -- runs ---------------------------------------------------------------------------------------


@dataclass
class Run:
    part: str
    config: str
    round: int
    http: Tally
    beside: dict[str, Tally]
    acks: Acks
    checks: list[Check] = field(default_factory=list)
    load: float = 0.0

    def report(self) -> bool:
        print(f"round {self.round} {self.part} {self.config} (load {self.load:.2f}):")
        print(f"  {self.http.line('http')}")
        for what, tally in self.beside.items():
            print(f"  {tally.line(what)}")
        return all([report_check(c, "  ") for c in self.checks])  # every view printed


def sqlite_run(template: Path, tmp: Path, config: str, rnd: int, args: argparse.Namespace) -> Run:
    tag = f"r{rnd}{config}"
    home = tmp / f"sqlite-{tag}"
    shutil.copytree(template, home)
    acks, seed = Acks(), args.seed * 1000 + rnd
    stop, ready = threading.Event(), threading.Event()
    threads: list[threading.Thread] = []
    server = Server(home, "lexical")
    try:
        if args.store_open:
            open_store(server)
        beside = {what: Tally() for what in SQLITE_CONFIGS[config]}
        if "mcp" in beside:
            mcp = threading.Thread(
                target=mcp_loop, args=(home, tag, seed, acks, stop, ready, beside["mcp"])
            )
            mcp.start()
            threads.append(mcp)
            if not ready.wait(STARTUP_S):
                log("the MCP client did not start; going on without it")
        if "cli" in beside:
            cli = threading.Thread(
                target=cli_loop, args=(home, tag, seed, acks, stop, beside["cli"])
            )
            cli.start()
            threads.append(cli)
        try:
            http = http_clients(
                [server.url], server.auth, args.clients, args.requests, tag, seed, acks
            )
        finally:
            stop.set()
            for t in threads:
                t.join()
        run = Run("sqlite", config, rnd, http, beside, acks, load=os.getloadavg()[0])
        run.checks.append(
            read_back(
                "server's view", acks, lambda: api_moments(server.url, server.auth, acks.sessions)
            )
        )
    finally:
        server.stop()
    run.checks.append(
        read_back("Notebook.open after stop", acks, lambda: notebook_moments(home, acks.sessions))
    )
    return run


def rotated(items: Sequence[str], r: int) -> list[str]:
    return [*items[r % len(items) :], *items[: r % len(items)]]


def part_sqlite(args: argparse.Namespace, tmp: Path) -> list[Run]:
    template = tmp / "sqlite-template"
    took = build_notebook(template, args.load, args.seed)
    log(f"sqlite: built {args.load} moments in {took:.1f} s")
    runs = []
    for r in range(1, args.rounds + 1):
        for config in rotated(list(SQLITE_CONFIGS), r - 1):
            runs.append(sqlite_run(template, tmp, config, r, args))
            runs[-1].report()
            sys.stdout.flush()
    return runs


def part_postgres(args: argparse.Namespace, tmp: Path) -> list[Run]:
    runs: list[Run] = []
    with fresh_database(args.pg, "shared", keep=args.keep) as url:
        home = tmp / "pg"
        init = [*AGENT_NOTEBOOK, "init", "--home", str(home), "--backend", url]
        subprocess.run(init, check=True, capture_output=True)
        took = build_notebook(home, args.load, args.seed)
        log(f"postgres: built {args.load} moments in {took:.1f} s")
        servers: list[Server] = []
        try:
            for _ in range(max(PG_SERVERS)):  # one after another: a simultaneous start may hang
                t0 = time.perf_counter()
                servers.append(Server(home, "lexical"))
                if args.store_open:
                    open_store(servers[-1])
                log(f"postgres: server {len(servers)} up in {time.perf_counter() - t0:.1f} s")
            auth = servers[0].auth
            configs = [f"{k} server{'s' * (k > 1)}" for k in PG_SERVERS]
            for r in range(1, args.rounds + 1):
                for config in rotated(configs, r - 1):
                    k = PG_SERVERS[configs.index(config)]
                    tag, acks = f"r{r}pg{k}", Acks()
                    urls = [s.url for s in servers[:k]]
                    http = http_clients(
                        urls, auth, args.clients, args.requests, tag, args.seed * 1000 + r, acks
                    )
                    run = Run("postgres", config, r, http, {}, acks, load=os.getloadavg()[0])
                    # read back through the last of the run's servers: another process's view
                    seen = partial(api_moments, urls[-1], auth, acks.sessions)
                    run.checks.append(read_back("server's view", acks, seen))
                    runs.append(run)
                    run.report()
                    sys.stdout.flush()
        finally:
            for server in servers:
                server.stop()
        print("postgres, after the servers stopped:")
        for run in runs:
            c = read_back(
                "Notebook.open after stop",
                run.acks,
                partial(notebook_moments, home, run.acks.sessions),
            )
            run.checks.append(c)
            report_check(c, f"  round {run.round} {run.config}: ")
    return runs


# -- the summary --------------------------------------------------------------------------------


def medians(values: Sequence[float], fmt: str) -> str:
    """The median of ``values``, then each of them in brackets."""
    return f"{statistics.median(values):{fmt}} [{' '.join(f'{v:{fmt}}' for v in values)}]"


def summary(title: str, runs: Sequence[Run], configs: Sequence[str]) -> dict[str, dict[str, float]]:
    print(f"\n== {title}")
    out: dict[str, dict[str, float]] = {}
    for config in configs:
        mine = [r for r in runs if r.config == config]
        if not mine:
            continue
        rates = [r.http.rate for r in mine]
        p50s = [r.http.ms(0.5) for r in mine]
        p95s = [r.http.ms(0.95) for r in mine]
        errors = sum(r.http.errors for r in mine)
        print(
            f"{config:10} http  req/s {medians(rates, '.1f')}  p50 {medians(p50s, '.1f')} ms  "
            f"p95 {medians(p95s, '.1f')} ms  errors {errors}"
        )
        for what in mine[0].beside:
            tallies = [r.beside[what] for r in mine]
            print(
                f"{'':10} {what:5} calls/s {medians([t.rate for t in tallies], '.2f')}  "
                f"p50 {medians([t.ms(0.5) for t in tallies], '.1f')} ms  "
                f"p95 {medians([t.ms(0.95) for t in tallies], '.1f')} ms  "
                f"errors {sum(t.errors for t in tallies)}"
            )
        out[config] = {
            "rate": statistics.median(rates),
            "p50": statistics.median(p50s),
            "p95": statistics.median(p95s),
        }
        for view in dict.fromkeys(c.view for r in mine for c in r.checks):
            acked = sum(c.acknowledged for r in mine for c in r.checks if c.view == view)
            present = sum(c.present for r in mine for c in r.checks if c.view == view)
            flag = "" if acked == present else f"   !!! DATA LOSS: {acked - present} writes !!!"
            print(f"{'':10} writes acknowledged {acked}, present {present} ({view}){flag}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=800, help="HTTP requests per run")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load", type=int, default=1000, help="moments in the notebook first")
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the homes and the database")
    parser.add_argument(
        "--no-store-open",
        dest="store_open",
        action="store_false",
        help="do not ask each server for its chat sessions first (its store stays closed)",
    )
    parser.add_argument("--pg", default=os.environ.get("AGENT_NOTEBOOK_TEST_PG", DEFAULT_PG))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ["AGENT_NOTEBOOK_EMBEDDER"] = "none"  # this process and every child
    started = time.perf_counter()
    load_start = os.getloadavg()
    print(
        f"load average at start {' '.join(f'{x:.2f}' for x in load_start)}; {args.clients} "
        f"clients, {args.requests} requests per run (records and searches alternate), "
        f"{args.rounds} rounds, {args.load} moments loaded first, no embedder, "
        f"store {'opened' if args.store_open else 'left closed'} in each server"
    )
    tmp = Path(tempfile.mkdtemp(prefix="agent-notebook-shared-"))
    runs: list[Run] = []
    try:
        runs += part_sqlite(args, tmp)
        if not args.skip_postgres:
            runs += part_postgres(args, tmp)
    finally:
        if args.keep:
            print(f"kept the homes in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    sqlite = summary(
        "SQLite home, one server: alone, beside CLI records and an MCP client (shared), "
        "beside CLI records only (cli); medians over the rounds [each round]",
        [r for r in runs if r.part == "sqlite"],
        list(SQLITE_CONFIGS),
    )
    for config in ("shared", "cli"):
        if "alone" in sqlite and config in sqlite:
            a, b = sqlite["alone"], sqlite[config]
            print(
                f"{config} / alone: req/s {b['rate'] / a['rate']:.2f}x, "
                f"p50 {b['p50'] / a['p50']:.2f}x, p95 {b['p95'] / a['p95']:.2f}x"
            )
    if not args.skip_postgres:
        summary(
            "PostgreSQL, one database, clients round-robin over k servers "
            "(medians over the rounds [each round])",
            [r for r in runs if r.part == "postgres"],
            [f"{k} server{'s' * (k > 1)}" for k in PG_SERVERS],
        )
    load_end = os.getloadavg()
    print(
        f"\nload average at start {' '.join(f'{x:.2f}' for x in load_start)}, "
        f"at end {' '.join(f'{x:.2f}' for x in load_end)}; total {time.perf_counter() - started:.0f} s"
    )
    lost = [(r, c) for r in runs for c in r.checks if not c.ok]
    if lost:
        print(
            f"\n!!! DATA LOSS in {len(lost)} checks: acknowledged writes are not all there once !!!"
        )
        for r, c in lost:
            print(f"!!! round {r.round} {r.part} {r.config} ({c.view}): {c.problems()}")
        sys.exit(1)
    print("every acknowledged write is present exactly once")


if __name__ == "__main__":
    main()
