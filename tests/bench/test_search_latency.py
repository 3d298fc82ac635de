"""The benchmarks choose the same queries on every run: nothing they draw from a seeded
``Random`` may depend on a set's order, which changes with ``PYTHONHASHSEED`` (issue 16: two
runs of bench/search_latency.py searched for different questions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support import ROOT

BENCH = ROOT / "bench"

#: A made-up LoCoMo-shaped data set: the questions name the speakers, whom the bench renames.
DATA = [
    {
        "conversation": {"speaker_a": a, "speaker_b": b},
        "qa": [{"question": f"What did {a} tell {b} about trip {i}?"} for i in range(5)],
    }
    for a, b in (("Caroline", "Melanie"), ("Jon", "Gina"), ("Audrey", "Andrew"))
]

PICK = """
import json, random, sys
sys.path.insert(0, sys.argv[1])
from search_latency import locomo_questions
data = json.loads(sys.argv[2])
print(json.dumps(locomo_questions(data, 6, random.Random(7))))
"""


def picked(hash_seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, "-c", PICK, str(BENCH), json.dumps(DATA)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    found: list[str] = json.loads(done.stdout)
    return found


def test_search_latency_picks_the_same_questions_whatever_the_hash_seed() -> None:
    runs = [picked(seed) for seed in ("1", "2", "3", "4")]
    assert len(runs[0]) == 6 and all(run == runs[0] for run in runs)
    assert not any(name in q for q in runs[0] for name in ("Caroline", "Jon", "Audrey"))
