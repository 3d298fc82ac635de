"""How fast the CLI answers: whole processes, each beside the floor in the same run.

A notebook of 8 moments (``_common.SAMPLE_TEXTS``, one session) is made in a temporary
directory on SQLite, with vectors when the default embedder is installed (``reindex``), so
no search has any embedding to catch up on. Then each command runs as a fresh process
(``python -m agent_notebook ...``), interleaved round by round with the floor,
``python -c 'import sqlite3'``: a lexical search (``--mode lexical``), ``sessions``, ``show``,
``stats``, and for comparison the default hybrid search, which loads the embedding model to
embed the query, and ``--version``. One warm-up round is not counted (it writes the bytecode
caches a pip install has: ``PYTHONDONTWRITEBYTECODE`` is dropped for the children).

Reported per command: the median and the spread of the wall time over ``--runs`` rounds,
the median CPU time (user + system: what a busy machine inflates least), the peak RSS
(``ru_maxrss`` of that process, from ``os.wait4``), and whether the light commands meet the
target (a median under 0.3 s and a peak under 80 MB, as a whole process). A forked child
starts its peak RSS at its parent's, so this script imports nothing of the notebook: a
separate process makes the notebook.

    python bench/cli_start.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import SAMPLE_TEXTS

TARGET_S = 0.3
TARGET_MB = 80.0
QUERY = "Lyon train"
#: Run in its own process: makes the 8-moment notebook at argv[1] (with vectors when the
#: default embedder is installed) and prints its session id and how many have a vector.
MAKE_NOTEBOOK = """
import json, sys
from agent_notebook import Notebook

with Notebook.open(sys.argv[1], background_embedding=False) as nb:
    session = nb.start_session("Plan the trip to Lyon")
    texts = json.loads(sys.argv[2])
    for number, text in enumerate(texts):
        nb.record(session.id, text, role="user" if number % 2 == 0 else "assistant")
    if nb.semantic is not None:
        nb.reindex()
    vectors = 0 if nb.semantic is None else len(texts) - nb.unembedded()
print(session.id, vectors)
"""


def make_notebook(home: Path) -> tuple[str, int]:
    """The notebook; returns its session id and how many moments have a vector."""
    made = subprocess.run(
        [sys.executable, "-c", MAKE_NOTEBOOK, str(home), json.dumps(SAMPLE_TEXTS)],
        capture_output=True,
        text=True,
        check=True,
    )
    session, vectors = made.stdout.split()
    return session, int(vectors)


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one process running ``argv``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {err}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # KB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="rounds counted (median of these)")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="cli-start-") as scratch:
        home = Path(scratch) / "nb"
        session, vectors = make_notebook(home)
        cli = [python, "-m", "agent_notebook"]
        at = ["--home", str(home)]
        commands = {
            "floor: python -c 'import sqlite3'": ([python, "-c", "import sqlite3"], False),
            f"search {QUERY!r} --mode lexical": (
                [*cli, "search", QUERY, "--mode", "lexical", *at],
                True,
            ),
            "sessions": ([*cli, "sessions", *at], True),
            f"show {session}": ([*cli, "show", session, *at], True),
            "stats": ([*cli, "stats", *at], True),
            "--version": ([*cli, "--version"], False),
            f"search {QUERY!r} (hybrid, the default)": ([*cli, "search", QUERY, *at], False),
        }
        samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        for round_ in range(args.runs + 1):
            for name, (argv, _) in commands.items():
                measured = run_once(argv, env)
                if round_:  # round 0 warms up
                    samples[name].append(measured)
    print(
        f"CLI start-up, {args.runs} interleaved rounds (after 1 warm-up), "
        f"{len(SAMPLE_TEXTS)} moments, {vectors} with a vector, Python {sys.version.split()[0]}"
    )
    print(f"{'command':48} {'median':>9} {'min-max':>15} {'CPU':>9} {'peak RSS':>10}  target")
    floor = statistics.median(s for s, _, _ in samples[next(iter(commands))])
    missed = []
    for name, (_, light) in commands.items():
        times = [s for s, _, _ in samples[name]]
        cpu = statistics.median(c for _, c, _ in samples[name])
        rss = max(m for _, _, m in samples[name])
        median = statistics.median(times)
        verdict = ""
        if light:
            met = median < TARGET_S and rss < TARGET_MB
            verdict = "met" if met else "MISSED"
            if not met:
                missed.append(name)
        print(
            f"{name:48} {median:7.3f} s {min(times):6.3f}-{max(times):5.3f} s "
            f"{cpu:7.3f} s {rss:7.1f} MB  {verdict}"
        )
    print(
        f"light commands (target < {TARGET_S} s and < {TARGET_MB:.0f} MB): "
        + ("all met" if not missed else f"missed by {', '.join(missed)}")
        + f"; the floor is {floor:.3f} s"
    )


if __name__ == "__main__":
    main()
