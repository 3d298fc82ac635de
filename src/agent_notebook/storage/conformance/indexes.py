"""The conformance suite (see the package): the indexes derived from the moments, concepts,
words and text vectors."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from ...model import CUT_SPEAKER, Moment
from ..base import MomentFilter, StorageBackend
from .records import SID, SID2, T0, make_moment, make_session


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


class TestFactIndex:
    @staticmethod
    def _filed(num: int, keys: list[str], sid: str = SID) -> Moment:
        moment = make_moment(num, f"statement {num}", sid)
        moment.metadata.fact_keys = keys
        return moment

    def test_the_latest_below_a_number_per_key(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        backend.put_session(make_session(SID2))
        backend.put_moments(
            [
                self._filed(1, ["employer/i/maya"]),
                self._filed(2, ["value/launch"]),
                self._filed(4, ["employer/i/maya", "value/launch"], SID2),
                self._filed(6, ["employer/i/maya"], SID2),
                self._filed(9, ["employer/i/maya"]),
            ]
        )
        assert backend.fact_key_members(["employer/i/maya"], 9, 2) == [4, 6]
        assert backend.fact_key_members(["employer/i/maya"], 100, 9) == [1, 4, 6, 9]
        assert backend.fact_key_members(["employer/i/maya", "value/launch"], 5, 1) == [4]
        assert backend.fact_key_members(["value/launch", "home/i/maya"], 9, 5) == [2, 4]

    def test_a_rewrite_refiles_and_a_removal_unfiles(self, backend: StorageBackend) -> None:
        backend.put_session(make_session())
        backend.put_session(make_session(SID2))
        backend.put_moments([self._filed(1, ["home/i/ana"]), self._filed(2, ["home/i/ana"], SID2)])
        backend.put_moments([self._filed(1, ["employer/i/ana"])])
        assert backend.fact_key_members(["home/i/ana"], 10, 5) == [2]
        assert backend.fact_key_members(["employer/i/ana"], 10, 5) == [1]
        backend.delete_session(SID2)
        assert backend.fact_key_members(["home/i/ana"], 10, 5) == []
        backend.put_moments([self._filed(1, [])])
        assert backend.fact_key_members(["employer/i/ana"], 10, 5) == []


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

    def test_how_common_a_querys_words_are(self, filled: StorageBackend) -> None:
        """``term_documents``: how many moments hold each word (by its stem or keyed token,
        as the index does), those no moment holds left out, beside how many there are."""
        counted = filled.term_documents("Trains to Lyon, unicorn")
        if counted is None:  # a backend that cannot tell: search reads the words as rare
            return
        total, docs = counted
        assert total == 5
        assert sorted(docs.values()) == [1, 2, 3]  # to, lyon, train (stemmed, any case)
        assert len(docs) == 3  # "unicorn" is in no moment


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
