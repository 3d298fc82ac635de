"""Time said relative to the day it was said (issue 31): each expression is resolved at
record time against the moment's date, so a question naming the absolute date finds it.
Made-up turns, a real notebook (SQLite, lexical)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.core.dates import relative_dates
from agent_notebook.storage import SqliteBackend

MONDAY = date(2023, 5, 8)


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("I got the guitar a year ago", ["2022", "2022-05"]),
        ("We moved here three years ago", ["2020", "2020-05"]),
        ("I have been running for three years now", ["2020", "2020-05"]),
        ("I've worked there for the past two months already", ["2023-03"]),
        ("The pottery class was last week", ["2023-05-01", "2023-05"]),
        ("The wedding is next month", ["2023-06"]),
        ("My sister visits in two weeks", ["2023-05-22", "2023-05"]),
        ("I was ill the week before", ["2023-05-01", "2023-05"]),
        ("We hiked this past weekend", ["2023-05-06", "2023-05-07"]),
        ("The results come in a few days", ["2023-05-11"]),
    ],
)
def test_each_expression_resolves_against_the_day_it_was_said(text: str, keys: list[str]) -> None:
    assert relative_dates(text, MONDAY) == keys


def test_durations_and_phrases_that_say_no_date_resolve_to_none() -> None:
    assert relative_dates("the week before the trip", MONDAY) == []  # before an event
    assert relative_dates("I ran for three years", MONDAY) == []  # when, it does not say
    assert relative_dates("a child of 4 years old", MONDAY) == []


#: (what was said, the day it was said, a question naming the date it speaks of)
SAID = [
    ("Mia: I got my guitar a year ago in Lisbon.", date(2023, 5, 8), "in May 2022"),
    ("Tom: We moved to the coast three years ago.", date(2023, 5, 8), "in 2020"),
    ("Ana: I have been knitting for five years now.", date(2023, 7, 3), "in 2018"),
    ("Bo: The pottery class was last week, it was muddy.", date(2023, 5, 8), "on 1 May 2023"),
    ("Mia: Our concert is next month!", date(2023, 8, 14), "in September 2023"),
    ("Tom: My sister visits in two weeks.", date(2023, 5, 8), "on 22 May 2023"),
    ("Ana: I had the flu the week before.", date(2023, 10, 18), "on 9 October 2023"),
    ("Bo: We hiked Ben Nevis this past weekend.", date(2023, 11, 13), "on 12 November 2023"),
]


def test_each_expression_is_found_by_its_absolute_date(tmp_path: Path) -> None:
    with Notebook(SqliteBackend(tmp_path / "nb.db"), embedder=None) as nb:
        ids = []
        for text, day, _ in SAID:
            when = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
            session = nb.start_session(f"chat of {day}", started=when)
            nb.record(session.id, "Hello, how are things going?", timestamp=when)
            ids.append(nb.record(session.id, text, timestamp=when).id)
        for (text, _, asked), moment_id in zip(SAID, ids, strict=True):
            hits = nb.search(f"What happened {asked}?", limit=3)
            assert hits and hits[0].moment.id == moment_id, (text, asked)


def test_is_time_question() -> None:
    from agent_notebook.search.query import is_time_question

    for asked in (
        "When did Mia get the guitar?",
        "In which year did Tom move?",
        "How long has Ana been knitting?",
        "how many weeks until the visit?",
    ):
        assert is_time_question(asked), asked
    for asked in ("Where did Mia get the guitar?", "What did Tom say?", "Ana: when?\nBo: now"):
        assert not is_time_question(asked), asked


def test_a_time_question_favours_the_turn_that_says_when(tmp_path: Path) -> None:
    """Two turns about Mia's guitar; only one says when (a year ago, resolved at record
    time). With the bonus, "when" puts it first, and its ``dated`` factor says why."""
    from agent_notebook.config import NotebookConfig, SearchSettings

    with Notebook(SqliteBackend(tmp_path / "nb.db"), embedder=None) as nb:
        when = datetime(2023, 5, 8, 12, tzinfo=UTC)
        session = nb.start_session("chat", started=when)
        plain = nb.record(
            session.id, "Mia loves her guitar, the guitar she plays daily.", timestamp=when
        )
        dated = nb.record(session.id, "Mia got the guitar a year ago.", timestamp=when)
        asked = "When did Mia get her guitar?"
        nb.config = NotebookConfig(search=SearchSettings(time_question_bonus=0.0))
        off = nb.search(asked, limit=2)
        nb.config = NotebookConfig(search=SearchSettings(time_question_bonus=1.0))
        on = nb.search(asked, limit=2)
        assert on[0].moment.id == dated.id and on[0].explain["dated_prior"] == 2.0
        assert "dated_prior" not in on[1].explain and on[1].moment.id == plain.id
        assert [h.score for h in on] == sorted((h.score for h in on), reverse=True)
        assert off[0].moment.id == plain.id  # without the bonus its words win
