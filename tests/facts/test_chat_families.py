"""Decisions, open items and closures as people chat (issue 39, item 2), as minimal pairs
written by hand: each phrasing family the rules read beside a near miss that must yield
nothing. The families come from misses on the labelled conversations (bench/facts_chat.py);
no sentence here is taken from them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_notebook.facts import FactEngine, Findings, Statement

T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def said(*texts: str, who: str = "Ana") -> list[Findings]:
    engine = FactEngine()
    return [
        engine.observe(Statement(f"m_{i + 1}", t, T0 + timedelta(minutes=i), "user", who))
        for i, t in enumerate(texts)
    ]


def decisions(*texts: str) -> list[str]:
    return [d.what for f in said(*texts) for d in f.decisions]


def pending(*texts: str) -> list[str]:
    return [p.what for f in said(*texts) for p in f.pending]


# -- agreement that names what is agreed ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("Next Tuesday works for me.", "Next Tuesday"),
        ("Perfect, a Saturday picnic works for us.", "a Saturday picnic"),
        ("Moving the call to the afternoon makes the most sense.", "Moving the call"),
        ("Walking to work twice a week sounds doable.", "Walking to work"),
        ("Having one slot a month for the review is perfect.", "Having one slot"),
    ],
)
def test_an_agreement_that_names_the_plan_item_is_a_decision(text: str, what: str) -> None:
    (found,) = decisions(text)
    assert found.startswith(what)


@pytest.mark.parametrize(
    "text",
    [
        "That works for me.",
        "This plan sounds perfect.",
        "Your garden looks great!",
        "Everything works now.",
        "Something like that makes sense.",
        "Gardening is great for the mind.",
    ],
)
def test_an_agreement_that_names_nothing_decides_nothing(text: str) -> None:
    assert decisions(text) == []


# -- a choice reported by what was done -------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I'm a bit nervous about declining that job offer from Acme on Monday.",
        "I'm worried that replacing my evening TV with reading since March won't last.",
        "I had to shut down my old savings account.",
        "I allocated $300 for the new desk.",
        "I've added a 20-minute stretch every morning.",
        "I'm debating if I made the right call choosing the red sofa.",
        "Hey Sam, I cancelled the gym membership.",
    ],
)
def test_a_choice_reported_as_done_is_a_decision(text: str) -> None:
    assert len(decisions(text)) == 1


@pytest.mark.parametrize(
    "text",
    [
        "I'm worried about declining the offer.",  # still to choose: nothing points back
        "I added a new plugin to the editor.",  # an act, no arrangement
        "I've implemented a retry with backoff.",  # building, not a practice
        "Let's keep movin' forward!",  # a cheer
        "Let's try to stay positive.",
    ],
)
def test_an_act_or_a_cheer_is_no_decision(text: str) -> None:
    assert decisions(text) == []


def test_lets_try_for_a_while_is_a_decision() -> None:
    assert decisions("Let's try the later standup for two weeks.") == [
        "try the later standup for two weeks"
    ]


# -- a decision said again is one decision ----------------------------------------------


def test_a_decision_said_again_is_not_a_new_one() -> None:
    found = decisions(
        "I'm going to stick with Notion for my notes.",
        "I've decided to keep using Notion for my notes.",
    )
    assert len(found) == 1


def test_a_decision_after_doubt_settles_it_and_counts() -> None:
    found = decisions(
        "I chose the cheaper flat, but I'm not sure it was the right move.",
        "I think I'll go with the cheaper flat.",
    )
    assert len(found) == 2


# -- commitments: tasks, practices and promises that name nothing ------------------------


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("I'm gonna email the landlord about the boiler.", "email the landlord"),
        ("I think I'll ask Priya about her schedule.", "ask Priya"),
        ("I'll make sure to send the invoice to Tom.", "send the invoice"),
        ("Also, I'll book the van for the move.", "book the van"),
    ],
)
def test_a_commitment_as_people_say_it_opens_an_item(text: str, what: str) -> None:
    (found,) = pending(text)
    assert found.startswith(what)


@pytest.mark.parametrize(
    "text",
    [
        "I'm gonna make it happen!",
        "We'll get through this!",
        "I'll stick to the plan.",
        "I'll keep everyone updated.",
        "I'm going to do more workouts.",
        "I'll start tracking my sleep.",
    ],
)
def test_a_promise_that_names_no_task_opens_nothing(text: str) -> None:
    assert pending(text) == []


def test_a_commitment_to_a_practice_is_a_decision_not_a_task() -> None:
    (found,) = said("I'll hold a short check-in with the team every Monday.")
    assert [d.what for d in found.decisions] == ["hold a short check-in with the team every Monday"]
    assert found.pending == []


# -- a choice left open -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "What are the things I should consider before buying a car?",  # a relative clause
        "I'm debating if I made the right call on the sofa.",  # doubt about a choice made
        "I'm thinking of visiting Lisbon in May.",  # a plan, said without doubt
        "We talked about the contract I'm considering.",
    ],
)
def test_no_choice_is_left_open_here(text: str) -> None:
    assert pending(text) == []


def test_thinking_of_it_with_a_doubt_leaves_a_choice_open() -> None:
    assert len(pending("I'm thinking of visiting Lisbon in May, but I'm not sure.")) == 1


# -- a decision settles the question it answers, not any question -------------------------

QUESTION = "My neighbour invited me to a barbecue on Sunday, should I go?"
FILLER = ["The weather was lovely today.", "My sister called about her trip.", "Work was busy."]


def closed(*texts: str) -> list[tuple[str, str]]:
    return [(c.item.source, c.closed_by) for f in said(*texts) for c in f.closures]


def test_a_decision_just_after_a_question_settles_it() -> None:
    assert closed(QUESTION, "I think I'll go to the barbecue.") == [("m_1", "m_2")]


def test_a_later_decision_sharing_one_common_word_settles_nothing() -> None:
    assert closed(QUESTION, *FILLER, "Let's go with the Sunday roast at home.") == []
    assert closed(QUESTION, *FILLER, "I think I'll go to the barbecue.") == []


def test_a_later_decision_naming_what_the_question_named_settles_it() -> None:
    question = "I'm considering the Tandem app for budgeting, what do you think?"
    found = closed(question, *FILLER, "I'm gonna stick with Tandem after all.")
    assert found == [("m_1", "m_5")]
