"""The caps of a guest's write-back (``guests:`` in config.yaml), enforced by the facade on
every backend: past a cap the write-back is refused naming the cap and its value, nothing is
written and nothing counted; the session's record and the counters stay bounded."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.config import GuestLimits, NotebookConfig, load_config
from agent_notebook.errors import InvalidInput, RateLimited, TooLarge
from agent_notebook.notebook import guest_caps
from agent_notebook.storage import StorageBackend

SMALL = GuestLimits(
    write_back_max_bytes=100,
    write_backs_per_session=5,
    write_backs_per_hour=4,
    write_back_total_bytes=250,
)


def capped(backend: StorageBackend, limits: GuestLimits = SMALL) -> Notebook:
    return Notebook(backend, config=NotebookConfig(guests=limits), embedder=None)


def session_size(nb: Notebook, session_id: str) -> int:
    stored = nb.backend.get_session(session_id)
    assert stored is not None
    return len(stored.model_dump_json())


def test_a_write_back_over_the_size_cap_is_413_naming_it_and_writes_nothing(
    backend: StorageBackend,
) -> None:
    nb = capped(backend)
    sid = nb.start_session("Trip").id
    before = (nb.backend.get_session(sid), nb.backend.counters())
    with pytest.raises(TooLarge, match=r"guests\.write_back_max_bytes, 100 bytes") as err:
        nb.write_back("planner", sid, "decision", "x" * 80, why="y" * 21)
    assert (err.value.cap, err.value.limit) == ("guests.write_back_max_bytes", 100)
    assert (nb.backend.get_session(sid), nb.backend.counters()) == before
    nb.write_back(None, sid, "decision", "x" * 500)  # the owner is not capped


def test_the_hourly_cap_refuses_the_next_and_undoes_its_count(backend: StorageBackend) -> None:
    nb = capped(backend)
    sid = nb.start_session("Trip").id
    for n in range(4):
        nb.write_back("planner", sid, "pending", f"item {n}")
    size = session_size(nb, sid)
    counters = nb.backend.counters()
    with pytest.raises(RateLimited, match=r"guests\.write_backs_per_hour is 4") as err:
        nb.write_back("planner", sid, "decision", "one more")
    assert err.value.retry_after_s is not None and 0 < err.value.retry_after_s <= 3600
    assert session_size(nb, sid) == size and nb.backend.counters() == counters
    nb.write_back("ben", sid, "decision", "another guest has its own hour")


def test_an_hour_later_the_count_starts_again_in_the_same_counter(backend: StorageBackend) -> None:
    limits, key = SMALL, "write-back-hour:planner"
    early, late = datetime(2026, 6, 7, 9, 59, tzinfo=UTC), datetime(2026, 6, 7, 10, 0, tzinfo=UTC)
    for _ in range(4):
        guest_caps.count_write_back(backend, limits, "planner", 1, early)
    with pytest.raises(RateLimited), backend.atomic():
        guest_caps.count_write_back(backend, limits, "planner", 1, early)
    guest_caps.count_write_back(backend, limits, "planner", 1, late)
    assert backend.counters()[key] % 1_000_000 == 1  # one counter, whatever the hour


def test_the_session_and_total_caps(backend: StorageBackend) -> None:
    nb = capped(backend, SMALL.model_copy(update={"write_backs_per_hour": 100}))
    sid, other = nb.start_session("Trip").id, nb.start_session("Other").id
    for n in range(5):
        nb.write_back(f"guest{n}", sid, "decision", "d" * 10)
    with pytest.raises(RateLimited, match=r"guests\.write_backs_per_session is 5"):
        nb.write_back("guest9", sid, "decision", "full")
    nb.write_back(None, sid, "decision", "the owner still writes")
    nb.write_back("planner", other, "decision", "p" * 100)
    nb.write_back("planner", other, "decision", "p" * 100)
    with pytest.raises(TooLarge, match=r"has written back 200 bytes.*total_bytes is 250"):
        nb.write_back("planner", other, "decision", "p" * 51)
    nb.write_back("planner", other, "decision", "p" * 50)  # exactly to the cap
    guests = [d for d in nb.get_session(sid).decisions if d.who.startswith("guest:")]
    assert len(guests) == 5


def test_a_session_stays_bounded_under_maximal_write_backs(backend: StorageBackend) -> None:
    """The issue's attack: guests write back as much as each may, as often as allowed,
    until the caps answer; the session's record stays within the caps' product."""
    limits = GuestLimits(write_back_max_bytes=2000, write_backs_per_session=12)
    nb = capped(backend, limits)
    sid = nb.start_session("Trip").id
    answers: list[str] = []
    for n in range(40):
        try:
            nb.write_back(f"g{n % 3}", sid, "decision", "w" * limits.write_back_max_bytes)
        except RateLimited as err:
            answers.append(err.cap)
    assert set(answers) == {"guests.write_backs_per_session"} and len(answers) == 40 - 12
    assert len(nb.get_session(sid).decisions) == 12
    assert session_size(nb, sid) < 12 * (limits.write_back_max_bytes + 200)
    assert len(nb.backend.counters()) == 1 + 2 * 3  # the session's, and two per guest


def test_at_the_defaults_a_session_takes_at_most_400_kib_of_guests_text() -> None:
    limits = GuestLimits()
    assert limits.write_backs_per_session * limits.write_back_max_bytes == 400 * 1024
    assert limits.write_back_total_bytes == 1024 * 1024


def test_the_caps_are_checked_settings(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("guests:\n  write_backs_per_hour: 0\n")
    with pytest.raises(InvalidInput, match=r"guests\.write_backs_per_hour"):
        load_config(tmp_path)
    (tmp_path / "config.yaml").write_text("guests:\n  write_back_max_bytes: 1e308\n")
    with pytest.raises(InvalidInput, match=r"guests\.write_back_max_bytes"):
        load_config(tmp_path)
