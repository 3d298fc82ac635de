"""bench/shared_load.py's data-safety check (bench/acks_check.py): an acknowledged write
counts as present only when exactly one moment of the run's sessions carries its marker,
under the id it was given; a notebook that cannot be read back is a failure, not a crash."""

from __future__ import annotations

import sys

from tests.support import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from acks_check import Acks, check, read_back


def acked(*writes: tuple[str, str]) -> Acks:
    acks = Acks()
    for marker, moment_id in writes:
        acks.add(marker, moment_id, "s_2026-01-01_001")
    return acks


def test_every_write_there_once_under_its_id_is_present() -> None:
    acks = acked(("bench-r1-http0-0", "m_1"), ("bench-r1-cli-0", "m_2"))
    found = [("m_1", "Ana booked the train [bench-r1-http0-0]"), ("m_2", "x [bench-r1-cli-0]")]
    result = check("view", acks, [*found, ("m_3", "an unacknowledged write [bench-r1-mcp-9]")])
    assert result.ok and (result.acknowledged, result.present) == (2, 2)


def test_missing_doubled_and_moved_writes_are_each_named() -> None:
    acks = acked(("bench-a-0", "m_1"), ("bench-a-1", "m_2"), ("bench-a-2", "m_3"))
    found = [("m_2", "[bench-a-1]"), ("m_9", "[bench-a-1]"), ("m_4", "[bench-a-2]")]
    result = check("view", acks, found)
    assert not result.ok and result.present == 0
    assert (result.missing, result.doubled, result.moved) == (
        ["bench-a-0"],
        ["bench-a-1"],
        ["bench-a-2"],
    )
    assert "missing 1" in result.problems() and "under another id 1" in result.problems()


def test_a_notebook_that_cannot_be_read_is_a_failure() -> None:
    def unreadable() -> list[tuple[str, str]]:
        raise OSError("database disk image is malformed")

    result = read_back("view", acked(("bench-a-0", "m_1")), unreadable)
    assert not result.ok and result.present == 0
    assert "malformed" in result.problems()
