"""The conformance suite (see the package): the records themselves (counters, sessions,
moments), transactions and reopening; and the records every topic of the suite writes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from ...model import (
    Action,
    ArchiveEntry,
    Decision,
    Escalation,
    Link,
    Moment,
    MomentContent,
    MomentMetadata,
    PendingItem,
    Relations,
    Session,
    SessionContext,
    SessionStats,
    TaskStatus,
    Tombstone,
)
from ..base import MomentBrief, MomentFilter, StorageBackend

T0 = datetime(2026, 6, 7, 9, 30, tzinfo=UTC)
SID = "s_2026-06-07_001"
SID2 = "s_2026-06-08_001"


def make_session(sid: str = SID, started: datetime = T0, **extra: object) -> Session:
    return Session.model_validate({"id": sid, "started": started, "task": "Plan the trip", **extra})


def make_moment(
    num: int, text: str, sid: str = SID, *, concepts: list[str] | None = None, **extra: object
) -> Moment:
    fields: dict[str, object] = {
        "id": f"m_{num}",
        "session": sid,
        "timestamp": T0 + timedelta(minutes=num),
        "content": MomentContent(text=text),
        "metadata": MomentMetadata(concepts=concepts or []),
        **extra,
    }
    return Moment.model_validate(fields)


def rich_session() -> Session:
    """A session with every field set, to prove nothing is dropped."""
    return make_session(
        task="Ship the auth middleware — ünïcödé ✓",
        task_status=TaskStatus.PAUSED,
        context=SessionContext(
            raw_history_size=42, condensed_history="line one\nline two\n", recent_moments=["m_7"]
        ),
        decisions=[Decision(when=T0, what="Use JWT", why="stateless", who="guest:hermes")],
        pending=[
            PendingItem(id="p_1", what="token expiry?", since=T0),
            PendingItem(id="p_2", what="done one", since=T0, closed=T0, resolution="15 min"),
        ],
        escalations=[
            Escalation(id="e_1", when=T0, to="hermes", why="hard", slice="- m_7", outcome="ok")
        ],
        links=[Link(target="s_2026-06-01_003", relation="follows", note="n")],
        stats=SessionStats(moments=3, tokens=10, bytes=40, first_activity=T0, last_activity=T0),
    )


def rich_moment() -> Moment:
    return make_moment(
        7,
        "  Moved the check to auth/middleware.py:42 — «ok»\n\tsecond line 🚀 ",
        role="assistant",
        speaker="Senter",
        content=MomentContent(
            text="  Moved the check to auth/middleware.py:42 — «ok»\n\tsecond line 🚀 ",
            audio_signature="a1b2",
            image_signature="ffee",
            multimodal_embedding=[0.25, -1.5e-300, 3.0e300],
        ),
        audio_path="media/a.wav",
        image_path="media/b.png",
        metadata=MomentMetadata(
            concepts=["auth middleware"],
            retrieval_keys=["auth/middleware.py:42"],
            importance=0.875,
            decay_rate=0.125,
        ),
        relations=Relations(parent="m_6", children=["m_8"], links=["https://example.org/x"]),
        actions=[
            Action(
                tool="edit_file",
                arguments={"path": "auth/middleware.py", "line": 42, "opts": {"n": [1, None]}},
                result={"ok": True, "big": 2**70},
                ok=True,
            )
        ],
        source_id="D1:3",
    )


def make_entry(num: int, sid: str = SID, *, concepts: list[str] | None = None) -> ArchiveEntry:
    return ArchiveEntry(
        id=f"m_{num}",
        session=sid,
        timestamp=T0 + timedelta(minutes=num),
        rollup="m_99",
        file="2026-06/m_99.jsonl.gz",
        sha256="0" * 64,
        concepts=concepts or [],
    )


class TestCounters:
    def test_numbers_start_at_one_and_never_repeat(self, backend: StorageBackend) -> None:
        assert backend.next_number("moment") == 1
        assert backend.next_number("moment", 3) == 2
        assert backend.next_number("moment") == 5
        assert backend.next_number("session:2026-06-07") == 1
        assert backend.counters() == {"moment": 5, "session:2026-06-07": 1}

    def test_raise_counter_only_raises(self, backend: StorageBackend) -> None:
        backend.raise_counter("moment", 10)
        backend.raise_counter("moment", 3)
        assert backend.next_number("moment") == 11


class TestSessions:
    def test_round_trip_keeps_every_field(self, backend: StorageBackend) -> None:
        session = rich_session()
        backend.put_session(session)
        assert backend.get_session(SID) == session

    def test_unknown_session_is_none(self, backend: StorageBackend) -> None:
        assert backend.get_session("s_2020-01-01_001") is None

    def test_has_session_says_whether_one_is_stored(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        assert backend.has_session(SID) and not backend.has_session(SID2)

    def test_put_replaces(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        backend.put_session(make_session(task="changed"))
        found = backend.get_session(SID)
        assert found is not None and found.task == "changed"
        assert backend.count_sessions() == 1

    def test_listed_oldest_first_with_paging(self, backend: StorageBackend) -> None:
        later = make_session(SID2, T0 + timedelta(days=1))
        backend.put_session(later)
        backend.put_session(make_session("s_2026-06-07_002", T0))
        backend.put_session(make_session())
        ids = [s.id for s in backend.list_sessions()]
        assert ids == [SID, "s_2026-06-07_002", SID2]
        assert [s.id for s in backend.list_sessions(offset=1, limit=1)] == ["s_2026-06-07_002"]
        assert backend.count_sessions() == 3


class TestMoments:
    def test_round_trip_keeps_every_field(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        moment = rich_moment()
        backend.put_moments([moment])
        assert backend.get_moment("m_7") == moment

    def test_listed_in_id_order_per_session(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        backend.put_session(make_session(SID2))
        backend.put_moments([make_moment(10, "ten"), make_moment(2, "two")])
        backend.put_moments([make_moment(3, "other", SID2)])
        assert [m.id for m in backend.list_moments(SID)] == ["m_2", "m_10"]
        assert [m.id for m in backend.list_moments()] == ["m_2", "m_3", "m_10"]
        assert [m.id for m in backend.list_moments(offset=1, limit=1)] == ["m_3"]
        assert backend.count_moments(SID) == 2 and backend.count_moments() == 3
        assert [m.id for m in backend.iter_moments(batch=2)] == ["m_2", "m_3", "m_10"]

    def test_added_moments_are_stored_and_indexed(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        backend.put_moments([make_moment(1, "an older moment")])
        backend.raise_counter("moment", 1)
        with backend.atomic():
            first = backend.next_number("moment", 2)
            added = [
                make_moment(first, "kangaroos hop far", concepts=["kangaroo"]),
                make_moment(first + 1, "wombats dig", concepts=["wombat"]),
            ]
            backend.add_moments(added)
        assert first == 2 and backend.get_moments(["m_2", "m_3"]) == added
        assert [m.id for m in backend.list_moments(SID)] == ["m_1", "m_2", "m_3"]
        assert [mid for mid, _ in backend.search_text("kangaroos", MomentFilter(), 5)] == ["m_2"]
        entry = backend.get_concept("wombat")
        assert entry is not None and entry.moments == ["m_3"]

    def test_unknown_moment_is_none(self, backend: StorageBackend) -> None:
        assert backend.get_moment("m_404") is None

    def test_get_many_in_the_order_asked_skipping_unknown(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        backend.put_moments([make_moment(n, f"text {n}") for n in (1, 2, 3)])
        found = backend.get_moments(["m_3", "m_404", "m_1", "m_3"])
        assert [m.id for m in found] == ["m_3", "m_1", "m_3"]
        assert found[1] == backend.get_moment("m_1")

    def test_briefs_agree_with_the_moments(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        gone = Tombstone(when=T0, who="owner", why="private")
        backend.put_moments(
            [
                make_moment(1, "plain text"),
                make_moment(
                    2,
                    "Where did Caroline go?",
                    role="assistant",
                    speaker="Hermes",
                    metadata=MomentMetadata(importance=0.9, decay_rate=0.1),
                    timestamp=T0 + timedelta(days=3, microseconds=17),
                ),
                make_moment(3, "", redacted=gone),
            ]
        )
        briefs = backend.moment_briefs(["m_3", "m_404", "m_2", "m_1"])
        wanted = [MomentBrief.of(m) for m in backend.get_moments(["m_3", "m_2", "m_1"])]
        assert briefs == wanted
        assert [(b.asks, b.redacted, b.importance) for b in briefs] == [
            (False, True, 0.5),
            (True, False, 0.9),
            (False, False, 0.5),
        ]

    def test_media_signatures_by_kind_in_number_order(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())

        def with_media(num: int, image: str | None, audio: str | None) -> Moment:
            content = MomentContent(text=f"m {num}", image_signature=image, audio_signature=audio)
            return make_moment(num, f"m {num}", content=content)

        backend.put_moments(
            [with_media(12, "i12", None), with_media(3, "i3", "a3"), with_media(5, None, None)]
        )
        backend.put_moments([with_media(7, None, "a7"), with_media(12, "i12b", None)])
        assert backend.media_signatures("image") == [(3, "i3"), (12, "i12b")]
        assert backend.media_signatures("audio") == [(3, "a3"), (7, "a7")]

    def test_put_replaces_text_concepts_and_index(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        backend.put_moments([make_moment(1, "about kangaroos", concepts=["kangaroo"])])
        backend.put_moments([make_moment(1, "about wombats", concepts=["wombat"])])
        assert backend.count_moments() == 1
        assert backend.get_concept("kangaroo") is None
        assert backend.search_text("kangaroos", MomentFilter(), 5) == []
        assert [h[0] for h in backend.search_text("wombats", MomentFilter(), 5)] == ["m_1"]

    def test_purge_keeps_records_and_drops_what_was_removed(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        backend.put_moments(
            [
                make_moment(1, "about kangaroos", concepts=["kangaroo"]),
                make_moment(2, "about wombats", concepts=["wombat"]),
            ]
        )
        backend.put_moments([make_moment(1, "")])  # a redaction: text and concepts gone
        backend.purge()
        assert backend.get_concept("kangaroo") is None
        assert backend.search_text("kangaroos", MomentFilter(), 10) == []
        assert [i for i, _ in backend.search_text("wombats", MomentFilter(), 10)] == ["m_2"]
        assert [m.content.text for m in backend.list_moments()] == ["", "about wombats"]


class TestAtomic:
    def test_error_inside_changes_nothing(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        with pytest.raises(ZeroDivisionError), backend.atomic():
            backend.next_number("moment")
            backend.put_session(make_session(task="half-done"))
            backend.put_moments([make_moment(1, "lost")])
            raise ZeroDivisionError
        assert backend.counters() == {}
        found = backend.get_session(SID)
        assert found is not None and found.task == "Plan the trip"
        assert backend.get_moment("m_1") is None and backend.count_moments() == 0

    def test_reads_inside_see_writes_and_nesting_joins(self, backend: StorageBackend) -> None:
        with backend.atomic():
            backend.put_session(make_session())
            with backend.atomic():
                backend.put_moments([make_moment(1, "inner")])
            assert backend.get_session(SID) is not None
            assert [m.id for m in backend.list_moments(SID)] == ["m_1"]
        assert backend.count_moments(SID) == 1


class TestReopen:
    def test_data_survives_reopening(
        self, backend: StorageBackend, reopen: Callable[[], StorageBackend]
    ) -> None:
        if not backend.capabilities.persistent:
            pytest.skip(f"{backend.capabilities.name} is not persistent")
        backend.put_session(rich_session())
        backend.put_moments([rich_moment(), make_moment(8, "eight", concepts=["lyon"])])
        backend.next_number("moment", 8)
        backend.close()
        again = reopen()
        assert again.get_session(SID) == rich_session()
        assert again.get_moment("m_7") == rich_moment()
        entry = again.get_concept("lyon")
        assert entry is not None and entry.moments == ["m_8"]
        assert again.next_number("moment") == 9
        assert [m for m, _ in again.search_text("eight", MomentFilter(), 5)] == ["m_8"]
