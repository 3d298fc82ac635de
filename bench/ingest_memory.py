"""Peak memory of reading a large JSONL conversation for ``ingest`` (issue 40, item 7).

Writes a JSONL file of ``--mib`` MiB (messages of about 1 KiB), then in a fresh process
parses it (:func:`agent_notebook.ingest.parse_file`: every line read, checked and turned
into a draft, nothing recorded) and prints the process's peak resident memory
(``ru_maxrss``) beside the file's size. Run it against two checkouts to compare:

    PYTHONPATH=/path/to/before/src python bench/ingest_memory.py --mib 200
    PYTHONPATH=/path/to/after/src python bench/ingest_memory.py --mib 200
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import resource, sys, time
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
from agent_notebook.ingest import parse_file
loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
plan = parse_file(sys.argv[1])
took = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(plan.moment_count, loaded, peak, took)
"""


def write_file(path: Path, mib: int) -> int:
    text = "Booked the 09:04 TGV to Lyon Part-Dieu, seat 42, coach 7. " * 17  # ~1 KiB
    count = 0
    with path.open("w", encoding="utf-8") as f:
        while f.tell() < mib * 1024 * 1024:
            role = "user" if count % 2 == 0 else "assistant"
            f.write(json.dumps({"role": role, "content": f"{count} {text}"}) + "\n")
            count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=200, help="size of the JSONL file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chat.jsonl"
        count = write_file(path, args.mib)
        size = path.stat().st_size
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True
        )
        moments, loaded, peak, took = done.stdout.split()
    kib = 1024  # ru_maxrss is in KiB on Linux
    print(f"file: {size / 2**20:.0f} MiB, {count:,} messages; parsed {int(moments):,} moments")
    print(
        f"peak RSS {int(peak) * kib / 2**20:,.0f} MiB (after imports {int(loaded) * kib / 2**20:,.0f} "
        f"MiB): {(int(peak) - int(loaded)) * kib / size:.2f}x the file; {float(took):.1f} s"
    )


if __name__ == "__main__":
    main()
