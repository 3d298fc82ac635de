"""A record reads its session's row only every few moments, whoever else writes the notebook.

A notebook counts the moments it recorded in a session since it last read the session's
row; until ``SESSION_ROW_LAG`` it only asks whether the session exists. Another writer of
the same notebook (another process: here a second notebook on the same storage) may delete
the session, change it or record in it meanwhile: a record after a deletion records
nothing, and a change made by the other writer is never overwritten.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.errors import NotFound, StorageError
from agent_notebook.notebook.recording import SESSION_ROW_LAG
from agent_notebook.storage import StorageBackend
from agent_notebook.storage.conformance.records import make_moment
from tests.support.backends import make_backend

SHARED = ["sqlite-file", "yaml", "postgres", "postgres-sealed"]


@pytest.fixture(params=SHARED)
def two(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Notebook, Notebook]]:
    """Two notebooks on one storage, as two processes would open it."""
    first = make_backend(str(request.param), tmp_path)
    second = make_backend(str(request.param), tmp_path)
    yield Notebook(first), Notebook(second)
    first.close()
    second.close()


def test_a_record_after_another_writer_deleted_the_session_records_nothing(
    two: tuple[Notebook, Notebook],
) -> None:
    mine, other = two
    sid = mine.start_session("deleted elsewhere").id
    mine.record(sid, "first")
    mine.record(sid, "second")  # the session is known: the next record only asks
    other.delete_session(sid)
    with pytest.raises(NotFound, match=sid):
        mine.record(sid, "third")
    assert other.backend.count_moments() == 0
    assert not other.backend.has_session(sid)


def test_another_writers_change_and_moments_are_kept_in_the_session_row(
    two: tuple[Notebook, Notebook],
) -> None:
    mine, other = two
    sid = mine.start_session("shared").id
    recorded = [mine.record(sid, f"mine {i}") for i in range(2)]
    other.decide(sid, "decided elsewhere")
    recorded.append(other.record(sid, "theirs"))
    recorded += [mine.record(sid, f"mine {i}") for i in range(2, SESSION_ROW_LAG + 2)]
    stored = other.backend.get_session(sid)
    assert stored is not None  # the row as written, not caught up by a read
    assert [d.what for d in stored.decisions] == ["decided elsewhere"]
    assert 3 < stored.stats.moments <= len(recorded)  # rewritten by `mine` since
    session = other.get_session(sid)
    assert session.stats.moments == session.context.raw_history_size == len(recorded)
    assert session.context.recent_moments[-3:] == [m.id for m in recorded[-3:]]


@pytest.mark.parametrize("kind", ["sqlite-file", "postgres"])
def test_adding_a_moment_whose_number_is_taken_fails_and_changes_nothing(
    kind: str, tmp_path: Path
) -> None:
    backend: StorageBackend = make_backend(kind, tmp_path)
    try:
        mine = Notebook(backend)
        sid = mine.start_session("taken").id
        taken = mine.record(sid, "the original")
        with pytest.raises(StorageError), backend.atomic():
            backend.add_moments([make_moment(taken.number, "a copy", sid)])
        assert mine.get_moment(taken.id).content.text == "the original"
        assert backend.count_moments() == 1
    finally:
        backend.close()
