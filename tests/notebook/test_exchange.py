"""SQLite -> YAML -> SQLite keeps every record, counter and index entry, and imports are safe.

A notebook is filled through the facade (sessions, moments with actions and parents,
decisions, pending items opened and closed, escalations, links), exported to a YAML
directory and imported into a fresh SQLite notebook; everything must compare equal.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_notebook import Notebook, NotFound
from agent_notebook.storage import SqliteBackend, StorageBackend, YamlDirBackend
from tests.support.filled_notebook import T0, contents, fill


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Notebook]:
    nb = Notebook.open(tmp_path / "source")
    fill(nb)
    yield nb
    nb.close()


def test_sqlite_to_yaml_to_sqlite_is_identical(source: Notebook, tmp_path: Path) -> None:
    original = contents(source.backend)
    assert original["count_sessions"] == 3 and original["count_moments"] == 17
    assert original["count_concepts"] > 0

    yaml_dir = tmp_path / "exported"
    with _Closing(YamlDirBackend(yaml_dir)) as y:
        report = source.export_to(y)
        assert (report.sessions, report.moments, report.skipped) == (3, 17, 0)
        assert contents(y) == original

    # a new instance reads the files from disk, not a cache
    with _Closing(YamlDirBackend(yaml_dir)) as y:
        assert contents(y) == original
        with Notebook.open(tmp_path / "copy") as copy:
            report = copy.import_from(y)
            assert (report.sessions, report.moments, report.skipped) == (3, 17, 0)
            assert contents(copy.backend) == original
            # the full-text index was rebuilt from the imported moments
            hits = [h.moment.id for h in copy.search("Lyon train", limit=50, mode="lexical")]
            expected = source.search("Lyon train", limit=50, mode="lexical")
            assert hits == [h.moment.id for h in expected]
            assert len(hits) >= 10
            # the copy keeps working: new ids follow on without colliding
            trip = original["sessions"][0].id
            assert copy.record(trip, "after the import").id == "m_18"
            assert copy.start_session("new", started=T0).id == "s_2026-06-07_002"

    # and it survives reopening from the file
    with Notebook.open(tmp_path / "copy") as reopened:
        after = contents(reopened.backend)
        assert after["count_moments"] == 18 and after["count_sessions"] == 4


def test_importing_twice_changes_nothing(source: Notebook, tmp_path: Path) -> None:
    with _Closing(YamlDirBackend(tmp_path / "exported")) as y:
        source.export_to(y)
        with Notebook(SqliteBackend(tmp_path / "copy.db")) as copy:
            copy.import_from(y)
            once = contents(copy.backend)
            report = copy.import_from(y)
            assert (report.sessions, report.moments) == (0, 0)
            assert report.skipped == once["count_sessions"] + once["count_moments"]
            assert contents(copy.backend) == once
        # exporting again into the same directory also only skips
        before = _tree(tmp_path / "exported")
        report = source.export_to(y)
        assert (report.sessions, report.moments, report.skipped) == (0, 0, 3 + 17)
        assert _tree(tmp_path / "exported") == before


@pytest.mark.parametrize("target_kind", ["sqlite", "yaml"])
def test_merging_renumbers_colliding_ids_and_a_second_import_changes_nothing(
    source: Notebook, tmp_path: Path, target_kind: str
) -> None:
    with _Closing(YamlDirBackend(tmp_path / "exported")) as y:
        source.export_to(y)
        home = tmp_path / "target"
        with Notebook.open(home, backend=target_kind, background_embedding=False) as target:
            own = target.start_session("another notebook, the same day", started=T0)
            target.record_many(own.id, [{"text": f"mine {i}"} for i in range(3)])
            mine = contents(target.backend)
            report = target.import_from(y)
            trip = source.sessions()[0]
            assert own.id == trip.id  # the clash
            new_trip = report.renumbered[trip.id]
            assert new_trip != trip.id and new_trip.startswith("s_2026-06-07_")
            first = report.renumbered["m_1"]  # every imported moment, in order, after both
            assert [report.renumbered[f"m_{n}"] for n in (1, 2, 17)] == [
                first,
                f"m_{int(first[2:]) + 1}",
                f"m_{int(first[2:]) + 16}",
            ]
            assert (report.sessions, report.moments) == (3, 17)
            # the target's own records are untouched
            assert contents(target.backend)["sessions"][0] == mine["sessions"][0]
            assert [m.text for m in _texts(target, own.id)] == ["mine 0", "mine 1", "mine 2"]
            # references follow: parents, session of the moments, links, concepts
            moved = target.backend.list_moments(new_trip)
            assert [m.content.text for m in moved] == [
                m.content.text for m in source.backend.list_moments(trip.id)
            ]
            assert {m.relations.parent for m in moved[1:]} == {first}
            assert set(moved[0].relations.children) == {m.id for m in moved[1:]}
            auth = report.renumbered.get(source.sessions()[1].id, source.sessions()[1].id)
            assert any(link.target == first for link in target.get_session(auth).links)
            lyon = target.concept("lyon")
            assert set(lyon.sessions) >= {new_trip}
            assert all(int(mid[2:]) >= int(first[2:]) for mid in lyon.moments)
            # a second import finds what the first brought and skips it all
            once = contents(target.backend)
            again = target.import_from(y)
            assert (again.sessions, again.moments) == (0, 0)
            assert contents(target.backend) == once


def test_round_trip_carries_chat_state_vectors_and_archive(tmp_path: Path) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    from agent_notebook.compaction import ColdArchive
    from agent_notebook.notebook.exchange import export_target, media_home

    home = tmp_path / "source"
    with Notebook.open(home, background_embedding=False) as nb:
        trip = nb.start_session("Plan the trip to Lyon", started=T0)
        first = nb.record(trip.id, "Book the train to Lyon for 7 June")
        nb.record_many(trip.id, [{"text": f"Lyon note {i}", "parent": first.id} for i in range(6)])
        session = nb.thread_session("trip-chat")
        nb.record(session, "Chatting about the trip")
        notes = nb.session_notebook("trip-chat").sync
        notes.update_section("Current State", "Booking the hotel")
        saver = nb.checkpointer
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"notebook": {"session_id": session, "task": "t"}}
        config = {"configurable": {"thread_id": "trip-chat", "checkpoint_ns": ""}}
        saver.put(config, checkpoint, {"source": "input", "step": 1}, {})
        nb.backend.put_vectors("model-x", [(1, nb.get_moment("m_1").content.text, b"vec1")])
        old = nb.get_moment("m_5")
        entries = ColdArchive(nb.archive_dir).write(nb.get_moment("m_6"), [old])
        with nb.backend.atomic():
            nb.backend.archive_moments(entries)
        nb.settle()  # the stored sessions count their moments, as the export will
        original = contents(nb.backend)
        archived = nb.backend.list_archived()
        destination = tmp_path / "exported"
        with export_target(destination, "yaml") as target:
            nb.export_to(target, media_to=media_home(destination))
    assert not [p for p in destination.rglob("*.lock")]  # no lock left in the export

    with (
        _Closing(YamlDirBackend(destination)) as y,
        Notebook.open(tmp_path / "copy", background_embedding=False) as copy,
    ):
        report = copy.import_from(y, media_from=destination)
        assert report.renumbered == {}
        assert (report.vectors, report.archived, report.checkpoints) == (1, 1, 1)
        assert contents(copy.backend) == original
        assert copy.backend.get_vectors("model-x") == [(1, b"vec1")]
        assert copy.backend.list_archived() == archived
        assert copy.archived_moment("m_5") == old
        # the chat goes on where it was: same session, same notebook, same checkpoint
        assert copy.thread_session("trip-chat") == session
        assert "Booking the hotel" in copy.session_notebook("trip-chat").sync.load()
        latest = copy.checkpointer.get_tuple({"configurable": {"thread_id": "trip-chat"}})
        assert latest is not None and latest.checkpoint["id"] == checkpoint["id"]


def test_delete_session_removes_it_and_everything_derived(source: Notebook) -> None:
    trip = source.sessions()[0].id
    thread_session = source.thread_session("chat-1")
    source.session_notebook("chat-1").sync.update_section("Current State", "x")
    other = source.backend.count_moments() - source.backend.count_moments(thread_session)
    report = source.delete_session(thread_session)
    assert report.threads == ["chat-1"] and report.moments == 0
    assert source.store.get(("threads",), "chat-1") is None
    assert source.store.search(("session", "chat-1")) == []
    assert source.backend.count_moments() == other
    n = source.backend.count_moments(trip)
    report = source.delete_session(trip)
    assert report.moments == n
    assert all(m.session != trip for m in source.backend.list_moments())
    assert all(trip not in c.sessions for c in source.concepts())
    assert source.search("TGV seat", mode="lexical") == [] or all(
        h.moment.session != trip for h in source.search("TGV seat", mode="lexical")
    )
    with pytest.raises(NotFound, match=trip):
        source.delete_session(trip)


def _texts(nb: Notebook, session_id: str) -> list[Any]:
    class _T:
        def __init__(self, text: str) -> None:
            self.text = text

    return [_T(m.content.text) for m in nb.backend.list_moments(session_id)]


class _Closing:
    """``with`` for backends (they have ``close`` but are not context managers)."""

    def __init__(self, backend: StorageBackend) -> None:
        self.backend = backend

    def __enter__(self) -> Any:
        return self.backend

    def __exit__(self, *exc: object) -> None:
        self.backend.close()


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_cli_export_leaves_no_lock_and_delete_session_asks_for_yes(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agent_notebook.cli import app

    home = tmp_path / "home"
    with Notebook.open(home, background_embedding=False) as nb:
        sid = nb.start_session("to delete", started=T0).id
        nb.record(sid, "a moment about Lyon")
    run = CliRunner().invoke
    for kind, out in (("yaml", tmp_path / "out"), ("sqlite", tmp_path / "out.db")):
        result = run(app, ["export", "--to", kind, str(out), "--home", str(home)])
        assert result.exit_code == 0, result.output
        assert [p.name for p in tmp_path.rglob("*.lock")] == []
    refused = run(app, ["delete-session", sid, "--home", str(home)], input="")
    assert refused.exit_code != 0 and "--yes" in refused.output
    with Notebook.open(home, background_embedding=False) as nb:
        assert nb.get_session(sid).id == sid
    done = run(app, ["delete-session", sid, "--yes", "--home", str(home)])
    assert done.exit_code == 0, done.output
    with Notebook.open(home, background_embedding=False) as nb:
        assert nb.sessions() == [] and nb.backend.count_moments() == 0
