"""Questions as people ask them (issue 42): the time words of a question read against the
time it is asked, the people it names, a cut that never hides the answer, and a question
recorded earlier that is no answer to itself. Real notebooks (SQLite); the time readings
on the lexical path (no model: what they do does not depend on one), the people and the
cut with the offline embedder."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.embed import default_embedder
from agent_notebook.storage import SqliteBackend

#: A Monday: a decision is told every Monday for two years, and small talk every day.
FIRST_MONDAY = date(2026, 1, 5)
WEEKS = 104
THINGS = [
    "paint the hall green",
    "sell the old bike",
    "book the lake cabin",
    "switch to the cheaper energy plan",
    "adopt a cat from the shelter",
    "start saving for a van",
    "plant tomatoes on the balcony",
    "host the quiz night",
    "buy a second-hand piano",
    "drop the gym membership",
    "learn to make sourdough",
    "visit grandma every other Sunday",
    "replace the kitchen tap",
]


def thing(week: int) -> str:
    return f"{THINGS[week % len(THINGS)]} (plan {week})"


def at(day: date, hour: int = 19) -> datetime:
    return datetime.combine(day, time(hour), tzinfo=UTC)


@pytest.fixture(scope="module")
def diary(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Notebook]:
    """Two years of a household chat: each Monday a decision, each day small talk, the move
    on 15 June 2026, a walk to the lake now and then, and a decision on 25 November of each
    year."""
    home = tmp_path_factory.mktemp("diary")
    nb = Notebook(SqliteBackend(home / "notebook.db"), embedder=None)
    for week in range(WEEKS):
        monday = FIRST_MONDAY + timedelta(weeks=week)
        session = nb.start_session(f"week {week}", started=at(monday, 8))
        drafts = []
        for offset in range(7):
            day = monday + timedelta(days=offset)
            drafts.append({"text": "Busy day at work, home late.", "timestamp": at(day, 8)})
            if offset == 0:
                text = f"Okay, we decided: {thing(week)}."
                drafts.append({"text": text, "speaker": "Ana", "timestamp": at(day)})
            if day in (date(2026, 11, 25), date(2027, 11, 25)):
                text = f"We decided tonight: the {day.year} family dinner is at Ana's."
                drafts.append({"text": text, "speaker": "Ana", "timestamp": at(day, 20)})
            if day == date(2026, 6, 15):
                text = "Moving day! The van is loaded, we live in the new flat now."
                drafts.append({"text": text, "speaker": "Bo", "timestamp": at(day, 12)})
            if day.day == 3 and day.month in (2, 5, 9):
                text = f"Walked to the lake with the dog today ({day:%B})."
                drafts.append({"text": text, "speaker": "Bo", "timestamp": at(day, 10)})
        nb.record_many(session.id, drafts)
    yield nb
    nb.close()


def first_text(nb: Notebook, question: str, asked: date) -> str:
    hits = nb.search(question, asked_at=at(asked, 9), limit=5)
    assert hits, f"nothing for {question!r} asked {asked}"
    return hits[0].moment.content.text


def monday(week: int) -> date:
    return FIRST_MONDAY + timedelta(weeks=week)


@pytest.mark.parametrize(
    ("question", "after"),
    [
        ("what did we decide yesterday?", timedelta(days=1)),
        ("What did we decide last week?", timedelta(days=7)),
        ("what did we decide two weeks ago", timedelta(days=14)),
        ("what did we decide 3 days ago?", timedelta(days=3)),
        ("what did we decide last Monday?", timedelta(days=2)),
    ],
)
def test_a_relative_time_finds_the_days_it_points_at_a_week_and_a_year_later(
    diary: Notebook, question: str, after: timedelta
) -> None:
    for week in (10, 10 + 52):  # the same words, asked a year apart: another day each time
        assert thing(week) in first_text(diary, question, monday(week) + after)


def test_a_month_without_a_year_is_its_latest_one(diary: Notebook) -> None:
    text = first_text(diary, "what did we decide in March?", date(2026, 4, 20))
    assert "plan" in text and any(thing(w) in text for w in range(8, 13))  # March 2026's
    text = first_text(diary, "what did we decide in March?", date(2027, 4, 20))
    assert any(thing(w) in text for w in range(60, 65))  # March 2027's


def test_a_day_without_a_year_is_the_latest_with_moments(diary: Notebook) -> None:
    question = "what did we decide on 25 November?"
    assert "2026 family dinner" in first_text(diary, question, date(2026, 12, 2))
    # a year later: that year's
    assert "2027 family dinner" in first_text(diary, question, date(2027, 12, 1))
    # asked in 2028, when the notebook has nothing then: the latest 25 November it has
    assert "2027 family dinner" in first_text(diary, question, date(2028, 12, 1))


def test_before_an_event_and_the_first_time(diary: Notebook) -> None:
    moved = at(date(2026, 6, 15), 12)
    for asked in (date(2026, 7, 1), date(2027, 7, 1)):
        hits = diary.search("what did we decide before the move?", asked_at=at(asked), limit=4)
        # the move itself may be shown (the event's words stay in the question); the
        # decisions come from before it
        decisions = [h for h in hits if "decided" in h.moment.content.text]
        assert len(decisions) >= 2 and all(h.moment.timestamp < moved for h in decisions)
        assert all(h.explain["window_prior"] > 1 for h in decisions)
        first = diary.search("when did Bo walk to the lake the first time?", asked_at=at(asked))
        assert "(February)" in first[0].moment.content.text
        assert first[0].moment.timestamp.date() == date(2026, 2, 3)


def test_a_question_without_time_words_is_read_as_before(diary: Notebook) -> None:
    asked = at(date(2027, 1, 1))
    plain = diary.search("what did we decide about the lake cabin?", asked_at=asked)
    diary.config.search.priors.time_window_bonus = 0.0  # the time reading off
    try:
        off = diary.search("what did we decide about the lake cabin?", asked_at=asked)
    finally:
        diary.config.search.priors.time_window_bonus = 0.5
    assert plain and [h.moment.id for h in plain] == [h.moment.id for h in off]
    assert all("window_prior" not in h.explain for h in plain)


def test_asked_at_must_say_its_zone(diary: Notebook) -> None:
    from agent_notebook.errors import InvalidInput

    with pytest.raises(InvalidInput, match="asked_at"):
        diary.search("what did we decide yesterday?", asked_at=datetime(2026, 3, 3))


# -- people, the cut, echoes (the offline embedder) ---------------------------------------------

T0 = datetime(2026, 11, 23, 18, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Notebook]:
    embedder = default_embedder()
    assert embedder is not None, "the offline embedder is a dependency of the package"
    home = tmp_path_factory.mktemp("family")
    nb = Notebook(SqliteBackend(home / "notebook.db"), embedder=embedder)
    said = [
        [
            ("Ana", "I am vegetarian, so no meat for me at dinner please"),
            ("Tom", "Noted. Fish for you then?"),
            ("Ana", "Fish is fine."),
        ],
        [
            ("Maya", "just so everyone knows I'm allergic to peanuts, keep the satay away"),
            ("Bo", "ok, nut-free desserts"),
        ],
        [
            ("Tom", "where am I moving, you ask? I'm moving to Rotterdam in January"),
            ("Ana", "so far! we'll visit"),
        ],
        [
            ("Bo", "where is Tom relocating to?"),
            ("Ana", "Rotterdam, from January. New job at the port."),
        ],
        [
            ("Bo", "the weather is awful again"),
            ("Maya", "we should paint the fence this weekend"),
            ("Tom", "the car needs new tyres before winter"),
        ],
    ]
    for day, turns in enumerate(said):
        start = T0 + timedelta(days=day)
        session = nb.start_session(f"day {day}", started=start)
        for i, (who, text) in enumerate(turns):
            nb.record(session.id, text, speaker=who, timestamp=start + timedelta(minutes=i))
    nb.reindex()
    yield nb
    nb.close()


def test_a_named_person_ranks_above_another_persons_answer_to_the_same_words(
    family: Notebook,
) -> None:
    """Maya's peanut allergy, not Ana's "I am vegetarian": the vector signal ranks Ana's
    first and it alone passes the default cut (0.3); Maya's own words stay, first."""
    question = "Is there anything Maya must avoid eating?"
    asked = T0 + timedelta(days=7)
    hits = family.search(question, asked_at=asked)
    assert hits and "peanuts" in hits[0].moment.content.text
    maya = hits[0].explain
    assert maya["speaker_prior"] > 1 and maya["relevance"] < 0.3  # kept as what Maya said
    vegetarian = next(h for h in hits if "vegetarian" in h.moment.content.text)
    assert vegetarian.explain["relevance"] >= 0.3 and vegetarian.explain["vector_rank"] == 1
    assert vegetarian.explain["other_person_prior"] < 1
    # without the people read, the default cut leaves only the other person's answer
    family.config.search.priors.other_person_weight = 1.0
    family.config.search.fusion.first_floor = 1.0
    try:
        texts = [h.moment.content.text for h in family.search(question, asked_at=asked)]
        assert texts and not any("peanuts" in t for t in texts)
    finally:
        family.config.search.priors.other_person_weight = 0.7
        family.config.search.fusion.first_floor = 0.2


def test_the_cut_keeps_the_vectors_best_when_it_keeps_anything(family: Notebook) -> None:
    """What the vector signal ranks first survives ``min_score`` (relevance above the cut's
    floor) once any hit passes: here a question of no word of the notebook, whose best
    match by meaning is under the cut."""
    asked = T0 + timedelta(days=9)
    everything = family.search("Which city is Tom going to?", asked_at=asked, min_score=0)
    best = next(h for h in everything if h.explain.as_dict().get("vector_rank") == 1)
    hits = family.search("Which city is Tom going to?", asked_at=asked)
    kept = {h.moment.id: h for h in hits}
    assert any(h.explain["relevance"] >= 0.3 for h in hits)  # the cut keeps something
    assert best.moment.id in kept
    for hit in hits:  # every hit under the cut is there for a reason the cut respects
        if hit.explain["relevance"] < 0.3:
            assert hit.explain["relevance"] >= 0.2
            assert hit.moment.speaker == "Tom" or hit.explain["vector_rank"] == 1


def test_a_question_asked_again_is_not_its_own_answer(family: Notebook) -> None:
    hits = family.search("where is Tom relocating to?", asked_at=T0 + timedelta(days=9))
    assert hits[0].moment.content.text.startswith("Rotterdam")
    echo = next(h for h in hits if h.moment.content.text == "where is Tom relocating to?")
    assert echo.explain["echo_prior"] < 1
    # looked up by its words, not asked, the recorded question is found as it is
    found = family.search("Tom relocating", asked_at=T0 + timedelta(days=9))
    assert "echo_prior" not in found[0].explain


def test_a_question_of_common_words_only_is_led_by_its_meaning(tmp_path: Path) -> None:
    embedder = default_embedder()
    assert embedder is not None
    with Notebook(SqliteBackend(tmp_path / "nb.db"), embedder=embedder) as nb:
        session = nb.start_session("days", started=T0)
        common = [f"Today was a really good day at work, number {i}." for i in range(30)]
        for i, text in enumerate(common):
            nb.record(session.id, text, timestamp=T0 + timedelta(hours=i))
        nb.record(
            session.id,
            "Holding my newborn niece for the first time, I cried with joy.",
            timestamp=T0 + timedelta(hours=40),
        )
        nb.reindex()
        question = "What was a really good day for me?"
        meaning = nb.search(question, mode="vector", limit=1)[0].moment.id
        assert nb.search(question, limit=1)[0].moment.id == meaning


def test_i_and_my_name_the_asker_where_the_front_end_knows_who_asks(family: Notebook) -> None:
    asked = T0 + timedelta(days=7)
    question = "what am I not allowed to eat?"

    def peanuts(asker: str | None) -> dict[str, float]:
        hits = family.search(question, asked_at=asked, asker=asker, min_score=0, limit=20)
        return next(h for h in hits if "peanuts" in h.moment.content.text).explain.as_dict()

    assert peanuts("Maya")["speaker_prior"] > 1
    assert "speaker_prior" not in peanuts(None) and "speaker_prior" not in peanuts("Tom")
