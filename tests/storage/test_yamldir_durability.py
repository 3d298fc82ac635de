"""The YAML backend's transactions are all-or-nothing, even when the process dies inside one.

A child process records one 300-moment ``record_many`` into a YAML notebook and is killed
with SIGKILL part-way: by the parent at a random moment, or by itself just before its n-th
file-system step (an ``fsync``, rename or unlink) for n spread over the whole batch, so the
kill lands in every phase (before the journal, among the moments, between the session file
and ``index.yaml``, after the commit). The code that writes runs unchanged; only the kill is
placed. Reopening the notebook must show all of the batch with its session stats, or none.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.errors import CorruptFile
from agent_notebook.storage import YamlDirBackend
from agent_notebook.storage.conformance import SID, make_entry, make_moment, make_session
from agent_notebook.storage.journal import JOURNAL_FILE
from tests.support import ROOT

SRC = str(ROOT / "src")
BATCH = 300

BATCH_CHILD = """
import os, signal, sys
from agent_notebook import Notebook

home, sid, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
nb = Notebook.open(home, backend="yaml")
steps = 0

def killing(real):
    def step(*args, **kwargs):
        global steps
        steps += 1
        if steps == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return step

drafts = [{"text": f"batch {sys.argv[4]} moment {k}: the train to Lyon, seat {k}"} for k in range(300)]
print("ready", flush=True)
# count (and kill at) the file-system steps of the batch only
os.fsync, os.replace, os.unlink = killing(os.fsync), killing(os.replace), killing(os.unlink)
nb.record_many(sid, drafts)
print("done", steps, flush=True)
nb.close()
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["AGENT_NOTEBOOK_EMBEDDER"] = "none"  # the records are under test, not the vectors
    return env


def _run_batch(script: Path, home: Path, sid: str, kill_at: int, run: int) -> list[str]:
    """Run one batch; ``kill_at`` > 0 kills it at that step, -1 lets it run until the
    parent kills it (at a random moment, once it is ready), 0 lets it finish."""
    args = [sys.executable, str(script), str(home), sid, str(kill_at), str(run)]
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
    )
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    if kill_at == -1 and ready == "ready\n":
        time.sleep(random.Random(run).uniform(0.0, 0.6))  # where the kill lands, not a bound
        proc.send_signal(signal.SIGKILL)  # on a quick machine the batch may be done by then
    out, err = proc.communicate(timeout=300)
    lines = [ready.strip(), *out.splitlines()]
    assert lines[0] == "ready", err
    if kill_at > 0 or (kill_at == -1 and proc.returncode != 0):
        assert proc.returncode == -signal.SIGKILL, (lines, err)
    else:
        assert proc.returncode == 0, err
    return lines[1:]


def _check_all_or_none(home: Path, sid: str) -> int:
    """Reopen the notebook: the batch whole or not at all, stats agreeing, nothing left of
    the crash. Returns 1 when the batch is there, 0 when it is not."""
    with Notebook.open(home, backend="yaml") as nb:
        moments = nb.moments(sid)
        assert len(moments) in (1, 1 + BATCH), f"{len(moments) - 1} of the batch's moments"
        session = nb.get_session(sid)
        assert session.stats.moments == len(moments) == session.context.raw_history_size
        assert session.context.recent_moments == [m.id for m in moments][-20:]
        everyone = nb.moments()
        assert [m.id for m in everyone] == [f"m_{i}" for i in range(1, len(everyone) + 1)]
        assert nb.backend.counters().get("moment", 0) == len(everyone)  # nothing reserved
        stored = {m.id for m in everyone}
        for concept in nb.backend.list_concepts():
            assert set(concept.moments) <= stored
        others = [m.content.text for m in everyone if m.session != sid]
        assert others == ["a moment a rolled-back batch must leave alone"]
    assert not list(home.rglob("*.tmp")), "temp files left"
    assert not (home / JOURNAL_FILE).exists()
    files = list((home / "sessions" / sid / "moments").glob("m_*.yaml"))
    assert len(files) == len(moments)
    return len(moments) // BATCH


@pytest.mark.slow
def test_sigkill_inside_record_many_leaves_all_or_none(tmp_path: Path) -> None:
    script = tmp_path / "batch_child.py"
    script.write_text(BATCH_CHILD, encoding="utf-8")
    template = tmp_path / "template"  # each run starts from a copy of it
    with Notebook.open(template, backend="yaml") as nb:
        other = nb.start_session("recorded before the batch").id
        nb.record(other, "a moment a rolled-back batch must leave alone")
        sid = nb.start_session("a batch killed part-way").id
        nb.record(sid, "the session's first moment, before the batch")

    def fresh(run: int) -> Path:
        return Path(shutil.copytree(template, tmp_path / f"run-{run}", symlinks=True))

    (done,) = _run_batch(script, fresh(0), sid, 0, 0)
    steps = int(done.split()[1])  # the file-system steps of the whole batch
    assert _check_all_or_none(tmp_path / "run-0", sid) == 1
    rng = random.Random(20260607)
    # the journal's temp file, among the moments, the index's rename (the commit) and the
    # journal's removal after it, one random step, and two kills from outside
    kill_points = [1, steps // 3, steps // 2, steps - 2, steps - 1, steps, rng.randint(1, steps)]
    kill_points += [-1, -1]
    outcomes = []
    for run, kill_at in enumerate(kill_points, start=1):
        home = fresh(run)
        lines = _run_batch(script, home, sid, kill_at, run)
        # killed before record_many returned (a kill from outside may come after it)
        assert lines == [] or kill_at == -1, lines
        outcomes.append(_check_all_or_none(home, sid))
    # both happen: a kill before the commit rolls back, one after it finishes the commit
    assert 0 in outcomes and 1 in outcomes, outcomes
    with Notebook.open(home, backend="yaml") as nb:  # and the notebook takes writes again
        before = nb.get_session(sid).stats.moments
        nb.record_many(sid, [{"text": f"after the crash {k}"} for k in range(3)])
        assert nb.get_session(sid).stats.moments == before + 3


def test_a_notebook_left_open_settles_a_crashed_batch_before_it_writes(tmp_path: Path) -> None:
    """The journal is settled by the next write of a process that had the notebook open
    all along (not only by the next open): else that write would bury the partial batch."""
    script = tmp_path / "batch_child.py"
    script.write_text(BATCH_CHILD, encoding="utf-8")
    home = tmp_path / "home"
    # no background embedding: its own writes (journaled too) would leave a temp file in
    # flight when the test looks for strays (seen once under a loaded CI run)
    with Notebook.open(home, backend="yaml", background_embedding=False) as nb:
        sid = nb.start_session("written to while a batch is killed").id
        nb.record(sid, "before the batch")
        moments_dir = home / "sessions" / sid / "moments"
        _run_batch(script, home, sid, 400, 1)  # among the moments (about 600 steps in all)
        assert (home / JOURNAL_FILE).exists()
        assert 1 < len(list(moments_dir.glob("m_*.yaml"))) < 1 + BATCH  # the batch in part
        nb.record(sid, "after the batch, through the notebook open all along")
        assert len(list(moments_dir.glob("m_*.yaml"))) == 2
        assert not list(home.rglob("*.tmp"))
        assert [m.content.text for m in nb.moments(sid)] == [
            "before the batch",
            "after the batch, through the notebook open all along",
        ]
        assert nb.get_session(sid).stats.moments == 2


def test_a_journal_cut_short_while_written_leaves_no_temp_file_after_the_next_batch(
    tmp_path: Path,
) -> None:
    """A crash while the journal itself is written leaves only its temp file (no journal,
    nothing to recover, no state changed): the next batch of a process that had the notebook
    open all along removes it."""
    home = tmp_path / "home"
    with Notebook.open(home, backend="yaml") as nb:
        sid = nb.start_session("a journal cut short").id
        cut_short = home / f".{JOURNAL_FILE}.x8k2abcd.tmp"  # as write_atomic names it
        cut_short.write_bytes(b'{"format": "agent-notebook-batch-jour')
        nb.record(sid, "the next batch")
        assert not list(home.rglob("*.tmp"))
        assert [m.content.text for m in nb.moments(sid)] == ["the next batch"]


def test_a_failed_write_rolls_back_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write failing part-way (a full disk) leaves the files as they were, at once."""
    root = tmp_path / "yaml"
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")  # no vector writes meanwhile
    with Notebook.open(root, backend="yaml") as nb:
        sid = nb.start_session("a disk that fills up").id
        nb.record(sid, "kept: written before the disk filled")
        before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
        real = os.replace
        calls = 0

        def filling(src: str, dst: str) -> None:  # one rename fails, among the moments
            nonlocal calls
            calls += 1
            if calls == 40:
                raise OSError(28, "No space left on device")
            real(src, dst)

        monkeypatch.setattr(os, "replace", filling)
        with pytest.raises(OSError, match="No space left"):
            nb.record_many(sid, [{"text": f"lost with the disk {k}"} for k in range(100)])
        assert calls > 40  # the files were put back (renamed over) before the error came out
        after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
        assert after == before  # before any reload: the files were put back at once
        assert nb.get_session(sid).stats.moments == 1
        assert [m.content.text for m in nb.moments(sid)] == ["kept: written before the disk filled"]


def test_a_journal_that_names_a_path_outside_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "yaml"
    YamlDirBackend(root).close()
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me", encoding="utf-8")
    journal = root / JOURNAL_FILE
    journal.write_text(
        '{"format": "agent-notebook batch journal", "version": 1,'
        ' "commit": {"path": "index.yaml", "sha256": "0"},'
        ' "undo": [{"path": "../precious.txt", "old": null}],'
        ' "new_dirs": [], "after_commit": []}',
        encoding="utf-8",
    )
    with pytest.raises(CorruptFile) as err:
        YamlDirBackend(root)
    assert str(journal) in str(err.value) and "../precious.txt" in str(err.value)
    assert outside.read_text(encoding="utf-8") == "keep me"
    assert journal.exists()  # nothing changed: the file is left for a person to look at


def test_a_torn_journal_is_named(tmp_path: Path) -> None:
    root = tmp_path / "yaml"
    YamlDirBackend(root).close()
    (root / JOURNAL_FILE).write_text('{"format": "agent-notebook batch', encoding="utf-8")
    with pytest.raises(CorruptFile, match=JOURNAL_FILE):
        YamlDirBackend(root)


ARCHIVE_CHILD = """
import os, signal, sys
from agent_notebook.storage import YamlDirBackend
from agent_notebook.storage.conformance import make_entry

backend = YamlDirBackend(sys.argv[1])
# the first unlink of the transaction is the archived moment's file, after the commit
os.unlink = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
backend.archive_moments([make_entry(2, concepts=["lyon"])])
"""


def test_an_archive_killed_after_its_commit_is_finished(tmp_path: Path) -> None:
    """Killed once ``index.yaml`` (the commit) is written but before the archived moment's
    file is deleted: the archive must win (before, the file left made the moment active)."""
    root = tmp_path / "yaml"
    backend = YamlDirBackend(root)
    backend.put_session(make_session())
    backend.put_moments([make_moment(n, f"moment {n} about Lyon") for n in (1, 2, 3)])
    backend.close()
    script = tmp_path / "archive_child.py"
    script.write_text(ARCHIVE_CHILD, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(root)], capture_output=True, text=True, env=_env()
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert (root / JOURNAL_FILE).exists()
    again = YamlDirBackend(root)
    assert again.get_moment("m_2") is None
    assert again.get_archived(["m_2"]) == [make_entry(2, concepts=["lyon"])]
    assert [m.id for m in again.list_moments()] == ["m_1", "m_3"]
    assert not (root / "sessions" / SID / "moments" / "m_2.yaml").exists()
    assert not (root / JOURNAL_FILE).exists()
