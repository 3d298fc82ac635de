"""Notebooks to compact for the compaction tests: days of faded moments from a Monday,
and the state of a backend to compare before and after."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent_notebook import Notebook
from agent_notebook.model import Moment
from agent_notebook.storage import StorageBackend

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # a Monday


def fill_day(
    nb: Notebook, day: int, *, importance: float = 0.25, n: int = 3, session: str | None = None
) -> list[Moment]:
    """``n`` moments a minute apart on day ``day`` after :data:`T0`, in a new session (or
    ``session``)."""
    when = T0 + timedelta(days=day)
    if session is None:
        session = nb.start_session(f"day {day}", started=when).id
    return nb.record_many(
        session,
        [
            {
                "text": f"Ana booked seat {day * 10 + i} on the TGV-{day} to Lyon. "
                f"The hotel Bellecour costs {80 + i} EUR a night.",
                "speaker": "Ana",
                "timestamp": when + timedelta(minutes=i),
                "importance": importance,
            }
            for i in range(n)
        ],
    )


def snapshot(backend: StorageBackend) -> tuple[list[str], list[str]]:
    """Every active moment and archive entry of ``backend``, as JSON."""
    return (
        [m.model_dump_json() for m in backend.iter_moments()],
        [e.model_dump_json() for e in backend.list_archived()],
    )
