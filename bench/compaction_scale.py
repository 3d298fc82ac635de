"""Compaction at 100,000 moments: ``compact --dry-run`` in a minute or less on two cores.

Builds a SQLite notebook of ``--size`` moments (100,000 by default) spread over a year:
sessions of 20 to 160 chat turns a minute apart, each on a day and at an hour drawn at
random (about three a day at 100,000), user and assistant by turns, the short chat texts of ``bench/chat_turns.py``'s templates (drawn by
``bench/search_latency.py``'s ``generated_corpus``, seeded: the same notebook every time),
recorded through ``record_many`` (concepts, keys and importance derived as in use), no
embedder. Then, as of the last moment + 365 days (every moment faded: all of them are
summarized, rolled into weeks and months, and archived), through the real command line
(a process each, ``--format json``):

* ``compact --dry-run``, ``--runs`` times (the median is the figure; target <= 60 s);
* ``compact`` for real, once, on a copy of the notebook;

and checks that both report the same figures (tokens and active moments before and after,
rollups made, moments archived). Each time is printed with the CPU time the process used
(user and system): on a shared machine the wall clock also counts the other work. ``--profile`` also runs one dry run in this process under
cProfile and prints its 25 most costly functions (cumulative, then own time).

    python bench/compaction_scale.py [--size 100000] [--runs 3] [--seed 0] [--home DIR]
        [--profile] [--no-real]

``--home DIR`` keeps the built notebook there and reuses it on the next run (the real run
always works on a copy). Prints the load average before and after: the machine is shared.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from agent_notebook import Notebook
from agent_notebook.config import NotebookConfig, write_config
from search_latency import generated_corpus

TARGET_DRY_RUN_S = 60.0
START = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
DAYS = 364
#: The figures a dry run and the run must agree on.
FIGURES = (
    "tokens_before",
    "tokens_after",
    "active_before",
    "active_after",
    "rollups",
    "extended",
    "summarized",
    "archived",
    "archived_rollups",
)
ENV = {**os.environ, "AGENT_NOTEBOOK_EMBEDDER": "none"}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def sessions_plan(size: int, rng: random.Random) -> list[tuple[datetime, int]]:
    """(start, moments) of each session, in time order: sessions of 20 to 160 moments until
    there are ``size``, each on a day of the year and at an hour from 8 to 21 drawn at
    random (about three a day at 100,000 moments)."""
    plan: list[tuple[datetime, int]] = []
    left = size
    while left > 0:
        n = min(left, rng.randint(20, 160))
        start = START + timedelta(days=rng.randrange(DAYS), hours=rng.randrange(14))
        plan.append((start, n))
        left -= n
    return sorted(plan)


def build(home: Path, size: int, seed: int) -> datetime:
    """The notebook in ``home`` (kept when it has ``size`` moments already); its last
    moment's time."""
    rng = random.Random(seed)
    plan = sessions_plan(size, rng)
    last = max(when + timedelta(minutes=n - 1) for when, n in plan)
    if home.exists():
        with Notebook.open(home, create=False, background_embedding=False) as nb:
            if nb.backend.count_moments() + nb.archive.count() >= size:
                return last
        shutil.rmtree(home)
    home.mkdir(parents=True, mode=0o700)
    write_config(home, NotebookConfig(backend="sqlite"))
    texts = generated_corpus(rng)
    t0 = time.perf_counter()
    done = 0
    with Notebook.open(home, background_embedding=False) as nb:
        for s, (when, n) in enumerate(plan):
            session = nb.start_session(f"chat {s}", started=when)
            drafts = [
                {
                    "text": next(texts),
                    "speaker": "assistant" if i % 2 else "user",
                    "timestamp": when + timedelta(minutes=i),
                }
                for i in range(n)
            ]
            nb.record_many(session.id, drafts)
            if (done + n) // 10_000 != done // 10_000:
                log(f"recorded {done + n} ({time.perf_counter() - t0:.0f} s)")
            done += n
        log(f"notebook: {nb.backend.count_moments()} moments in {len(plan)} sessions")
    return last


def compact_cli(home: Path, now: datetime, *extra: str) -> tuple[float, float, dict[str, Any]]:
    """``agent-notebook compact`` in a process of its own: its seconds (wall clock and CPU,
    user and system) and its JSON report."""
    command = [sys.executable, "-m", "agent_notebook", "compact", "--home", str(home)]
    command += ["--now", now.isoformat(), "--format", "json", *extra]
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    done = subprocess.run(command, env=ENV, capture_output=True, text=True, check=False)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"compact failed ({done.returncode}): {done.stderr[-2000:]}")
    return took, _children_cpu() - cpu0, json.loads(done.stdout)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def profile_dry_run(home: Path, now: datetime) -> None:
    profiler = cProfile.Profile()
    with Notebook.open(home, create=False, background_embedding=False) as nb:
        t0 = time.perf_counter()
        profiler.enable()
        nb.compact(now=now, dry_run=True)
        profiler.disable()
        took = time.perf_counter() - t0
    print(f"\nprofile of one dry run in this process ({took:.1f} s with cProfile on):")
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(25)
        lines = out.getvalue().splitlines()
        start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
        print(f"  by {order}:")
        for line in lines[start:]:
            if line.strip():
                print(f"  {line}")


def figures(report: dict[str, Any]) -> dict[str, Any]:
    return {k: report[k] for k in FIGURES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3, help="dry runs timed (the median)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--home", type=Path, default=None, help="keep the notebook here")
    parser.add_argument("--profile", action="store_true", help="cProfile one dry run")
    parser.add_argument("--no-real", action="store_true", help="time the dry run only")
    args = parser.parse_args()
    os.environ["AGENT_NOTEBOOK_EMBEDDER"] = "none"
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="compaction-scale-") as scratch:
        home = args.home or Path(scratch) / "home"
        last = build(home, args.size, args.seed)
        now = last + timedelta(days=365)
        dry_times: list[float] = []
        dry_cpu: list[float] = []
        dry: dict[str, Any] = {}
        for run in range(args.runs):
            took, cpu, dry = compact_cli(home, now, "--dry-run")
            dry_times.append(took)
            dry_cpu.append(cpu)
            log(f"dry run {run + 1}: {took:.1f} s (CPU {cpu:.1f} s)")
        real_s, real_cpu, real = None, 0.0, None
        if not args.no_real:
            copy = Path(scratch) / "real"
            shutil.copytree(home, copy)
            real_s, real_cpu, real = compact_cli(copy, now)
            log(f"real run: {real_s:.1f} s (CPU {real_cpu:.1f} s)")
        if args.profile:
            profile_dry_run(home, now)
    load_after = os.getloadavg()
    median = statistics.median(dry_times)
    verdict = "ok" if median <= TARGET_DRY_RUN_S else "over"
    print(
        f"\n{args.size} moments over {DAYS} days (seed {args.seed}), compacted as of "
        f"{now:%Y-%m-%d} (last moment + 365 days), {os.cpu_count()} cores"
    )
    print(f"load average (1/5/15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}")
    print(
        f"  compact --dry-run  median {median:6.1f} s, CPU {statistics.median(dry_cpu):6.1f} s"
        f"  (runs: {', '.join(f'{t:.1f}' for t in dry_times)})  target <= "
        f"{TARGET_DRY_RUN_S:.0f} s: {verdict}"
    )
    if real_s is not None and real is not None:
        print(f"  compact (real)     {real_s:6.1f} s, CPU {real_cpu:6.1f} s  (one run, on a copy)")
        same = figures(dry) == figures(real)
        print(f"  the dry run's figures equal the run's: {'yes' if same else 'NO'}")
        if not same:
            print(f"    dry run: {figures(dry)}\n    run:     {figures(real)}")
    print(
        f"  figures: active {dry['active_before']} -> {dry['active_after']}, tokens "
        f"{dry['tokens_before']} -> {dry['tokens_after']}, rollups {dry['rollups']}, "
        f"archived {dry['archived']} (+{dry['archived_rollups']} rollups)"
    )
    print(f"load average (1/5/15 min) after: {' '.join(f'{x:.2f}' for x in load_after)}")


if __name__ == "__main__":
    main()
