"""Start four ``agent-notebook serve`` processes at one instant on one PostgreSQL notebook,
again and again (issue 28): on a fresh schema and on one ``init`` made, each round waits for
every server's ``/api/health`` and then fires the four servers' first session-notebook
writes at once. A round that has not finished after ``--deadline`` seconds is a hang: its
servers are killed and the round is counted as hung.

    python scripts/pg_start_stress.py --rounds 10

The server is ``AGENT_NOTEBOOK_TEST_PG`` (default: the local one, trust authentication);
a database is made for the run and dropped after.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the suite's helpers: tests.support

from tests.processes.test_postgres_startup import (  # noqa: E402
    SERVERS,
    owner_token,
    start_together,
    write_at_once,
)
from tests.support import pg  # noqa: E402
from tests.support.pg_servers import cli  # noqa: E402


def one_round(root: Path, kind: str, deadline: float) -> tuple[str, float, float]:
    """(outcome, seconds until all were healthy, seconds of the writes)."""
    url = pg.url_with_schema(root)
    if kind == "initialised":
        made = cli(root / "init", url, "init")
        if made.returncode != 0:
            return f"init failed: {made.stderr.strip()}", 0.0, 0.0
    began = time.monotonic()
    servers = start_together(root, url)
    hung = threading.Event()

    def watchdog() -> None:
        if not finished.wait(deadline):
            hung.set()
            for server in servers:
                server.process.kill()

    finished = threading.Event()
    threading.Thread(target=watchdog, daemon=True).start()
    try:
        for server in servers:
            server.wait_healthy()
        healthy = time.monotonic() - began
        token = owner_token([s.home for s in servers] + [root / "init"])
        began = time.monotonic()
        answers = write_at_once(servers, token, "stress")
        wrote = time.monotonic() - began
        bad = [a.status_code for a in answers if a.status_code != 200]
        return ("ok" if not bad else f"writes answered {bad}"), healthy, wrote
    except (AssertionError, OSError) as err:
        if hung.is_set():
            return f"HUNG (no end after {deadline:.0f} s)", 0.0, 0.0
        return f"failed: {str(err).splitlines()[0][:200]}", 0.0, 0.0
    finally:
        finished.set()
        for server in servers:
            server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--deadline", type=float, default=180.0, help="seconds; then a hang")
    args = parser.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="pg-start-stress-") as tmp:
        try:
            for n in range(args.rounds):
                for kind in ("fresh", "initialised"):
                    outcome, healthy, wrote = one_round(
                        Path(tmp) / f"{kind}-{n}", kind, args.deadline
                    )
                    failed += outcome != "ok"
                    print(
                        f"round {n + 1:2d} {kind:11s} {SERVERS} servers: {outcome:8s} "
                        f"all healthy after {healthy:5.1f} s, first writes {wrote:5.2f} s",
                        flush=True,
                    )
        finally:
            pg.drop_database()
    print(f"{2 * args.rounds - failed} of {2 * args.rounds} rounds ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
