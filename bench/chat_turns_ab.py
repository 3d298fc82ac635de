"""Chat turns, two source trees: ours (``chat_turns.py``'s variant e or c) from this tree and
from another (``git archive main | tar -x -C /tmp/main-tree``), each in its own process,
interleaved turn by turn (the order swapped every turn), each variant's background work
done between turns, untimed. Per tree: wall and CPU time (``process_time``: all of the
process's threads) of the timed ``graph.invoke``, p50/p95 over turns 100-200, 200-end and
100-end. CPU time says what a change costs when the machine's load makes wall time noisy.

    python bench/chat_turns_ab.py --base /tmp/main-tree [--variant e|c] [--turns 300]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def worker(tree: str, key: str, turns: int, conn: Connection) -> None:
    sys.path[:0] = [f"{tree}/src", f"{tree}/bench"]
    import agent_notebook
    from chat_turns import OursVariant, make_texts

    users, answers = make_texts(turns, 0)
    search = "hybrid" if key == "c" else "lexical"
    with tempfile.TemporaryDirectory() as base:
        variant = OursVariant(key, Path(base), users, answers, context_search=search)
        conn.send(agent_notebook.__file__)
        while (i := conn.recv()) is not None:
            cpu, wall = time.process_time(), time.perf_counter()
            variant.run(users[i])
            conn.send((time.perf_counter() - wall, time.process_time() - cpu))
            variant.between_turns()
            variant.idle_times.append(0.0)
            conn.send(None)
        variant.finish()


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the other source tree")
    parser.add_argument("--variant", choices=("c", "e"), default="e")
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args()
    trees = {"base": str(Path(args.base).resolve()), "this": str(HERE)}
    multiprocessing.set_start_method("spawn")
    pipes = {}
    procs = []
    for name, tree in trees.items():
        ours, theirs = multiprocessing.Pipe()
        proc = multiprocessing.Process(target=worker, args=(tree, args.variant, args.turns, theirs))
        proc.start()
        procs.append(proc)
        pipes[name] = ours
        print(f"{name}: {ours.recv()}")
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for i in range(args.turns):
        for name in list(trees) if i % 2 == 0 else list(trees)[::-1]:
            pipes[name].send(i)
            times[name].append(pipes[name].recv())
            pipes[name].recv()
    for name in trees:
        pipes[name].send(None)
    for proc in procs:
        proc.join()
    for lo, hi in ((100, 200), (200, args.turns), (100, args.turns)):
        if lo >= hi or hi > args.turns:
            continue
        for name in trees:
            wall = [w for w, _ in times[name][lo:hi]]
            cpu = [c for _, c in times[name][lo:hi]]
            print(
                f"({args.variant}) {name:4} turns {lo}-{hi}: wall p50 {pct(wall, 0.5):7.2f} "
                f"p95 {pct(wall, 0.95):7.2f} | cpu p50 {pct(cpu, 0.5):6.2f} "
                f"p95 {pct(cpu, 0.95):6.2f} ms"
            )


if __name__ == "__main__":
    main()
