"""Recording one moment: p50 and p95 latency on SQLite and on the YAML directory.

Each call is one durable ``Notebook.record`` (validation, enrichment, id allocation, moment,
indexes and session stats in one transaction). The alternatives, from the same run, are the
floors for a durable write: a raw SQLite INSERT + COMMIT of the same text, and a JSON line
appended to a file with fsync.

    python bench/record_latency.py [--n 300] [--prefill 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import SAMPLE_TEXTS, summary_ms
from agent_notebook import Notebook


def bench_notebook(home: Path, backend: str, n: int, prefill: int) -> list[float]:
    with Notebook.open(home, backend=backend) as nb:
        session = nb.start_session("bench")
        filler = [{"text": SAMPLE_TEXTS[i % len(SAMPLE_TEXTS)]} for i in range(prefill)]
        for start in range(0, prefill, 500):
            nb.record_many(session.id, filler[start : start + 500])
        times = []
        for i in range(n):
            text = f"{SAMPLE_TEXTS[i % len(SAMPLE_TEXTS)]} (#{i})"
            t0 = time.perf_counter()
            nb.record(session.id, text, speaker="bench")
            times.append(time.perf_counter() - t0)
        return times


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
        rows = [
            (
                "agent-notebook SQLite (synchronous=FULL, default)",
                bench_notebook(root / "sqlite", "sqlite", args.n, args.prefill),
            ),
            (
                "agent-notebook YAML directory",
                bench_notebook(root / "yaml", "yaml", args.n, args.prefill),
            ),
            (
                "alternative: raw SQLite INSERT+COMMIT (WAL, FULL)",
                bench_raw_sqlite(root / "raw.db", args.n, "FULL"),
            ),
            ("alternative: JSONL append + fsync", bench_jsonl(root / "raw.jsonl", args.n)),
        ]
    width = max(len(name) for name, _ in rows)
    for name, times in rows:
        print(f"{name:<{width}}  {summary_ms(times)}")


if __name__ == "__main__":
    main()
