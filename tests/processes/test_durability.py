"""Durability under SIGKILL and correctness under concurrent writers, with real processes.

* A child process records moments in a loop into a SQLite notebook and prints each moment's
  id once ``record`` has returned; the parent kills it with SIGKILL at a random moment, then
  checks that the database is intact and every printed (committed) id is readable. The
  children are forked from one process that imported the library once (a Python start
  costs seconds; the kill, the point of the test, is the same).
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
from tests.support import ROOT
from tests.support.waiting import HANG_GUARD_S, wait_until

pytestmark = pytest.mark.slow

SRC = str(ROOT / "src")

#: Reads "HOME RUN OUT ERR" lines; forks a child for each that records into HOME, writing
#: each committed id to OUT (one write per line, so a kill leaves whole lines), and answers
#: "pid PID", then "exit PID CODE" once the child is gone (killed, it is -9).
CRASH_FORKER = """
import os
import sys
import traceback
from agent_notebook import Notebook


def record_forever(home, run, out):
    def say(line):
        os.write(out, (line + "\\n").encode())

    nb = Notebook.open(home)
    found = nb.sessions()
    sid = found[-1].id if found and run % 4 else nb.start_session(f"run {run}").id
    say(f"ready {sid}")
    i = 0
    while True:
        i += 1
        if i % 5 == 0:  # a multi-moment transaction that also rewrites a parent moment
            parent = nb.record(sid, f"run {run} step {i}: plan the train to Lyon")
            say(parent.id)
            done = nb.record_many(
                sid,
                [{"text": f"run {run} step {i}.{k} seat {k}", "parent": parent.id} for k in range(3)],
            )
            for m in done:
                say(m.id)
        else:
            say(nb.record(sid, f"run {run} step {i}: remember the 7:04 train to Lyon").id)


for line in sys.stdin:
    home, run, out_path, err_path = line.split()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(os.open(err_path, os.O_WRONLY | os.O_CREAT, 0o600), 2)
            record_forever(home, int(run), os.open(out_path, os.O_WRONLY | os.O_CREAT, 0o600))
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(1)
    print("pid", pid, flush=True)
    print("exit", pid, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
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
    # search/test_retrieval.py) would only load a model into each of them.
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


class Forker:
    """The process running :data:`CRASH_FORKER`, and its children one at a time."""

    def __init__(self, script: Path) -> None:
        self.dir = script.parent
        self.proc = subprocess.Popen(
            [sys.executable, str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        self.pid: int | None = None

    def __enter__(self) -> Forker:
        return self

    def __exit__(self, *_: object) -> None:
        """Kill a child still running (a failed test), then let the forker end."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if self.pid is not None and _alive(self.pid):
            os.kill(self.pid, signal.SIGKILL)
        self.proc.stdin.close()
        self.proc.wait(HANG_GUARD_S)
        self.proc.stdout.close()

    def _answer(self, word: str) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        assert line and line[0] == word, (line, self.proc.poll())
        return int(line[-1])

    def start(self, home: Path, run: int) -> tuple[int, Path, Path]:
        """A child recording into ``home``, once it is ready: its pid, the file of its
        lines (the first is "ready SESSION"), its stderr."""
        out, err = self.dir / f"run-{run}.out", self.dir / f"run-{run}.err"
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{home} {run} {out} {err}\n")
        self.proc.stdin.flush()
        self.pid = pid = self._answer("pid")
        ready = wait_until(
            lambda: bool(_lines(out)), "the child's start", alive=lambda: _alive(pid)
        )
        assert ready and _lines(out)[0].startswith("ready"), err.read_text()
        return pid, out, err

    def reaped(self) -> int:
        """Wait until the child has ended and been reaped: its exit code."""
        code = self._answer("exit")
        self.pid = None
        return code


def _lines(path: Path) -> list[str]:
    """The complete lines written so far."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return text.split("\n")[:-1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # a zombie (ended, not yet reaped) counts too: the check after sees it
    except ProcessLookupError:
        return False
    return True


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
    script = tmp_path / "crash_forker.py"
    script.write_text(CRASH_FORKER, encoding="utf-8")
    home = tmp_path / "home"
    rng = random.Random(20260607)
    printed: dict[str, str] = {}  # moment id -> session it was recorded into
    unprinted: set[str] = set()  # committed by a transaction the kill cut short of printing
    kills = 0
    with Forker(script) as forker:
        while kills < 24 or len(printed) < 200:
            pid, out, err = forker.start(home, kills)
            sid = _lines(out)[0].split()[1]
            time.sleep(rng.uniform(0.05, 0.4))
            os.kill(pid, signal.SIGKILL)
            # -9: it was still writing when killed (had it stopped, its code would be 1)
            assert forker.reaped() == -signal.SIGKILL, err.read_text()
            lines = _lines(out)[1:]
            assert all(line.startswith("m_") for line in lines), (lines, err.read_text())
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
