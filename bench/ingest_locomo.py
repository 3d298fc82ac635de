"""Ingest throughput (moments per second) of the LoCoMo development conversations.

Parses ``locomo-dev.json`` once, then records every turn into a fresh notebook (enrichment,
ids, FTS5 and concept indexes, session stats, one transaction per session), on SQLite and
on the YAML directory. The alternative, from the same run, is the floor: the same turns
inserted raw into one SQLite table with an FTS5 index and no enrichment.

    python bench/ingest_locomo.py [--data ../shared/data/locomo/locomo-dev.json] [--rounds 3]

Skips cleanly (exit 0) when the data set is absent; it is never copied into this repository.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agent_notebook import Notebook
from agent_notebook.ingest import IngestPlan, parse_file

DEFAULT_DATA = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
)


def ingest_notebook(plan: IngestPlan, home: Path, backend: str) -> float:
    t0 = time.perf_counter()
    with Notebook.open(home, backend=backend) as nb:
        nb.ingest(plan)
        assert nb.backend.count_moments() == plan.moment_count
    return time.perf_counter() - t0


def ingest_raw(plan: IngestPlan, path: Path) -> float:
    t0 = time.perf_counter()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute(
        "CREATE TABLE turns (id INTEGER PRIMARY KEY, source TEXT, speaker TEXT, text TEXT)"
    )
    conn.execute("CREATE VIRTUAL TABLE turns_fts USING fts5 (text)")
    for session in plan.sessions:
        conn.execute("BEGIN IMMEDIATE")
        rows = [(d.source_id, d.speaker, d.text) for d in session.drafts]
        conn.executemany("INSERT INTO turns (source, speaker, text) VALUES (?, ?, ?)", rows)
        conn.executemany("INSERT INTO turns_fts (text) VALUES (?)", [(r[2],) for r in rows])
        conn.execute("COMMIT")
    conn.close()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (see ../shared/data/locomo/README.md)")
        return
    t0 = time.perf_counter()
    plan = parse_file(args.data)
    parse_s = time.perf_counter() - t0
    n = plan.moment_count
    print(f"LoCoMo dev: {len(plan.sessions)} sessions, {n} moments; parse {parse_s * 1000:.0f} ms")
    results: dict[str, list[float]] = {"sqlite": [], "yaml": [], "raw": []}
    for r in range(args.rounds):  # interleaved rounds, so machine noise hits every row alike
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            results["sqlite"].append(ingest_notebook(plan, root / f"sqlite{r}", "sqlite"))
            results["yaml"].append(ingest_notebook(plan, root / f"yaml{r}", "yaml"))
            results["raw"].append(ingest_raw(plan, root / "raw.db"))
    names = {
        "sqlite": "agent-notebook ingest, SQLite (default)",
        "yaml": "agent-notebook ingest, YAML directory",
        "raw": "alternative: raw SQLite insert + FTS5, no enrichment",
    }
    raw_rate = n / statistics.median(results["raw"])
    for key, name in names.items():
        median = statistics.median(results[key])
        rate = n / median
        print(
            f"{name:<54} median {median:7.3f} s  {rate:9.0f} moments/s  "
            f"({rate / raw_rate:5.2f}x the raw rate; rounds: "
            + ", ".join(f"{t:.3f}" for t in results[key])
            + ")"
        )


if __name__ == "__main__":
    sys.exit(main())
