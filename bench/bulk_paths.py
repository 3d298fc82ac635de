"""Bulk paths at 100,000 moments: ingest, export, import and reindex throughput, each as a
real ``agent-notebook`` process, beside a plain SQLite insert of the same rows (issue 43).

N generated chat turns (``bench/chat_turns.py``'s templates through
``bench/search_latency.py``'s ``generated_corpus``; speakers alternating in pairs, one
conversation a day with its date) are written to a JSONL file of ``{role, speaker, content,
timestamp}`` messages, the format ``agent-notebook ingest`` reads (docs/cli.md; a JSONL file
is one notebook session, the day is in each timestamp). Then, each step timed as a whole
process (its ~1-2 s of imports included) on a fresh home with ``AGENT_NOTEBOOK_EMBEDDER=none``:

* ``ingest`` of the file;
* ``export --to yaml`` and ``export --to sqlite`` (every format the command offers);
* ``import`` of each export into a fresh home;
* ``reindex --facts`` (the fact index rebuilt over every moment);
* with ``--embed`` only: ``reindex`` with the default embedder on a notebook of
  ``--embed-moments`` (default 10,000) ingested with the embedder off, since embedding
  100,000 moments takes about 23 minutes on two cores.

Beside them, from the same run, the floor: a plain SQLite table ``(num, session, ts,
speaker, text)`` filled with the same rows by ``executemany`` in one transaction (WAL,
``synchronous = FULL``, like the notebook), and a plain FTS5 table filled with the same texts
the same way. Printed: N, each step's seconds, moments per second and its ratio to the plain
insert's, and the load average after each step. Nothing is skipped: a step that fails stops
the run with its stderr.

    python bench/bulk_paths.py [--moments 100000] [--embed] [--embed-moments 10000]
        [--keep DIR]

With ``--keep DIR`` the chat file, the homes and the exports are left in DIR (which must be
empty or new) instead of a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from search_latency import POOL, generated_corpus

#: Turns a day: each day is one conversation of two speakers (its session in the plain table).
TURNS_A_DAY = 200
START = datetime(2025, 1, 1, 9, 0, tzinfo=UTC)
SEED = 0


@dataclass(frozen=True, slots=True)
class Turn:
    num: int
    session: str
    ts: str
    speaker: str
    text: str


def make_turns(n: int, seed: int = SEED) -> list[Turn]:
    rng = random.Random(seed)
    texts = generated_corpus(rng)
    turns = []
    pair: list[str] = []
    for i in range(n):
        day, k = divmod(i, TURNS_A_DAY)
        if k == 0:
            pair = rng.sample(POOL, 2)
        when = START + timedelta(days=day, seconds=30 * k)
        turns.append(Turn(i, f"day-{day:05d}", when.isoformat(), pair[k % 2], next(texts)))
    return turns


def write_jsonl(turns: list[Turn], path: Path) -> None:
    with path.open("w", encoding="utf-8") as f:
        for t in turns:
            role = "user" if t.num % 2 == 0 else "assistant"
            message = {"role": role, "speaker": t.speaker, "content": t.text, "timestamp": t.ts}
            f.write(json.dumps(message, ensure_ascii=False) + "\n")


# -- the floor ----------------------------------------------------------------------------------


def plain_connection(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    return conn


def plain_insert(turns: list[Turn], db: Path) -> float:
    conn = plain_connection(db)
    conn.execute(
        "CREATE TABLE moments (num INTEGER PRIMARY KEY, session TEXT, ts TEXT, speaker TEXT, "
        "text TEXT)"
    )
    rows = [(t.num, t.session, t.ts, t.speaker, t.text) for t in turns]
    t0 = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO moments VALUES (?, ?, ?, ?, ?)", rows)
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - t0
    conn.close()
    return elapsed


def plain_fts(turns: list[Turn], db: Path) -> float:
    conn = plain_connection(db)
    conn.execute("CREATE VIRTUAL TABLE texts USING fts5(text)")
    rows = [(t.num, t.text) for t in turns]
    t0 = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO texts (rowid, text) VALUES (?, ?)", rows)
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - t0
    conn.close()
    return elapsed


# -- the command's steps --------------------------------------------------------------------------


def load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def command(home: Path, *args: str, embedder: str | None = "none") -> tuple[float, str]:
    """``agent-notebook ARGS --home HOME`` as a process: its wall time and stdout. Its stderr
    (progress lines, every 10 s, and summaries) goes to this script's stderr as it comes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_NOTEBOOK_")}
    env["AGENT_NOTEBOOK_PROGRESS_EVERY"] = "10"
    if embedder is not None:
        env["AGENT_NOTEBOOK_EMBEDDER"] = embedder
    argv = [sys.executable, "-m", "agent_notebook", *args, "--home", str(home)]
    log(" ".join(["agent-notebook", *args, "--home", str(home)]))
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.PIPE, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"agent-notebook {' '.join(args)} failed (exit {done.returncode})")
    return elapsed, done.stdout


def counted(home: Path) -> int:
    _, out = command(home, "stats", "--format", "json")
    return int(json.loads(out)["moments"])


@dataclass(slots=True)
class Step:
    name: str
    moments: int
    seconds: float
    load: str

    @property
    def rate(self) -> float:
        return self.moments / self.seconds


def check(home: Path, expected: int, step: str) -> None:
    found = counted(home)
    if found != expected:
        raise SystemExit(f"after {step}: {found} moments in {home}, expected {expected}")


def run(root: Path, n: int, embed: bool, embed_n: int) -> tuple[list[Step], list[Step]]:
    log(f"generating {n} turns")
    turns = make_turns(n)
    chat = root / "chat.jsonl"
    write_jsonl(turns, chat)
    floor = []
    for name, fill, db in (
        ("plain SQLite insert (executemany, 1 txn)", plain_insert, "plain.db"),
        ("plain FTS5 fill (executemany, 1 txn)", plain_fts, "fts.db"),
    ):
        floor.append(Step(name, n, fill(turns, root / db), load()))
    steps: list[Step] = []

    def step(name: str, home: Path, *args: str, moments: int = n, **kw: str | None) -> None:
        seconds, out = command(home, *args, **kw)  # type: ignore[arg-type]
        steps.append(Step(name, moments, seconds, load()))
        if args[0] == "reindex":
            log(f"{name} says: {' '.join(out.split())}")
        log(f"{name}: {seconds:.1f} s, {moments / seconds:.0f} moments/s, load {load()}")

    home = root / "home"
    step("ingest (JSONL)", home, "ingest", str(chat))
    check(home, n, "ingest")
    step("export --to yaml", home, "export", "--to", "yaml", str(root / "export-yaml"))
    step("export --to sqlite", home, "export", "--to", "sqlite", str(root / "export.db"))
    for kind, source in (("yaml", root / "export-yaml"), ("sqlite", root / "export.db")):
        into = root / f"home-from-{kind}"
        step(f"import (from {kind})", into, "import", str(source))
        check(into, n, f"import from {kind}")
    step("reindex --facts", home, "reindex", "--facts", "--format", "json")
    if embed:
        embed_n = min(embed_n, n)
        small = root / "home-embed"
        small_chat = root / "chat-embed.jsonl"
        write_jsonl(turns[:embed_n], small_chat)
        command(small, "ingest", str(small_chat))
        check(small, embed_n, "ingest for the vector reindex")
        step(
            "reindex (vectors, default embedder)",
            small,
            "reindex",
            "--format",
            "json",
            moments=embed_n,
            embedder=None,
        )
    return floor, steps


def report(n: int, floor: list[Step], steps: list[Step]) -> None:
    base = floor[0].rate
    print(f"bulk paths: N = {n} moments ({TURNS_A_DAY} turns a day), each step a fresh process")
    width = max(len(s.name) for s in [*floor, *steps])
    header = f"{'step':<{width}}  {'N':>7}  {'seconds':>8}  {'moments/s':>10}  {'x plain':>8}"
    print(header + "  load (1, 5, 15 min) after")
    for s in [*floor, *steps]:
        print(
            f"{s.name:<{width}}  {s.moments:>7}  {s.seconds:>8.2f}  {s.rate:>10.0f}  "
            f"{s.rate / base:>8.4f}  {s.load}"
        )
    print(f"load average (1, 5, 15 min) at the end: {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moments", type=int, default=100_000, help="turns to ingest")
    parser.add_argument(
        "--embed", action="store_true", help="time the vector reindex too (default embedder)"
    )
    parser.add_argument(
        "--embed-moments", type=int, default=10_000, help="moments the vector reindex embeds"
    )
    parser.add_argument("--keep", type=Path, help="leave the files in this new or empty directory")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        if any(args.keep.iterdir()):
            parser.error(f"--keep {args.keep} is not empty")
        floor, steps = run(args.keep, args.moments, args.embed, args.embed_moments)
    else:
        root = Path(tempfile.mkdtemp(prefix="bulk-paths-"))
        try:
            floor, steps = run(root, args.moments, args.embed, args.embed_moments)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    report(args.moments, floor, steps)


if __name__ == "__main__":
    main()
