"""Profile chat turns: run ``--turns`` turns of one variant of ``chat_turns.py`` (ours, (c)
or (e)) in this process and print cProfile's top functions over turns ``--from``..``--turns``
(the earlier ones run unprofiled, to grow the thread first). Only the timed part of a turn
(``graph.invoke``) is profiled; the background work between turns runs unprofiled, as
``chat_turns.py`` leaves it untimed.

    python bench/profile_chat_turns.py [--variant e] [--from 100] [--turns 200] [--top 40]
        [--sort cumulative|tottime]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from chat_turns import OursVariant, make_texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("c", "e"), default="e")
    parser.add_argument("--from", dest="start", type=int, default=100)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--sort", default="cumulative")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    users, answers = make_texts(args.turns, args.seed)
    search = "hybrid" if args.variant == "c" else "lexical"
    with tempfile.TemporaryDirectory() as base:
        variant = OursVariant(args.variant, Path(base), users, answers, context_search=search)
        for i in range(args.start):
            variant.turn(i)
        profile = cProfile.Profile()
        times = []
        for i in range(args.start, args.turns):
            t0 = time.perf_counter()
            profile.enable()
            variant.run(users[i])  # the timed part only: the untimed upkeep is not profiled
            profile.disable()
            times.append(time.perf_counter() - t0)
            variant.between_turns()
        times.sort()
        print(
            f"({args.variant}) turns {args.start + 1}-{args.turns} profiled: "
            f"p50 {times[len(times) // 2] * 1000:.1f} ms (with cProfile's overhead); "
            f"per-turn ms below = cumulative / {len(times)}"
        )
        stats = pstats.Stats(profile)
        stats.sort_stats(args.sort).print_stats(args.top)
        variant.finish()


if __name__ == "__main__":
    main()
