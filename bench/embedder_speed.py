"""How fast and how big each offline embedder is, on the same LoCoMo texts.

    python bench/embedder_speed.py [--data PATH] [--embedders minilm,e5-small] [--repeats 3]

For each embedder: its package's install size, query embedding p50/p95 (one query at a
time) and indexing moments/s (length-sorted batches), on the first dev conversation's turns
and 100 of its questions, the median of ``--repeats`` runs (the machine is shared and noisy;
``per CPU-s`` counts this process's own CPU time, which other load distorts far less).
Recall per embedder: ``bench/retrieval_locomo.py --embedder NAME``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from _embedders import CANDIDATES, install_mb, make, speed
from retrieval_locomo import DEFAULT_DATA, SESSION_KEY, turn_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--embedders", default=",".join(CANDIDATES))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not args.data.exists():
        print(f"no LoCoMo data at {args.data}: skipped (pass --data PATH)", file=sys.stderr)
        return
    first = json.loads(args.data.read_text(encoding="utf-8"))[0]
    body = first["conversation"]
    texts = [turn_text(t) for k, v in body.items() if SESSION_KEY.fullmatch(k) for t in v]
    queries = [q["question"] for q in first["qa"]][:100]
    print(
        f"embedder speed on {len(texts)} turns and {len(queries)} questions of "
        f"{first['sample_id']}, median of {args.repeats} runs (targets: query p95 <= 30 ms, "
        f"indexing >= 100 moments/s on 2 cores when nothing else runs)"
    )
    print(f"load average (1 min) before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"  {'embedder':<14} {'threads':>7} {'install MB':>10} {'query p50':>10} "
        f"{'query p95':>10} {'moments/s':>10} {'per CPU-s':>10}"
    )
    for name in args.embedders.split(","):
        embedder = make(name)
        if isinstance(embedder, str):
            print(f"  {name:<14} skipped: {embedder}")
            continue
        runs = [speed(embedder, texts, queries) for _ in range(args.repeats)]
        med = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        size = install_mb(name)
        size_cell = f"{size:10.1f}" if size is not None else f"{'-':>10}"
        threads = getattr(embedder, "threads", "-")
        print(
            f"  {name:<14} {threads:>7} {size_cell} {med['query_p50_ms']:8.1f}ms "
            f"{med['query_p95_ms']:8.1f}ms {med['moments_per_s']:10.1f} "
            f"{med['moments_per_cpu_s']:10.1f}"
        )
    print(f"load average (1 min) after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
