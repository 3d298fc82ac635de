"""The conformance suite (see the package): the cold archive, and deleting a session with
everything derived from its moments."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from ..base import MomentFilter, StorageBackend
from .records import SID, SID2, T0, make_entry, make_moment, make_session


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
