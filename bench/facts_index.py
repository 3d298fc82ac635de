"""The fact index's cost as the notebook grows (issue 39: "the index's cost at 100,000
moments").

For each size (1,000 and 100,000 moments by default) a SQLite notebook file is filled with
statements of fact by many people ("I work at Firm 17.", "I live in Town 4.", "The budget
for project 9 is $4,000."), each filed under the keys the rules read from it (the keys are
the engine's: ``FactEngine.observe(...).keys`` on each text, written with the moment, as a
record writes them). The filling goes through the backend in batches (a record per moment
would take an hour at 100,000), so only what is timed goes through ``Notebook.record``.

Then, on that notebook, new statements by the same people change one of their facts, each
recorded with ``Notebook.record`` with facts on, interleaved call by call with the same
statement recorded on a copy filled alike with facts off: p50/p95 ms each, and the share
of the facts-on records that linked the earlier statement (``superseded_by``), which is
nearly always beyond the engine's window (``facts.window``, 200): only the index reaches it.
Beside them, the index read alone (``fact_key_members`` of a statement's keys) and the
SQLite file's size with and without the index rows.

    PYTHONPATH=src .venv/bin/python bench/facts_index.py [--sizes 1000 100000] [--n 200]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile
from agent_notebook import Notebook
from agent_notebook.config import FactSettings, NotebookConfig
from agent_notebook.facts import FactEngine, Statement
from agent_notebook.model import Moment, MomentContent, MomentMetadata, Session
from agent_notebook.storage import SqliteBackend

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PEOPLE = 2_000
PER_SESSION = 100


def said(rng: random.Random) -> tuple[str, str]:
    """A statement of fact by one of the people: (speaker, text)."""
    person = f"P{rng.randrange(PEOPLE)}"
    text = rng.choice(
        [
            f"I work at Firm {rng.randrange(500)}.",
            f"I live in Town {rng.randrange(300)}.",
            f"The budget for project {rng.randrange(900)} is ${rng.randrange(1, 90)},000.",
            f"My phone number is 555-{rng.randrange(10_000):04d}.",
            "Small talk about the weather, nothing to keep.",
        ]
    )
    return person, text


def fill(path: Path, size: int, seed: int) -> tuple[list[tuple[str, str]], int]:
    """A notebook of ``size`` moments at ``path``; returns the statements said (speaker,
    text) and how many moments were filed under a key."""
    rng = random.Random(seed)
    backend = SqliteBackend(path)
    statements = [said(rng) for _ in range(size)]
    engine, filed, batch = FactEngine(), 0, []
    for n, (who, text) in enumerate(statements, start=1):
        if n % 400 == 0:
            engine = FactEngine()  # bounded, as a long-lived process
        sid = f"s_2026-01-01_{(n - 1) // PER_SESSION + 1:03d}"
        when = T0 + timedelta(minutes=n)
        if (n - 1) % PER_SESSION == 0:
            with backend.atomic():
                backend.put_session(Session(id=sid, started=when))
        keys = engine.observe(Statement(f"m_{n}", text, when, "user", who)).keys
        filed += bool(keys)
        batch.append(
            Moment(
                id=f"m_{n}",
                session=sid,
                timestamp=when,
                speaker=who,
                content=MomentContent(text=text),
                metadata=MomentMetadata(fact_keys=keys),
            )
        )
        if len(batch) == 2_000:
            with backend.atomic():
                backend.put_moments(batch)
            batch = []
    with backend.atomic():
        backend.put_moments(batch)
        backend.raise_counter("moment", size)
    backend.settle()
    backend.close()
    return statements, filed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--n", type=int, default=200, help="timed records per size and mode")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            on_path, off_path = Path(tmp, "on.db"), Path(tmp, "off.db")
            start = time.perf_counter()
            statements, filed = fill(on_path, size, seed=size)
            built = time.perf_counter() - start
            fill(off_path, size, seed=size)
            print(
                f"\n{size:,} moments ({filed:,} filed under a key), built in {built:.0f} s; "
                f"file {on_path.stat().st_size / 2**20:.1f} MiB"
            )
            report(on_path, off_path, statements, args.n)


def report(on_path: Path, off_path: Path, statements: list[tuple[str, str]], n: int) -> None:
    rng = random.Random(7)
    on = Notebook(SqliteBackend(on_path), embedder=None, config=config(True))
    off = Notebook(SqliteBackend(off_path), embedder=None, config=config(False))
    timings: dict[str, list[float]] = {"facts on": [], "facts off": [], "index read": []}
    linked = 0
    with on, off:
        s_on, s_off = on.start_session("timed").id, off.start_session("timed").id
        people = sorted({who for who, text in statements if "Firm" in text})
        engine = FactEngine()
        for k in range(n):
            who = rng.choice(people)
            text = f"I've started at Firm {1000 + k}."
            when = datetime.now(UTC)
            modes = [(on, s_on, "facts on"), (off, s_off, "facts off")]
            for nb, sid, mode in modes if k % 2 else modes[::-1]:
                start = time.perf_counter()
                moment = nb.record(sid, text, speaker=who, timestamp=when)
                timings[mode].append(time.perf_counter() - start)
                if mode == "facts on":
                    new = moment
            key = f"employer/i/{who.casefold()}"
            keys = engine.keys_of(Statement("probe", text, when, "user", who))
            assert key in keys, keys
            start = time.perf_counter()
            on.backend.fact_key_members(keys, 10**9, 8)
            timings["index read"].append(time.perf_counter() - start)
            [before] = on.backend.fact_key_members([key], new.number, 1)
            earlier = on.get_moment(f"m_{before}")
            linked += earlier is not None and f"superseded_by:{new.id}" in earlier.relations.links
    for mode, samples in timings.items():
        ms = [s * 1000 for s in samples]
        print(
            f"  {mode:10s} p50 {percentile(ms, 0.5):7.3f} ms   p95 {percentile(ms, 0.95):7.3f} ms"
        )
    ratio = percentile(timings["facts on"], 0.5) / percentile(timings["facts off"], 0.5)
    print(f"  facts on / off, p50: {ratio:.2f}x")
    print(f"  the latest earlier job of the speaker linked as superseded: {linked}/{n}")


def config(enabled: bool) -> NotebookConfig:
    return NotebookConfig(facts=FactSettings(enabled=enabled))


if __name__ == "__main__":
    main()
