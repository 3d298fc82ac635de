"""Durability under SIGKILL and correctness under concurrent writers, with real processes.

* A child process records moments in a loop into a SQLite notebook and prints each moment's
  id once ``record`` has returned; the parent kills it with SIGKILL at a random moment, then
  checks that the database is intact and every printed (committed) id is readable.
* Several processes record into one shared session at once: no id is lost or given twice,
  and the session's counts add up.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agent_notebook import Notebook
from waiting import HANG_GUARD_S

pytestmark = pytest.mark.slow

SRC = str(Path(__file__).resolve().parents[1] / "src")

CRASH_CHILD = """
import sys
from agent_notebook import Notebook

home, run = sys.argv[1], int(sys.argv[2])
nb = Notebook.open(home)
found = nb.sessions()
sid = found[-1].id if found and run % 4 else nb.start_session(f"run {run}").id
print("ready", sid, flush=True)
i = 0
while True:
    i += 1
    if i % 5 == 0:  # a multi-moment transaction that also rewrites a parent moment
        parent = nb.record(sid, f"run {run} step {i}: plan the train to Lyon")
        print(parent.id, flush=True)
        done = nb.record_many(
            sid, [{"text": f"run {run} step {i}.{k} seat {k}", "parent": parent.id} for k in range(3)]
        )
        for m in done:
            print(m.id, flush=True)
    else:
        m = nb.record(sid, f"run {run} step {i}: remember the 7:04 train to Lyon")
        print(m.id, flush=True)
"""

WRITER_CHILD = """
import sys
from agent_notebook import Notebook

home, sid, count, backend = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
nb = Notebook.open(home, backend=backend)
print("ready", flush=True)
sys.stdin.readline()  # wait until every writer is ready, then all start together
for i in range(count):
    m = nb.record(sid, f"writer {sys.argv[5]} moment {i} about the train to Lyon")
    print(m.id, flush=True)
nb.close()
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # These children test the records; embedding (derived, with its own SIGKILL test in
    # test_retrieval.py) would only load a model into each of them.
    env["AGENT_NOTEBOOK_EMBEDDER"] = "none"
    return env


class Child:
    """A child Python process; a thread collects its stdout lines as they come, so nothing
    printed before a kill is lost in a parent-side buffer. stderr goes to a file."""

    def __init__(self, script: Path, *args: str) -> None:
        self.err_path = script.with_name(f"{script.stem}-{time.monotonic_ns()}.err")
        with self.err_path.open("w", encoding="utf-8") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(script), *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=_env(),
            )
        self.lines: list[str] = []  # complete lines only
        self._first = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.endswith("\n"):
                self.lines.append(line[:-1])
            self._first.set()
        self._first.set()

    def wait_ready(self, timeout: float = HANG_GUARD_S) -> str:
        if not self._first.wait(timeout):
            self.proc.kill()
        if not self.lines or not self.lines[0].startswith("ready"):
            self.finish()
            pytest.fail(f"child did not start: {self.lines[:1]}\n{self.stderr()}")
        return self.lines[0]

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.close()

    def finish(self, timeout: float = HANG_GUARD_S) -> list[str]:
        """Wait for the end (killing the child after ``timeout``); the lines after "ready"."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.lines[1:]

    def stderr(self) -> str:
        return self.err_path.read_text(encoding="utf-8")


def _check_database(home: Path) -> None:
    conn = sqlite3.connect(home / "notebook.db")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        # the full-text index agrees with the moments table (raises if it does not)
        conn.execute("INSERT INTO moments_fts (moments_fts) VALUES ('integrity-check')")
    finally:
        conn.close()


def _check_consistent(nb: Notebook) -> set[str]:
    """Counters, stats and parent/child links agree with the moments stored; return the ids."""
    moments = nb.moments()
    n = len(moments)
    assert [m.id for m in moments] == [f"m_{i}" for i in range(1, n + 1)]  # no gap, no repeat
    assert nb.backend.counters().get("moment", 0) == n  # a killed transaction reserved nothing
    by_id = {m.id: m for m in moments}
    for session in nb.sessions():
        own = [m for m in moments if m.session == session.id]
        assert session.stats.moments == len(own) == session.context.raw_history_size
        assert session.context.recent_moments == [m.id for m in own][-20:]
    for m in moments:
        if m.relations.parent is not None:
            assert m.id in by_id[m.relations.parent].relations.children
        for child in m.relations.children:
            assert by_id[child].relations.parent == m.id
    return set(by_id)


def test_sigkill_never_loses_a_committed_moment(tmp_path: Path) -> None:
    script = tmp_path / "crash_child.py"
    script.write_text(CRASH_CHILD, encoding="utf-8")
    home = tmp_path / "home"
    rng = random.Random(20260607)
    printed: dict[str, str] = {}  # moment id -> session it was recorded into
    unprinted: set[str] = set()  # committed by a transaction the kill cut short of printing
    kills = 0
    while kills < 24 or len(printed) < 200:
        child = Child(script, str(home), str(kills))
        sid = child.wait_ready().split()[1]
        time.sleep(rng.uniform(0.05, 0.4))
        assert child.proc.poll() is None, child.stderr()  # still writing when killed
        child.proc.send_signal(signal.SIGKILL)
        lines = child.finish()
        assert child.proc.returncode == -signal.SIGKILL, child.stderr()
        assert all(line.startswith("m_") for line in lines), (lines, child.stderr())
        for line in lines:
            assert line not in printed and line not in unprinted, f"{line} given out twice"
            printed[line] = sid
        kills += 1
        last_printed = max((int(i[2:]) for i in lines), default=0)

        _check_database(home)
        with Notebook.open(home) as nb:
            for moment_id, session_id in printed.items():
                moment = nb.get_moment(moment_id)
                assert moment.session == session_id
            stored = _check_consistent(nb)
        # besides the printed ids, at most the transaction in flight when the kill came
        # (a record_many of three) may have committed, and only after what this run printed
        assert set(printed) <= stored
        new = stored - set(printed) - unprinted
        assert len(new) <= 3 and all(int(i[2:]) > last_printed for i in new), new
        unprinted |= new
    assert kills >= 24


def _run_writers(
    home: Path, tmp_path: Path, backend: str, processes: int, each: int
) -> tuple[str, list[list[str]]]:
    script = tmp_path / "writer_child.py"
    script.write_text(WRITER_CHILD, encoding="utf-8")
    with Notebook.open(home, backend=backend) as nb:
        sid = nb.start_session("shared by every writer").id
    children = [Child(script, str(home), sid, str(each), backend, str(k)) for k in range(processes)]
    for child in children:
        child.wait_ready()
    for child in children:
        child.go()
    ids = [child.finish() for child in children]
    for child in children:
        assert child.proc.returncode == 0, child.stderr()
        assert child.stderr() == ""
    return sid, ids


def test_concurrent_writers_share_one_sqlite_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    processes, each = 4, 500
    sid, ids = _run_writers(home, tmp_path, "sqlite", processes, each)
    total = processes * each
    everyone = [i for own in ids for i in own]
    assert [len(own) for own in ids] == [each] * processes
    assert len(set(everyone)) == total  # no id handed to two writers
    assert set(everyone) == {f"m_{i}" for i in range(1, total + 1)}
    for own in ids:  # each writer saw its ids grow
        numbers = [int(i[2:]) for i in own]
        assert numbers == sorted(numbers)
    _check_database(home)
    with Notebook.open(home) as nb:
        assert nb.backend.count_moments() == total
        assert [m.id for m in nb.moments()] == [f"m_{i}" for i in range(1, total + 1)]
        session = nb.get_session(sid)
        assert session.stats.moments == total  # no lost update of the shared session
        assert session.context.raw_history_size == total
        assert nb.stats().moments == total
        _check_consistent(nb)


def test_concurrent_writers_share_one_yaml_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    processes, each = 2, 100
    sid, ids = _run_writers(home, tmp_path, "yaml", processes, each)
    total = processes * each
    everyone = [i for own in ids for i in own]
    assert len(everyone) == len(set(everyone)) == total
    assert set(everyone) == {f"m_{i}" for i in range(1, total + 1)}
    with Notebook.open(home, backend="yaml") as nb:
        assert nb.backend.count_moments() == total
        session = nb.get_session(sid)
        assert session.stats.moments == total
        assert session.context.raw_history_size == total
        _check_consistent(nb)
        moment_files = list((home / "sessions" / sid / "moments").glob("m_*.yaml"))
        assert len(moment_files) == total
