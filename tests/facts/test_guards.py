"""The guards of issue 39 (item 3) as minimal pairs: the same fact said as a current claim
is linked, said as a story about the past, a hypothetical, someone else's report, a question
or another sense of the verb it is not; two people who disagree, with no cue of a change,
make a conflict, not a silent update; an assistant reporting a change the user asked for
states the user's fact."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_notebook.facts import FactEngine, Findings, Statement

T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def said(*turns: str | tuple[str, str]) -> list[Findings]:
    """Each turn a text (said by Ana) or (speaker, text); "assistant" is the model."""
    statements = []
    for i, turn in enumerate(turns):
        speaker, text = ("Ana", turn) if isinstance(turn, str) else turn
        role = "assistant" if speaker == "assistant" else "user"
        statements.append(
            Statement(
                f"m_{i + 1}",
                text,
                T0 + timedelta(days=i),
                role,
                "" if role == "assistant" else speaker,
            )
        )
    return FactEngine().observe_all(statements)


def links(findings: list[Findings]) -> set[tuple[str, str, str]]:
    return {(k.source, k.relation, k.target) for f in findings for k in f.links}


UPDATE = ("m_1", "superseded_by", "m_2")


@pytest.mark.parametrize(
    ("first", "later", "linked"),
    [
        # a story about the past is no update of the present
        ("I've started at Monzo.", "I work at Barclays now.", True),
        ("I've started at Monzo.", "Back in 2019 I worked at Tesco.", False),
        ("I've started at Monzo.", "Years ago I worked at Tesco, it was rough.", False),
        ("I live in Leeds.", "I moved to York last month.", True),
        ("I live in Leeds.", "When I was a kid I lived in York.", False),
        # a hypothetical
        ("I live in Leeds.", "If I moved to Berlin I would learn German.", False),
        ("I live in Leeds.", "I might move to Berlin next year.", False),
        # someone else's report
        ("The office is on Baker Street.", "The office moved to King Street.", True),
        ("The office is on Baker Street.", "She said the office moved to King Street.", False),
        # a question
        ("I live in Leeds.", "Did you move to York?", False),
        # another sense of the verb
        ("I live in Leeds.", "I moved my savings to Chase.", False),
        ("I work at Monzo.", "I joined Strava as a premium member.", False),
        ("I work at Monzo.", "I joined Stripe last week as an engineer.", True),
    ],
)
def test_only_a_current_claim_ends_the_one_before(first: str, later: str, linked: bool) -> None:
    assert (UPDATE in links(said(first, later))) is linked


def test_after_a_story_about_an_old_job_the_current_job_still_holds() -> None:
    found = links(
        said("I've started at Monzo.", "Back in 2019 I worked at Tesco.", "Work is busy.")
    )
    assert not any(r == "superseded_by" for _, r, _ in found)


def test_two_people_who_disagree_make_a_conflict_not_an_update() -> None:
    found = links(said(("Ana", "The budget is $50,000."), ("Ben", "The budget is $80,000.")))
    assert ("m_2", "conflicts_with", "m_1") in found and ("m_1", "conflicts_with", "m_2") in found
    assert UPDATE not in found


def test_a_second_person_who_says_it_changed_makes_an_update() -> None:
    found = links(said(("Ana", "The budget is $50,000."), ("Ben", "The budget is now $80,000.")))
    assert UPDATE in found


def test_the_same_person_restating_a_value_updates_it() -> None:
    assert UPDATE in links(said("The budget is $50,000.", "The budget is $80,000."))


def test_an_assistant_reporting_the_change_asked_for_states_the_users_fact() -> None:
    found = links(
        said(
            ("Ana", "My address is 12 Oak Lane."),
            ("Ana", "Please change it, I'm moving."),
            ("assistant", "Done: I've updated your address to 48 Elm Road."),
        )
    )
    assert ("m_1", "superseded_by", "m_3") in found


def test_an_assistant_suggesting_a_value_states_nothing() -> None:
    found = links(
        said(
            ("Ana", "My address is 12 Oak Lane."),
            ("assistant", "Your address could be written as 12 Oak Ln."),
        )
    )
    assert not found
