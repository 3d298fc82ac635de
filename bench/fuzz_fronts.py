"""Fuzzing every front end, and the server's peak memory under maximal requests (issue 40).

Issue 40's "Measure": generated and hand-made hostile input through each front end of one
source tree, counted as the client sees it, and the server's memory under 20 parallel
requests each just under the body limit. Run it once per source tree (``--src``: the tree
whose ``src/`` the servers and CLI processes run from, by ``PYTHONPATH``), e.g. on main and
on the commit before issue 40's hardening, and compare the two tables; within a run each
line stands beside its alternative (owner beside guest, schema-valid beside invalid input,
idle memory beside loaded).

Five parts, each bounded by a time budget (and a number of examples), so a run takes about
ten minutes on a loaded two-core machine:

1. ``http``: a real ``agent-notebook serve`` on a fresh home (an owner token, a guest token
   made with ``agent-notebook token create``, a seeded session with a decision, a pending
   item, an escalation, a chat thread and a session-notebook section). Every operation of
   its OpenAPI document (read from the running server) gets ``--examples`` cases generated
   by schemathesis (half schema-valid, half schema-invalid; for an operation with path
   parameters, half of each with the seeded ids so the handler is reached), then
   ``--edges`` cases that put one edge value (600 KB strings, 2**63, 1e308, dates past
   9999-12-31 or before year 1, NUL, path traversal...) into one body field or query
   parameter of a valid case. Sent with the owner token; with the guest token, the guest's
   operations (slice, write-back) get the same and every other operation one valid case.
   Destructive operations (DELETE, redact, forget) run last.
2. ``mcp``: the ``mcp`` SDK's streamable-HTTP client on the same server's ``/mcp/`` (owner)
   and ``/mcp-guest/`` (guest). Each tool's input schema is turned into an operation of a
   small OpenAPI document so schemathesis generates its arguments (valid and invalid), plus
   the edge values field by field; ``call_tool`` with each.
3. ``cli``: ``python -m agent_notebook COMMAND`` processes (record, ingest, import, search,
   slice, show, moments, decide, add-pending, close-pending, edit-decision, about,
   notebook set, redact, forget) with hypothesis-generated arguments, stdin (moment drafts
   as JSON, or raw bytes) and files (JSON, JSONL, YAML folders), on a seeded home.
4. ``yaml``: hand-made bad exports (alias bombs in an action's result, which the model
   walks, and as an extra key of a moment file, a session file and index.yaml; a 26-digit
   counter, no counters, a 5,001-digit number; a symbolic link in ``media/``;
   100,000-deep nesting; a 2 MiB and a 20 MiB moment text; wrong types; a Python tag; a
   timestamp at the range's edge; a moment file named for another id...) each imported
   by ``agent-notebook import`` into a fresh home; wall time and peak RSS of the child
   (its VmHWM, sampled every 10 ms), under an address-space cap (``--import-mem-gib``)
   and a timeout, so an alias bomb cannot take the machine.
5. ``memory``: a fresh server; its ``VmHWM`` (/proc/PID/status) idle, then after each of
   ``--waves`` waves of 20 parallel requests each just under the body limit (half guest
   write-backs of one long text, half owner batches of six moments at the text limit),
   with the statuses, wall time and the session record's size after.

Counts: ``tried`` requests sent; ``ok`` 2xx (CLI: exit 0; MCP: a result that is no error);
``refused`` 4xx (CLI: exit 1 or 2; MCP: an error result); ``5xx``; ``tracebacks``: a body,
tool result or CLI output holding ``Traceback (most recent call last)``, or, for MCP, an
exception in the client (a protocol error, an invalid result); ``hangs``: no answer within
``--timeout`` seconds (the process killed, for the CLI). ``server log tb`` counts tracebacks
the server wrote to its own log meanwhile. Each 5xx, traceback and hang is listed after the
table with the request that caused it (first ``--show`` of each kind per front).

    .venv-fuzz/bin/python bench/fuzz_fronts.py --src /work/main [--examples 8] [--edges 12]
        [--http-seconds 150] [--mcp-seconds 90] [--cli-seconds 90] [--cli-runs 150]
        [--timeout 30] [--import-timeout 60] [--import-mem-gib 4] [--waves 2]
        [--only http,mcp,cli,yaml,memory] [--keep]

Run it from a venv with the dev extra (schemathesis, hypothesis, mcp, httpx); ``--src``'s
dependencies must be those the venv holds.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from fuzz.cli_front import cli_part
from fuzz.common import (
    Server,
    Tally,
    Tree,
    load,
    log,
    make_home,
    print_found,
    print_table,
)
from fuzz.exports import yaml_part
from fuzz.http_front import http_part, seed_server
from fuzz.mcp_front import mcp_part
from fuzz.memory import memory_part

# -- the run ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, required=True, help="the source tree to run (its src/)")
    parser.add_argument(
        "--examples", type=int, default=8, help="generated cases per operation/tool"
    )
    parser.add_argument("--edges", type=int, default=12, help="edge-value cases per operation/tool")
    parser.add_argument("--http-seconds", type=float, default=150)
    parser.add_argument("--mcp-seconds", type=float, default=90)
    parser.add_argument("--cli-seconds", type=float, default=90)
    parser.add_argument("--cli-runs", type=int, default=150)
    parser.add_argument(
        "--timeout", type=float, default=30, help="a hang: no answer in this many s"
    )
    parser.add_argument("--import-timeout", type=float, default=60)
    parser.add_argument("--import-mem-gib", type=float, default=4)
    parser.add_argument("--waves", type=int, default=2)
    parser.add_argument("--show", type=int, default=8, help="findings listed per kind and front")
    parser.add_argument("--only", default="http,mcp,cli,yaml,memory")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--findings",
        type=Path,
        default=Path(__file__).parent / "out" / f"fuzz-{time.strftime('%Y%m%d-%H%M%S')}",
        help="where each finding's whole input is written, one JSON file each",
    )
    args = parser.parse_args()
    global FINDINGS
    FINDINGS = args.findings
    parts = set(args.only.split(","))
    tree = Tree(args.src.resolve())
    started = time.perf_counter()
    load_start = load()
    check = subprocess.run(
        [sys.executable, "-c", "import agent_notebook; print(agent_notebook.__file__)"],
        env=tree.env,
        capture_output=True,
        text=True,
    )
    print(f"fuzz_fronts on {tree.describe()}")
    print(
        f"agent_notebook imported from {check.stdout.strip()}; load average at start {load_start}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="agent-notebook-fuzz-"))
    rows: list[Tally] = []
    extra: list[str] = []
    memory: list[str] = []
    try:
        if parts & {"http", "mcp"}:
            home = tmp / "serve-home"
            _, guest = make_home(tree, home)
            server = Server(tree, home, tmp / "serve.log")
            try:
                seeded = seed_server(server)
                if "http" in parts:
                    log(f"http: start (load {load()})")
                    rows += http_part(server, guest, seeded, args)
                    tbs = server.tracebacks()
                    rows[0].note += f"; server log tracebacks so far {len(tbs)}"
                    extra += [
                        f"  server log after HTTP: {n} x {line}" for line, n in Counter(tbs).items()
                    ]
                if "mcp" in parts:
                    log(f"mcp: start (load {load()})")
                    before = len(server.tracebacks())
                    rows += mcp_part(server, guest, seeded, args)
                    tbs = server.tracebacks()[before:]
                    extra += [
                        f"  server log after MCP: {n} x {line}" for line, n in Counter(tbs).items()
                    ]
                    extra.append(f"  server log tracebacks during MCP: {len(tbs)}")
            finally:
                server.stop()
        if "cli" in parts:
            log(f"cli: start (load {load()})")
            rows += cli_part(tree, tmp, args)
        yaml_lines: list[str] = []
        if "yaml" in parts:
            log(f"yaml: start (load {load()})")
            found, yaml_lines = yaml_part(tree, tmp, args)
            rows += found
        if "memory" in parts:
            log(f"memory: start (load {load()})")
            memory = memory_part(tree, tmp, args)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print_table(
        f"== fuzzing {tree.describe()} (load at start {load_start}, at end {load()}; "
        f"{time.perf_counter() - started:.0f} s)",
        rows,
        "\n".join(extra),
    )
    if yaml_lines:
        print("\n== each bad export imported into a fresh home")
        print("\n".join(yaml_lines))
    if memory:
        print("\n== the server's memory under 20 parallel maximal requests")
        print("\n".join(memory))
    print("\n== findings (5xx, tracebacks, hangs, other exits, bad exports imported)")
    print_found(rows, args.show)
    if FINDINGS and FINDINGS.exists():
        print(f"each finding's whole input: {FINDINGS}/")
    print(f"\nload average at end {load()}; total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
