"""Everything under a notebook's home is owner-only: directories 0700, files 0600.

The process umask is set permissive (0022, and 0000) for each test, so the modes come from
the library and not from a careful environment.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.config import NotebookConfig, write_config
from agent_notebook.core.files import ensure_private_dir
from agent_notebook.privacy.permissions import check_home, check_top, fix_command, fix_home
from tests.support.clirun import cli

T0 = datetime(2026, 6, 7, 9, 30, tzinfo=UTC)
LOGGER = "agent_notebook.privacy.permissions"
NO_EMBEDDER = {"AGENT_NOTEBOOK_EMBEDDER": "none"}


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


def test_yaml_backend_in_an_existing_directory(
    tmp_path: Path, permissive_umask: int, caplog: pytest.LogCaptureFixture
) -> None:
    """The home itself may pre-exist (made by the user); what the library creates is private,
    and the open says the home is not (it leaves the owner's directory as it is)."""
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    with caplog.at_level(logging.WARNING, LOGGER), Notebook.open(home, backend="yaml") as nb:
        fill(nb)
    assert f"{home} (dir 0o755, want 0o700)" in caplog.text
    found = modes(home)
    del found["."]
    for rel, mode in found.items():
        assert mode == ("0o700" if (home / rel).is_dir() else "0o600"), rel


# -- loosened permissions: reported on open, listed and fixed by doctor ----------------------


def loosen(home: Path) -> tuple[Path, Path]:
    """A notebook at ``home`` whose config.yaml is 0644 and whose archive directory is 0755,
    as a careless ``chmod`` or copy would leave them."""
    with Notebook.open(home) as nb:
        fill(nb)
    write_config(home, NotebookConfig())
    archive = ensure_private_dir(home / "archive")
    os.chmod(home / "config.yaml", 0o644)
    os.chmod(archive, 0o755)
    return home / "config.yaml", archive


def test_open_reports_loosened_paths_with_the_command_that_fixes_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    config, archive = loosen(home)
    os.chmod(home / "notebook.db", 0o640)
    with caplog.at_level(logging.WARNING, LOGGER), Notebook.open(home):
        pass
    [report] = [r for r in caplog.records if r.name == LOGGER]  # one message per open
    message = report.getMessage()
    assert f"{config} (file 0o644, want 0o600)" in message
    assert f"{archive} (dir 0o755, want 0o700)" in message
    # reported as found: the SQLite backend makes its own files private again on open
    assert f"{home / 'notebook.db'} (file 0o640, want 0o600)" in message
    assert f"Run 'agent-notebook doctor --fix --home {home}'" in message
    assert fix_command(home) == f"agent-notebook doctor --fix --home {home}"
    assert oct(stat.S_IMODE(config.stat().st_mode)) == "0o644"  # reported, not changed


def test_a_private_home_opens_without_a_report(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    with caplog.at_level(logging.WARNING, LOGGER), Notebook.open(home) as nb:
        fill(nb)
    with caplog.at_level(logging.WARNING, LOGGER), Notebook.open(home):
        pass
    assert not [r for r in caplog.records if r.name == LOGGER]
    assert check_home(home) == []


def test_the_command_line_shows_the_report_once_on_stderr(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config, _ = loosen(home)
    result = cli(home, "stats", "--format", "json", env=NO_EMBEDDER)
    assert result.returncode == 0, result.stderr.decode()
    err = result.stderr.decode()
    assert err.count("open to other users") == 1, err
    assert str(config) in err and fix_command(home) in err
    assert json.loads(result.stdout)["moments"] == 8  # stdout stays data


def test_doctor_lists_then_fixes_loosened_permissions(tmp_path: Path) -> None:
    """Doctor exits 1 while something is open to other users, 0 once --fix made the home
    owner-only; its own report replaces the one of the open."""
    home = tmp_path / "home"
    config, archive = loosen(home)
    listed = cli(home, "doctor", "--format", "json", env=NO_EMBEDDER)
    assert listed.returncode == 1
    report = json.loads(listed.stdout)
    assert {(r["path"], r["mode"], r["want"]) for r in report["loosened"]} == {
        (str(config), "0644", "0600"),
        (str(archive), "0755", "0700"),
    }
    assert report["fixed"] == [] and "doctor --fix" in report["permissions"]
    err = listed.stderr.decode()
    assert fix_command(home) in err and err.count("open to other users") == 1

    fixed = cli(home, "doctor", "--fix", "--format", "json", env=NO_EMBEDDER)
    assert fixed.returncode == 0, fixed.stderr.decode()
    report = json.loads(fixed.stdout)
    assert {(r["path"], r["before"], r["after"]) for r in report["fixed"]} == {
        (str(config), "0644", "0600"),
        (str(archive), "0755", "0700"),
    }
    assert report["loosened"] == [] and report["permissions"].startswith("owner-only")
    assert_private(home)

    again = cli(home, "doctor", env=NO_EMBEDDER)  # the table, on a private home
    assert again.returncode == 0, again.stderr.decode()
    assert "owner-only" in again.stdout.decode()


def test_open_checks_the_top_and_doctor_the_whole_tree(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A moment file deep in a YAML home is not looked at on open (a home holds a file per
    moment), but doctor finds it and --fix repairs it."""
    home = tmp_path / "home"
    with Notebook.open(home, backend="yaml") as nb:
        fill(nb)
    deep = home / "sessions" / "s_2026-06-07_001" / "moments" / "m_1.yaml"
    os.chmod(deep, 0o664)
    assert check_top(home) == []
    with caplog.at_level(logging.WARNING, LOGGER), Notebook.open(home, backend="yaml"):
        pass
    assert not [r for r in caplog.records if r.name == LOGGER]
    [loose] = check_home(home)
    assert (loose.path, loose.mode, loose.want) == (deep, 0o664, 0o600)
    [change] = fix_home(home)
    assert (change.path, change.before, change.after) == (deep, 0o664, 0o600)
    assert_private(home)


def test_a_symlink_out_of_the_home_is_reported_and_not_followed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Notebook.open(home) as nb:
        fill(nb)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "shared.txt").write_text("not the notebook's")
    os.chmod(outside, 0o755)
    os.chmod(outside / "shared.txt", 0o644)
    (home / "archive").symlink_to(outside, target_is_directory=True)
    (home / "inside").symlink_to(home / "notebook.db")  # into the home: its target is checked
    [loose] = check_home(home)
    assert (loose.path, loose.kind, loose.fixable) == (home / "archive", "symlink", False)
    assert "outside the home" in loose.note
    result = cli(home, "doctor", "--fix", "--format", "json", env=NO_EMBEDDER)
    assert result.returncode == 1  # still there: the owner decides what to do with it
    assert json.loads(result.stdout)["fixed"] == []
    assert oct(stat.S_IMODE(outside.stat().st_mode)) == "0o755"  # the target is untouched
    assert oct(stat.S_IMODE((outside / "shared.txt").stat().st_mode)) == "0o644"
