"""Everything under a notebook's home is owner-only: directories 0700, files 0600.

The process umask is set permissive (0022, and 0000) for each test, so the modes come from
the library and not from a careful environment.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.config import NotebookConfig, write_config

T0 = datetime(2026, 6, 7, 9, 30, tzinfo=UTC)


@pytest.fixture(params=[0o022, 0o000], ids=["umask022", "umask000"])
def permissive_umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield int(request.param)
    finally:
        os.umask(old)


def modes(root: Path) -> dict[str, str]:
    """``{relative path: octal mode}`` of ``root`` and everything below it."""
    found = {".": oct(stat.S_IMODE(root.stat().st_mode))}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            found[str(path.relative_to(root))] = oct(stat.S_IMODE(path.lstat().st_mode))
    return found


def assert_private(root: Path) -> dict[str, str]:
    found = modes(root)
    wrong = {}
    for rel, mode in found.items():
        path = root / rel
        want = "0o700" if path.is_dir() else "0o600"
        assert not path.is_symlink(), rel
        if mode != want:
            wrong[rel] = f"{mode}, want {want}"
    assert wrong == {}
    return found


def fill(nb: Notebook) -> None:
    for day in (7, 8):
        session = nb.start_session(f"Plan day {day}", started=T0.replace(day=day))
        first = nb.record(session.id, "Book the train to Lyon for 7 June")
        nb.record_many(
            session.id,
            [{"text": f"Step {i}: call Ana at 10am", "parent": first.id} for i in range(3)],
        )
        nb.decide(session.id, "Take the 7:04 train", why="cheapest")
        nb.open_pending(session.id, "Hotel?")


def test_sqlite_notebook_is_owner_only(tmp_path: Path, permissive_umask: int) -> None:
    home = tmp_path / "deep" / "er" / "home"  # missing parents are created too
    with Notebook.open(home) as nb:
        fill(nb)
        write_config(home, NotebookConfig())
        # while the connection is open the WAL and shared-memory files exist
        names = {p.name for p in home.iterdir()}
        assert {"notebook.db", "notebook.db-wal", "notebook.db-shm", "config.yaml"} <= names
        assert (home / "notebook.db-wal").stat().st_size > 0
        assert_private(home)
        assert modes(tmp_path / "deep")["."] == "0o700"
        assert modes(tmp_path / "deep" / "er")["."] == "0o700"
        # a second connection (another process would do the same) keeps them private
        with Notebook.open(home) as other:
            other.record(other.sessions()[0].id, "from the second connection")
            assert_private(home)
    assert_private(home)


def test_yaml_notebook_is_owner_only(tmp_path: Path, permissive_umask: int) -> None:
    home = tmp_path / "home"
    with Notebook.open(home, backend="yaml") as nb:
        fill(nb)
        write_config(home, NotebookConfig(backend="yaml"))
    found = assert_private(home)  # closed: the embedding worker is done writing
    sid = "s_2026-06-07_001"
    expected = {
        ".",
        ".lock",
        "index.yaml",
        "config.yaml",
        "sessions",
        f"sessions/{sid}.yaml",
        f"sessions/{sid}",
        f"sessions/{sid}/moments",
        f"sessions/{sid}/moments/m_1.yaml",
        f"sessions/{sid}/moments/m_4.yaml",
        "sessions/s_2026-06-08_001/moments/m_8.yaml",
    }
    assert expected <= set(found)
    assert not [rel for rel in found if rel.endswith(".tmp")]  # no temp files left behind
    # reopening and writing again (index.yaml and session files replaced) keeps them private
    with Notebook.open(home, backend="yaml") as nb:
        nb.record(sid, "one more")
    assert_private(home)


def test_yaml_backend_in_an_existing_directory(tmp_path: Path, permissive_umask: int) -> None:
    """The home itself may pre-exist (made by the user); what the library creates is private."""
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    with Notebook.open(home, backend="yaml") as nb:
        fill(nb)
    found = modes(home)
    del found["."]
    for rel, mode in found.items():
        assert mode == ("0o700" if (home / rel).is_dir() else "0o600"), rel
