"""A turn's meaning often lies in its neighbours (issue 31): "I picked it up in Lisbon a year
ago" answers "When did Mia get the guitar?" only with the turn before it, which names the
guitar. Each turn lends ``neighbour_share`` of its fused score (every signal's) to the turns
beside it in its session, so the answer is found by what only its neighbour names.

Chosen at query time rather than by indexing each turn with its neighbour's words: a
redacted or forgotten turn must leave no trace in the index of the turns beside it, and
nothing has to be re-indexed or re-embedded when a neighbour changes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.config import SearchSettings
from agent_notebook.embed import default_embedder
from agent_notebook.search.hybrid import refers_back
from agent_notebook.storage import SqliteBackend

T0 = datetime(2025, 3, 1, 18, 0, tzinfo=UTC)
QUESTION = "When did Mia get the guitar?"


#: Other talk of the same two people, on other days (what a notebook holds around a turn).
ELSEWHERE = [
    ("Sam", "Mia dropped the car at the garage on Tuesday."),
    ("Mia", "The bakery on the corner closes at six now."),
    ("Sam", "We got the tickets for the concert in May."),
    ("Mia", "My sister starts her new job at the hospital next week."),
    ("Sam", "The landlord wants the rent on the first of the month."),
    ("Mia", "I finally finished the book about the Antarctic expedition."),
    ("Sam", "Did you water the plants on the balcony?"),
    ("Mia", "Yes, and the tomatoes are almost ripe."),
    ("Sam", "Our team lost the match again on Sunday."),
    ("Mia", "I booked the dentist for Thursday morning."),
    ("Sam", "The new printer at work jams every day."),
    ("Mia", "We should visit grandma before the holidays."),
]


@pytest.fixture
def told(tmp_path: Path) -> Iterator[tuple[Notebook, str]]:
    """A notebook (the offline embedder: hybrid, the default mode) and the id of the turn
    that answers ``QUESTION``."""
    embedder = default_embedder()
    assert embedder is not None, "the offline embedder is a dependency of the package"
    nb = Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=embedder)
    for day, (speaker, text) in enumerate(ELSEWHERE):
        other = nb.start_session(f"day {day}", started=T0 - timedelta(days=day + 1))
        nb.record(other.id, text, speaker=speaker, timestamp=T0 - timedelta(days=day + 1))
    talk = nb.start_session("catching up", started=T0)
    turns = [
        ("Mia", "Look, this is my red guitar, the one on the wall."),
        ("Mia", "I picked it up in Lisbon a year ago."),
        ("Sam", "Shall we order some food?"),
        ("Mia", "Pizza from the place near the station."),
    ]
    said = [
        nb.record(talk.id, text, speaker=who, timestamp=T0 + timedelta(seconds=i))
        for i, (who, text) in enumerate(turns)
    ]
    nb.reindex()
    yield nb, said[1].id
    nb.close()


def test_a_turn_is_found_by_what_only_its_neighbour_names(told: tuple[Notebook, str]) -> None:
    nb, answer = told
    assert SearchSettings().spread.neighbour_share > 0  # on by default
    hits = nb.search(QUESTION, limit=3)
    ids = [h.moment.id for h in hits]
    assert answer in ids, [(h.moment.id, h.moment.content.text) for h in hits]
    found = hits[ids.index(answer)]
    assert found.explain["neighbours_gain"] > 0  # explain says where its score came from
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    nb.config.search.spread.neighbour_share = 0
    # Without its neighbour it is only Mia's words, weakly related (the cut keeps what the
    # person a question names said: issue 42), and nothing lends it score.
    alone = {h.moment.id: h for h in nb.search(QUESTION, limit=3)}
    assert alone[answer].score < found.score and "neighbours_gain" not in alone[answer].explain


def test_a_redacted_neighbour_lends_nothing(told: tuple[Notebook, str]) -> None:
    nb, answer = told
    guitar = nb.search("red guitar on the wall", mode="lexical", limit=1)[0].moment
    nb.redact(guitar.id, reason="private")
    hits = nb.search(QUESTION, limit=10)
    assert guitar.id not in [h.moment.id for h in hits]
    # nothing the guitar turn said lends the answer its meaning any more: on its own it is
    # less relevant than the cut-off (its cosine to the question is under 0.3), kept only
    # as what Mia, whom the question names, said (issue 42)
    found = {h.moment.id: h for h in hits}
    assert found[answer].explain["relevance"] < 0.3
    assert found[answer].explain["speaker_prior"] > 1
    assert answer in [h.moment.id for h in nb.search(QUESTION, limit=20, min_score=0)]


def test_a_turn_that_names_its_own_subject_is_judged_on_its_own(
    told: tuple[Notebook, str],
) -> None:
    """Only a turn that leans on the one before it (a pronoun pointing back, or a few
    words) is read with it: a note beside a match that names something else is no result."""
    nb, answer = told
    pizza = [h.moment.id for h in nb.search("Shall we order pizza?", limit=10)]
    food = nb.search("order some food", mode="lexical", limit=1)[0].moment.id
    assert food in pizza
    station = nb.search("pizza near the station", limit=10)
    assert answer not in [h.moment.id for h in station]


@pytest.mark.parametrize(
    ("text", "leans"),
    [
        ("I picked it up in Lisbon a year ago.", True),
        ("That was the best day of the trip!", True),
        ("They moved there in 2019 with their kids.", True),
        ("In Lisbon.", True),  # a few words: an answer, an ellipsis
        ("Yes, last May", True),
        ("Mia dropped the car at the garage on Tuesday.", False),
        ("The bakery on the corner closes at six now.", False),
    ],
)
def test_a_turn_leans_on_the_one_before_by_pointing_back_or_by_being_short(
    text: str, leans: bool
) -> None:
    assert refers_back(text) is leans
