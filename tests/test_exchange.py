"""SQLite -> YAML -> SQLite keeps every record, counter and index entry, and imports are safe.

A notebook is filled through the facade (sessions, moments with actions and parents,
decisions, pending items opened and closed, escalations, links), exported to a YAML
directory and imported into a fresh SQLite notebook; everything must compare equal.
"""

from __future__ import annotations

import math
import wave
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agent_notebook import Action, Conflict, Notebook, TaskStatus
from agent_notebook.storage import SqliteBackend, StorageBackend, YamlDirBackend

T0 = datetime(2026, 6, 7, 9, 30, tzinfo=UTC)


def contents(backend: StorageBackend) -> dict[str, Any]:
    """Every record a backend holds, its derived indexes and counters."""
    return {
        "sessions": backend.list_sessions(),
        "moments": backend.list_moments(),
        "concepts": backend.list_concepts(),
        "counters": backend.counters(),
        "count_sessions": backend.count_sessions(),
        "count_moments": backend.count_moments(),
        "count_concepts": backend.count_concepts(),
    }


def _clip(path: Path) -> Path:
    """Two seconds of a tone, as WAV."""
    samples = (int(8000 * math.sin(i / 7)) for i in range(32_000))
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16_000)
        out.writeframes(b"".join(s.to_bytes(2, "little", signed=True) for s in samples))
    return path


def _picture(path: Path) -> Path:
    Image.linear_gradient("L").resize((64, 64)).save(path)
    return path


def fill(nb: Notebook) -> None:
    """A notebook using every kind of record the facade writes."""
    assert nb.home is not None
    files = nb.home.parent / "attached"  # files attached to a moment, outside the home
    files.mkdir(exist_ok=True)
    trip = nb.start_session("Plan the trip to Lyon — ünïcödé ✓", started=T0)
    auth = nb.start_session("Ship the auth middleware", started=T0 + timedelta(days=1))
    again = nb.start_session("Lyon, second try", started=T0 + timedelta(days=1, hours=2))

    first = nb.record(trip.id, "Book the train to Lyon for 7 June", speaker="Ana")
    nb.record_many(
        trip.id,
        [
            {"text": "Booked the 7:04 TGV, seat 42", "role": "assistant", "parent": first.id},
            {
                "text": "  multi\nline\n\ttext with trailing space \n",
                "parent": first.id,
                "timestamp": T0 + timedelta(minutes=5),
                "importance": 0.9,
                "decay_rate": 0.5,
                "concepts": ["Lyon", "TGV", "no", "1e3"],
                "retrieval_keys": ["seat 42", "~"],
                "links": ["https://example.org/tgv"],
                "audio_file": str(_clip(files / "a.wav")),
                "image_file": str(_picture(files / "b.png")),
                "source_id": "D1:3",
            },
        ],
    )
    nb.record(
        auth.id,
        "Moved the check to auth/middleware.py:42",
        role="assistant",
        actions=[
            Action(
                tool="edit_file",
                arguments={"path": "auth/middleware.py", "line": 42, "nested": {"n": [1, None]}},
                result={"ok": True, "big": 2**70, "small": 5e-324, "neg": -0.0, "s": "yes"},
            ),
            Action(tool="run_tests", arguments={}, result="3 failed", ok=False),
        ],
    )
    for i in range(12):
        nb.record(again.id, f"Lyon note {i}: remember the deadline on 2026-06-{10 + i}")
    nb.record(trip.id, "Back to the trip: hotel near Part-Dieu?", parent=first.id)

    nb.decide(trip.id, "Take the 7:04 train", why="cheapest", who="guest:hermes")
    nb.decide(auth.id, "Use JWT", why="stateless")
    nb.open_pending(trip.id, "Which hotel?")
    done = nb.open_pending(trip.id, "Seat reservation")
    nb.close_pending(trip.id, done.id, "seat 42")
    esc = nb.escalate(auth.id, "hermes", why="hard", slice="- m_4")
    nb.resolve_escalation(auth.id, esc.id, "use a middleware")
    nb.escalate(auth.id, "claude", why="review")
    nb.link(again.id, trip.id, "follows", note="same trip")
    nb.link(auth.id, first.id)
    nb.link(auth.id, "https://example.org/rfc7519", "reference")
    nb.update_session(trip.id, task_status=TaskStatus.DONE, condensed_history="Booked.\nDone.\n")
    nb.update_session(auth.id, task_status="paused")


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
@pytest.mark.parametrize("clash", ["moment", "session"])
def test_conflicting_import_raises_and_writes_nothing(
    source: Notebook, tmp_path: Path, target_kind: str, clash: str
) -> None:
    with _Closing(YamlDirBackend(tmp_path / "exported")) as y:
        source.export_to(y)
        target_home = tmp_path / "target"
        # No embedding worker: its vector files, written meanwhile, are not the import's.
        with Notebook.open(target_home, backend=target_kind, background_embedding=False) as target:
            if clash == "session":
                # the same id as the source's first session, with another task
                own = target.start_session("something else entirely", started=T0)
            else:
                # other session ids, but m_1 .. m_3 exist with other content; the source's
                # sessions (new to the target) are written first, then m_1 conflicts
                own = target.start_session("unrelated", started=T0 - timedelta(days=30))
                target.record_many(own.id, [{"text": f"mine {i}"} for i in range(3)])
            before = contents(target.backend)
            files_before = _tree(target_home)
            with pytest.raises(Conflict, match="m_1" if clash == "moment" else own.id):
                target.import_from(y)
            assert contents(target.backend) == before
            if target_kind == "yaml":  # not a byte of any file changed
                assert _tree(target_home) == files_before
        # reopened from storage, still only what was there before
        with Notebook.open(target_home, backend=target_kind) as reopened:
            assert contents(reopened.backend) == before


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
