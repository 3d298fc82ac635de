"""Recording one moment: p50 and p95 latency, and WAL pages written, on SQLite and YAML.

Each call is one durable ``Notebook.record`` (validation, enrichment, id allocation, the
moment in one transaction). Beside it, interleaved call by call so the machine's load falls
on both alike, LangGraph's ``SqliteStore.put`` of the same text on its own file at the same
durability (WAL, ``synchronous = FULL``): the target is ``record`` p50 <= 3x its p50. WAL
pages per call are counted with automatic checkpoints off (frames appended to the ``-wal``
file over the timed calls, divided by their number). The other floors, from the same run: a
raw SQLite INSERT + COMMIT of the same text, and a JSON line appended to a file with fsync.
The SQL statements each call runs (its thread's, on the write connection; SQLite's trace
callback) are counted over the last calls, and both files' journal and synchronous modes
are read back from their connections, so the durability compared is the one in effect.

    python bench/record_latency.py [--n 300] [--prefill 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from langgraph.store.sqlite import SqliteStore

sys.path.insert(0, str(Path(__file__).parent))
from _common import SAMPLE_TEXTS, percentile, summary_ms
from agent_notebook import Notebook
from agent_notebook.config import NotebookConfig, write_config

TARGET_RATIO = 3.0
#: The last calls whose statements are counted (the same interleaving, timed as the rest).
STATEMENTS_OVER = 100
EMBED_IN_BACKGROUND = True
WAL_HEADER = 32
FRAME_HEADER = 24


def text_of(i: int) -> str:
    return f"{SAMPLE_TEXTS[i % len(SAMPLE_TEXTS)]} (#{i})"


class WalMeter:
    """Frames appended to a database's WAL while automatic checkpoints are off."""

    def __init__(self, conn: sqlite3.Connection, db: Path) -> None:
        self.conn, self.wal = conn, Path(f"{db}-wal")
        self.page = int(conn.execute("PRAGMA page_size").fetchone()[0])
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA wal_autocheckpoint = 0")

    def frames(self) -> int:
        size = self.wal.stat().st_size if self.wal.exists() else 0
        return max(0, size - WAL_HEADER) // (self.page + FRAME_HEADER)


def open_notebook(home: Path, backend: str, prefill: int) -> tuple[Notebook, str]:
    home.mkdir(mode=0o700)
    write_config(home, NotebookConfig.model_validate({"sqlite_synchronous": "FULL"}))
    nb = Notebook.open(home, backend=backend, background_embedding=EMBED_IN_BACKGROUND)
    session = nb.start_session("bench")
    filler = [{"text": text_of(i)} for i in range(prefill)]
    for start in range(0, prefill, 500):
        nb.record_many(session.id, filler[start : start + 500])
    nb.settle()  # the prefill's derived indexes are caught up before timing
    return nb, session.id


def open_store(db: Path, prefill: int) -> tuple[SqliteStore, sqlite3.Connection]:
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    store = SqliteStore(conn)
    store.setup()
    for i in range(prefill):
        store.put(("bench",), f"k{i}", {"text": text_of(i)})
    return store, conn


class StatementCounter:
    """Statements the calling thread runs on ``conn`` while ``counting`` is set."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.count, self.counting, self.thread = 0, False, threading.get_ident()
        conn.set_trace_callback(self._seen)

    def _seen(self, statement: str) -> None:
        # "-- " marks a statement SQLite runs inside another (a trigger's, FTS5's own)
        if self.counting and threading.get_ident() == self.thread and statement[:3] != "-- ":
            self.count += 1


def durability(conn: sqlite3.Connection) -> str:
    journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
    return f"journal_mode={journal}, synchronous={['OFF', 'NORMAL', 'FULL', 'EXTRA'][synchronous]}"


def interleaved(
    calls: dict[str, Callable[[int], None]], n: int, then: tuple[int, Callable[[], None]]
) -> dict[str, list[float]]:
    """Call each of ``calls`` once per round, ``n`` rounds, the order alternating; before
    round ``then[0]``, call ``then[1]``."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for i in range(n):
        if i == then[0]:
            then[1]()
        for name in names if i % 2 == 0 else reversed(names):
            t0 = time.perf_counter()
            calls[name](i)
            times[name].append(time.perf_counter() - t0)
    return times


def bench_side_by_side(root: Path, n: int, prefill: int) -> tuple[dict[str, list[float]], dict]:
    nb, sid = open_notebook(root / "sqlite", "sqlite", prefill)
    store, conn = open_store(root / "store.db", prefill)
    try:
        meters = {
            "record": WalMeter(nb.backend.connection, root / "sqlite" / "notebook.db"),  # type: ignore[attr-defined]
            "put": WalMeter(conn, root / "store.db"),
        }
        calls = {
            "record": lambda i: nb.record(sid, text_of(prefill + i), speaker="bench"),
            "put": lambda i: store.put(("bench",), f"t{i}", {"text": text_of(prefill + i)}),
        }
        connections = {"record": nb.backend.connection, "put": conn}  # type: ignore[attr-defined]
        modes = {name: durability(c) for name, c in connections.items()}
        counters = {name: StatementCounter(c) for name, c in connections.items()}

        def count_from_now() -> None:
            for counter in counters.values():
                counter.counting = True

        over = min(n, STATEMENTS_OVER)
        times = interleaved(calls, n, (n - over, count_from_now))
        pages = {name: meter.frames() / n for name, meter in meters.items()}
        pages.update({f"{k} statements": c.count / over for k, c in counters.items()})
        pages.update({f"{k} modes": v for k, v in modes.items()})
        nb.settle()
        pages["upkeep"] = meters["record"].frames() / n - pages["record"]
    finally:
        nb.close()
        conn.close()
    return times, pages


def bench_yaml(home: Path, n: int, prefill: int) -> list[float]:
    nb, sid = open_notebook(home, "yaml", prefill)
    try:
        times = []
        for i in range(n):
            t0 = time.perf_counter()
            nb.record(sid, text_of(prefill + i), speaker="bench")
            times.append(time.perf_counter() - t0)
        return times
    finally:
        nb.close()


def bench_raw_sqlite(path: Path, n: int, synchronous: str) -> list[float]:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, body TEXT)")
    times = []
    for i in range(n):
        body = json.dumps({"text": SAMPLE_TEXTS[i % len(SAMPLE_TEXTS)], "n": i})
        t0 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO m (body) VALUES (?)", (body,))
        conn.execute("COMMIT")
        times.append(time.perf_counter() - t0)
    conn.close()
    return times


def bench_jsonl(path: Path, n: int) -> list[float]:
    times = []
    with open(path, "a", encoding="utf-8") as f:
        for i in range(n):
            line = json.dumps({"text": SAMPLE_TEXTS[i % len(SAMPLE_TEXTS)], "n": i}) + "\n"
            t0 = time.perf_counter()
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
            times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="timed records per backend")
    parser.add_argument("--prefill", type=int, default=1000, help="moments recorded before timing")
    args = parser.parse_args()
    print(f"record one moment: {args.n} timed calls after {args.prefill} prefilled moments")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        side, pages = bench_side_by_side(root, args.n, args.prefill)
        rows = [
            ("agent-notebook SQLite record (synchronous=FULL, default)", side["record"]),
            ("LangGraph SqliteStore.put, interleaved (WAL, FULL)", side["put"]),
            ("agent-notebook YAML directory", bench_yaml(root / "yaml", args.n, args.prefill)),
            (
                "alternative: raw SQLite INSERT+COMMIT (WAL, FULL)",
                bench_raw_sqlite(root / "raw.db", args.n, "FULL"),
            ),
            ("alternative: JSONL append + fsync", bench_jsonl(root / "raw.jsonl", args.n)),
        ]
    width = max(len(name) for name, _ in rows)
    for name, times in rows:
        print(f"{name:<{width}}  {summary_ms(times)}")
    print(
        f"WAL pages per call: record {pages['record']:.1f} (+ {pages['upkeep']:.1f} of batched "
        f"index upkeep, off the call), SqliteStore.put {pages['put']:.1f}"
    )
    print(
        f"SQL statements per call (the caller's, last {min(args.n, STATEMENTS_OVER)} calls): "
        f"record "
        f"{pages['record statements']:.2f}, SqliteStore.put {pages['put statements']:.2f}"
    )
    print(f"durability: record {pages['record modes']}; SqliteStore.put {pages['put modes']}")
    print("load average (1, 5, 15 min) at the end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    ratio = percentile(side["record"], 0.5) / percentile(side["put"], 0.5)
    verdict = "PASS" if ratio <= TARGET_RATIO else "FAIL"
    print(f"target: record p50 <= {TARGET_RATIO:g}x SqliteStore.put p50: {ratio:.2f}x  {verdict}")


if __name__ == "__main__":
    main()
