"""The conformance suite every storage backend must pass, as pytest classes.

Use it from a test module that provides two fixtures::

    from agent_notebook.storage.conformance import *  # noqa: F403  (the Test* classes)

    @pytest.fixture
    def backend(tmp_path) -> StorageBackend: ...       # a fresh, empty backend

    @pytest.fixture
    def reopen(backend) -> Callable[[], StorageBackend]: ...  # same data, new instance

The in-memory reference backend passes it first; no driver is mocked.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from ..model import (
    CUT_SPEAKER,
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
from .base import MomentBrief, MomentFilter, StorageBackend

__all__ = [
    "TestArchive",
    "TestAtomic",
    "TestConceptIndex",
    "TestCounters",
    "TestDeleteSession",
    "TestLexicalSearch",
    "TestMoments",
    "TestReopen",
    "TestSessions",
    "TestVectors",
]

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


class TestConceptIndex:
    def test_members_up_to_a_cap(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        backend.put_moments(
            [
                make_moment(n, f"text {n}", concepts=["lyon"] if n % 2 else ["paris"])
                for n in (1, 2, 3, 5, 8)
            ]
        )
        assert backend.concept_members("lyon", 3) == [1, 3, 5]
        assert backend.concept_members("lyon", 2) is None
        assert backend.concept_members("paris", 9) == [2, 8]
        assert backend.concept_members("rome", 9) == []

    def test_concepts_point_at_moments_and_sessions(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        backend.put_session(make_session(SID2))
        backend.put_moments(
            [
                make_moment(1, "a", concepts=["lyon", "train"]),
                make_moment(12, "b", SID2, concepts=["lyon"]),
                make_moment(3, "c", concepts=["lyon"]),
            ]
        )
        entry = backend.get_concept("lyon")
        assert entry is not None
        assert entry.moments == ["m_1", "m_3", "m_12"]
        assert entry.sessions == [SID, SID2]
        assert [c.concept for c in backend.list_concepts()] == ["lyon", "train"]
        assert [c.concept for c in backend.list_concepts(offset=1, limit=5)] == ["train"]
        assert backend.count_concepts() == 2
        assert backend.get_concept("paris") is None


class TestLexicalSearch:
    @pytest.fixture
    def filled(self, backend: StorageBackend) -> StorageBackend:
        backend.put_session(make_session())
        backend.put_session(make_session(SID2, T0 + timedelta(days=1)))
        backend.put_moments(
            [
                make_moment(1, "We booked the train to Lyon", speaker="Ana"),
                make_moment(2, "The train was late, the train was cold", role="assistant"),
                make_moment(3, "Dinner at a café in Lyon", speaker="Ana"),
                make_moment(4, "Unrelated chatter about weather", SID2, speaker="Ben"),
                make_moment(5, "Train tickets refunded", SID2, speaker="ana"),
            ]
        )
        return backend

    def test_any_word_matches_and_more_matches_rank_higher(self, filled: StorageBackend) -> None:
        ids = [mid for mid, _ in filled.search_text("train Lyon", MomentFilter(), 10)]
        assert ids[0] == "m_1"  # the only moment with both words
        assert set(ids) == {"m_1", "m_2", "m_3", "m_5"}
        scores = [s for _, s in filled.search_text("train Lyon", MomentFilter(), 10)]
        assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)

    def test_accents_and_case_fold(self, filled: StorageBackend) -> None:
        assert [m for m, _ in filled.search_text("CAFE", MomentFilter(), 10)] == ["m_3"]

    def test_filters(self, filled: StorageBackend) -> None:
        def ids(where: MomentFilter) -> set[str]:
            return {m for m, _ in filled.search_text("train lyon", where, 10)}

        assert ids(MomentFilter(session=SID2)) == {"m_5"}
        assert ids(MomentFilter(speaker="ANA")) == {"m_1", "m_3", "m_5"}
        assert ids(MomentFilter(speaker="assistant")) == {"m_2"}  # a role matches too
        assert ids(MomentFilter(since=T0 + timedelta(minutes=2))) == {"m_2", "m_3", "m_5"}
        assert ids(MomentFilter(until=T0 + timedelta(minutes=2))) == {"m_1"}

    def test_query_syntax_is_just_words(self, filled: StorageBackend) -> None:
        for query in ['"train', "train AND NOT", "lyon*", "(cold) OR -", "NEAR(train"]:
            assert filled.search_text(query, MomentFilter(), 10)  # no syntax error, still finds
        assert filled.search_text("  ?!  ", MomentFilter(), 10) == []

    def test_limit(self, filled: StorageBackend) -> None:
        assert len(filled.search_text("train lyon", MomentFilter(), 2)) == 2


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


class TestVectors:
    def test_put_get_and_the_queue(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        backend.put_moments([make_moment(n, f"text {n}") for n in (1, 2, 3)])
        assert backend.unembedded("model-a") == [1, 2, 3]
        backend.put_vectors("model-a", [(1, "text 1", b"v1"), (3, "text 3", b"v3")])
        assert backend.get_vectors("model-a") == [(1, b"v1"), (3, b"v3")]
        assert backend.get_vectors("model-a", after=1, limit=5) == [(3, b"v3")]
        assert backend.unembedded("model-a") == [2]
        assert backend.unembedded("model-a", limit=0) == []
        assert backend.unembedded("model-b") == [1, 2, 3]  # another model: all again
        assert backend.unembedded("model-b", after=1) == [2, 3]
        assert backend.unembedded("model-b", limit=1, after=2) == [3]
        backend.put_vectors("model-b", [(1, "text 1", b"w1")])  # replaces model-a's
        assert backend.get_vectors("model-a") == [(3, b"v3")]
        assert backend.get_vectors("model-b") == [(1, b"w1")]

    def test_text_cut_from_a_session_notebook_is_not_queued(self, backend: StorageBackend) -> None:
        """Its text is quotes of other moments (which have vectors): it gets none."""
        backend.put_session(make_session())
        cut = make_moment(2, "## Worklog\n- user: ⟦m_1@0+9⟧", role="system", speaker=CUT_SPEAKER)
        backend.put_moments([make_moment(1, "text 1"), cut, make_moment(3, "text 3")])
        assert backend.unembedded("model-a") == [1, 3]
        assert backend.claim_unembedded("model-a", limit=5) == [1, 3]

    def test_the_change_feed_brings_an_index_up_to_date(self, backend: StorageBackend) -> None:
        """Following ``vector_changes`` from any position and applying what it reports
        gives the stored vectors (every backend; a database server reports removals too)."""
        backend.put_session(make_session())
        backend.put_moments([make_moment(n, f"text {n}") for n in (1, 2, 3)])
        backend.put_vectors("m", [(1, "text 1", b"v1"), (2, "text 2", b"v2")])
        index: dict[int, bytes] = {}

        def follow(after: int) -> int:
            while True:
                changes, after = backend.vector_changes("m", after, limit=1)
                if not changes:
                    return after
                for num, blob in changes:
                    if blob is None:
                        index.pop(num, None)
                    else:
                        index[num] = blob

        seen = follow(0)
        assert index == {1: b"v1", 2: b"v2"}
        assert backend.vector_changes("m", seen) == ([], seen)
        backend.put_vectors("m", [(3, "text 3", b"v3"), (1, "text 1", b"w1")])
        seen = follow(seen)
        assert index[3] == b"v3"
        assert backend.claim_unembedded("m", limit=5) == []
        backend.put_moments([make_moment(2, "rewritten")])  # its vector goes
        assert backend.claim_unembedded("m", limit=5) == [2]
        follow(seen)
        if backend.capabilities.shared_embedding:  # every change is numbered, claims hold
            assert index == {1: b"w1", 3: b"v3"}
            assert backend.claim_unembedded("m", limit=5) == []

    def test_a_vector_of_old_or_missing_text_is_dropped(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        backend.put_moments([make_moment(1, "first words"), make_moment(2, "second")])
        backend.put_vectors("m", [(1, "first words", b"v1"), (2, "second", b"v2")])
        backend.put_moments([make_moment(1, "rewritten words"), make_moment(2, "second")])
        assert backend.get_vectors("m") == [(2, b"v2")]  # unchanged text keeps its vector
        assert backend.unembedded("m") == [1]
        # a worker that embedded the old text, or a moment that does not exist: skipped
        backend.put_vectors("m", [(1, "first words", b"old"), (9, "nine", b"v9")])
        assert backend.get_vectors("m") == [(2, b"v2")]

    def test_vectors_roll_back_with_their_transaction(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        backend.put_moments([make_moment(1, "one")])
        with pytest.raises(RuntimeError), backend.atomic():
            backend.put_vectors("m", [(1, "one", b"v1")])
            raise RuntimeError("abort")
        assert backend.get_vectors("m") == []

    def test_vectors_survive_reopening(
        self, backend: StorageBackend, reopen: Callable[[], StorageBackend]
    ) -> None:
        if not backend.capabilities.persistent:
            pytest.skip(f"{backend.capabilities.name} is not persistent")
        backend.put_session(make_session())
        backend.put_moments([make_moment(1, "one"), make_moment(2, "two")])
        blob = bytes(range(256)) * 3  # any bytes, newlines included
        backend.put_vectors("m", [(1, "one", blob)])
        backend.close()
        again = reopen()
        assert again.get_vectors("m") == [(1, blob)]
        assert again.unembedded("m") == [2]


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


class TestArchive:
    @pytest.fixture
    def filled(self, backend: StorageBackend) -> StorageBackend:
        backend.put_session(make_session())
        backend.put_moments(
            [
                make_moment(1, "We booked the train to Lyon", concepts=["lyon", "train"]),
                make_moment(2, "Dinner in Lyon", concepts=["lyon"]),
                make_moment(3, "Seat 42 on the train", concepts=["train"]),
            ]
        )
        backend.put_vectors(
            "m", [(1, "We booked the train to Lyon", b"v1"), (2, "Dinner in Lyon", b"v2")]
        )
        return backend

    def test_archived_moments_leave_the_active_set_and_every_index(
        self, filled: StorageBackend
    ) -> None:
        filled.archive_moments([make_entry(1, concepts=["lyon", "train"])])
        assert filled.get_moment("m_1") is None
        assert [m.id for m in filled.list_moments()] == ["m_2", "m_3"]
        assert filled.count_moments() == 2 and filled.count_moments(SID) == 2
        found = {m for m, _ in filled.search_text("train lyon", MomentFilter(), 10)}
        assert found == {"m_2", "m_3"}
        lyon = filled.get_concept("lyon")
        assert lyon is not None and lyon.moments == ["m_2"]
        assert filled.get_vectors("m") == [(2, b"v2")]
        assert 1 not in filled.unembedded("m")
        assert filled.get_archived(["m_3", "m_1"]) == [make_entry(1, concepts=["lyon", "train"])]
        assert filled.list_archived() == [make_entry(1, concepts=["lyon", "train"])]
        assert filled.count_archived() == 1
        assert filled.archived_with_concept("lyon") == ["m_1"]
        assert filled.archived_with_concept("paris") == []

    def test_a_concept_only_in_archived_moments_keeps_them(self, filled: StorageBackend) -> None:
        filled.archive_moments(
            [make_entry(3, concepts=["train"]), make_entry(1, concepts=["train"])]
        )
        assert filled.archived_with_concept("train") == ["m_1", "m_3"]
        assert filled.get_concept("train") is None
        assert [e.id for e in filled.list_archived(offset=1, limit=5)] == ["m_3"]

    def test_archiving_again_replaces_the_entry(self, filled: StorageBackend) -> None:
        filled.archive_moments([make_entry(1, concepts=["lyon"])])
        again = make_entry(1, concepts=["train"]).model_copy(update={"file": "other.jsonl.gz"})
        filled.archive_moments([again])  # a rerun after a crash: the moment is gone already
        assert filled.get_archived(["m_1"]) == [again]
        assert filled.count_archived() == 1
        assert filled.archived_with_concept("lyon") == []
        assert filled.archived_with_concept("train") == ["m_1"]

    def test_archiving_rolls_back_with_its_transaction(self, filled: StorageBackend) -> None:
        with pytest.raises(RuntimeError), filled.atomic():
            filled.archive_moments([make_entry(2)])
            assert filled.get_moment("m_2") is None
            assert [m.id for m in filled.list_moments(SID)] == ["m_1", "m_3"]
            raise RuntimeError("abort")
        moment = filled.get_moment("m_2")
        assert moment is not None and moment.content.text == "Dinner in Lyon"
        assert filled.count_archived() == 0
        assert [m for m, _ in filled.search_text("dinner", MomentFilter(), 5)] == ["m_2"]

    def test_archive_survives_reopening(
        self, filled: StorageBackend, reopen: Callable[[], StorageBackend]
    ) -> None:
        if not filled.capabilities.persistent:
            pytest.skip(f"{filled.capabilities.name} is not persistent")
        filled.archive_moments([make_entry(2, concepts=["lyon"])])
        filled.close()
        again = reopen()
        assert again.get_moment("m_2") is None
        assert again.get_archived(["m_2"]) == [make_entry(2, concepts=["lyon"])]
        assert again.archived_with_concept("lyon") == ["m_2"]
        assert again.get_vectors("m") == [(1, b"v1")]


class TestDeleteSession:
    @pytest.fixture
    def filled(self, backend: StorageBackend) -> StorageBackend:
        """Two sessions sharing the concept "lyon"; SID's m_1 archived, m_2 and m_3 with
        vectors, SID2's m_4 with a vector."""
        backend.put_session(make_session())
        backend.put_session(make_session(SID2, T0 + timedelta(days=1)))
        backend.put_moments(
            [
                make_moment(1, "Old note about Lyon", concepts=["lyon"]),
                make_moment(2, "We booked the train to Lyon", concepts=["lyon", "train"]),
                make_moment(3, "Seat 42 on the train", concepts=["train"]),
                make_moment(4, "Dinner in Lyon", SID2, concepts=["lyon"]),
            ]
        )
        backend.archive_moments([make_entry(1, concepts=["lyon"])])
        backend.put_vectors(
            "m",
            [
                (2, "We booked the train to Lyon", b"v2"),
                (3, "Seat 42 on the train", b"v3"),
                (4, "Dinner in Lyon", b"v4"),
            ],
        )
        return backend

    def _assert_only_the_other_session(self, backend: StorageBackend) -> None:
        assert backend.get_session(SID) is None
        assert [s.id for s in backend.list_sessions()] == [SID2]
        assert backend.count_sessions() == 1
        assert [m.id for m in backend.list_moments()] == ["m_4"]
        assert backend.get_moment("m_2") is None and backend.count_moments(SID) == 0
        assert backend.list_moments(SID) == []
        assert [m for m, _ in backend.search_text("train lyon", MomentFilter(), 10)] == ["m_4"]
        lyon = backend.get_concept("lyon")
        assert lyon is not None and (lyon.moments, lyon.sessions) == (["m_4"], [SID2])
        assert backend.get_concept("train") is None
        assert [c.concept for c in backend.list_concepts()] == ["lyon"]
        assert backend.count_concepts() == 1
        assert backend.get_vectors("m") == [(4, b"v4")]
        assert backend.unembedded("m") == []
        assert backend.count_archived() == 0 and backend.get_archived(["m_1"]) == []
        assert backend.archived_with_concept("lyon") == []

    def test_deleting_removes_the_session_and_all_derived_of_its_moments(
        self, filled: StorageBackend
    ) -> None:
        filled.delete_session(SID)
        self._assert_only_the_other_session(filled)
        filled.delete_session(SID)  # again, or an unknown id: nothing happens
        filled.delete_session("s_2030-01-01_001")
        self._assert_only_the_other_session(filled)
        # the id can be used again
        filled.put_session(make_session(task="again"))
        filled.put_moments([make_moment(5, "A new start")])
        assert [m.id for m in filled.list_moments(SID)] == ["m_5"]

    def test_reads_inside_see_the_deletion_and_an_error_undoes_it(
        self, filled: StorageBackend
    ) -> None:
        with pytest.raises(RuntimeError), filled.atomic():
            filled.delete_session(SID)
            assert filled.get_session(SID) is None
            assert [m.id for m in filled.list_moments()] == ["m_4"]
            assert filled.get_moment("m_3") is None and filled.count_archived() == 0
            raise RuntimeError("abort")
        assert [m.id for m in filled.list_moments(SID)] == ["m_2", "m_3"]
        assert filled.get_vectors("m") == [(2, b"v2"), (3, b"v3"), (4, b"v4")]
        assert filled.count_archived() == 1

    def test_deleted_and_recreated_in_one_transaction(self, filled: StorageBackend) -> None:
        with filled.atomic():
            filled.delete_session(SID)
            filled.put_session(make_session(task="again"))
            filled.put_moments([make_moment(5, "A new start")])
        session = filled.get_session(SID)
        assert session is not None and session.task == "again"
        assert [m.id for m in filled.list_moments(SID)] == ["m_5"]
        assert [m for m, _ in filled.search_text("train", MomentFilter(), 10)] == []

    def test_deletion_survives_reopening(
        self, filled: StorageBackend, reopen: Callable[[], StorageBackend]
    ) -> None:
        if not filled.capabilities.persistent:
            pytest.skip(f"{filled.capabilities.name} is not persistent")
        filled.delete_session(SID)
        filled.close()
        self._assert_only_the_other_session(reopen())

    def test_vector_models_lists_the_models_in_use(self, filled: StorageBackend) -> None:
        filled.put_vectors("a-model", [(4, "Dinner in Lyon", b"w4")])
        assert filled.vector_models() == ["a-model", "m"]
        filled.delete_session(SID)
        filled.delete_session(SID2)
        assert filled.vector_models() == []
