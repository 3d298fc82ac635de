"""Part 5: the server's peak memory under maximal requests."""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from .common import (
    BODY_LIMIT,
    MAX_TEXT_BYTES,
    MIB,
    Server,
    Tree,
    log,
    make_home,
)

# -- part 5: peak memory under maximal requests -------------------------------------------------


def memory_part(tree: Tree, tmp: Path, args: argparse.Namespace) -> list[str]:
    home = tmp / "memory-home"
    _, guest = make_home(tree, home)
    server = Server(tree, home, tmp / "memory-serve.log")
    out: list[str] = []
    try:
        auth = {"Authorization": f"Bearer {server.owner}"}
        gauth = {"Authorization": f"Bearer {guest}"}
        with httpx.Client(base_url=server.url, timeout=300) as api:
            sid = api.post("/api/sessions", json={"task": "memory"}, headers=auth).json()["id"]
            api.post(f"/api/sessions/{sid}/moments", json={"text": "warm up"}, headers=auth)
            api.post(
                f"/api/sessions/{sid}/write-back",
                json={"guest": "fuzzer", "kind": "decision", "text": "warm up"},
                headers=gauth,
            )
            over = api.post(
                f"/api/sessions/{sid}/moments",
                content=b'{"text": "' + b"x" * BODY_LIMIT + b'"}',
                headers={**auth, "Content-Type": "application/json"},
            )
        idle = server.status("VmHWM")
        out.append(
            f"body limit {BODY_LIMIT:,} bytes (a body one over it: {over.status_code}); "
            f"server VmHWM idle after a warm-up {idle / 1024:.0f} MiB, VmRSS {server.status('VmRSS') / 1024:.0f} MiB"
        )
        text_wb = "w" * (BODY_LIMIT - 4096)
        batch = {"moments": [{"text": "m" * (MAX_TEXT_BYTES - 1024)} for _ in range(6)]}
        batch_bytes = len(json.dumps(batch))
        out.append(
            f"each wave: 20 parallel requests, 10 guest write-backs of {len(text_wb):,} bytes of text "
            f"and 10 owner batches of 6 moments at the text limit ({batch_bytes:,} bytes)"
        )
        out.append(
            "| wave | wall s | statuses | VmHWM MiB | VmRSS MiB after | session record bytes |"
        )
        out.append("| --- | --- | --- | --- | --- | --- |")
        out.append(
            f"| idle | - | - | {idle / 1024:.0f} | {server.status('VmRSS') / 1024:.0f} | - |"
        )
        notes: list[str] = []
        for wave in range(1, args.waves + 1):
            statuses: Counter[str] = Counter()
            refusals: dict[str, str] = {}
            lock = threading.Lock()
            barrier = threading.Barrier(21)

            def one(
                k: int,
                barrier: threading.Barrier = barrier,
                lock: threading.Lock = lock,
                refusals: dict[str, str] = refusals,
                statuses: Counter[str] = statuses,
            ) -> None:
                with httpx.Client(base_url=server.url, timeout=args.timeout * 10) as c:
                    barrier.wait()
                    try:
                        if k % 2:
                            r = c.post(
                                f"/api/sessions/{sid}/write-back",
                                json={"guest": "fuzzer", "kind": "decision", "text": text_wb},
                                headers=gauth,
                            )
                            what = f"write-back {r.status_code}"
                        else:
                            r = c.post(
                                f"/api/sessions/{sid}/moments/batch", json=batch, headers=auth
                            )
                            what = f"batch {r.status_code}"
                    except httpx.HTTPError as err:
                        what = f"{type(err).__name__}"
                    else:
                        if r.status_code >= 300:
                            with lock:
                                refusals.setdefault(what, r.text[:240])
                    with lock:
                        statuses[what] += 1

            threads = [threading.Thread(target=one, args=(k,)) for k in range(20)]
            for t in threads:
                t.start()
            barrier.wait()
            t0 = time.perf_counter()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
            with httpx.Client(base_url=server.url, timeout=300, headers=auth) as api:
                size = len(api.get(f"/api/sessions/{sid}").content)
            out.append(
                f"| {wave} | {wall:.1f} | {', '.join(f'{k} x{v}' for k, v in sorted(statuses.items()))} | "
                f"{server.status('VmHWM') / 1024:.0f} | {server.status('VmRSS') / 1024:.0f} | {size:,} |"
            )
            log(out[-1])
            notes += [f"wave {wave}, {k}: {v}" for k, v in refusals.items()]
        out += notes
        out.append(f"notebook.db after: {(home / 'notebook.db').stat().st_size / MIB:.0f} MiB")
    finally:
        server.stop()
    return out
