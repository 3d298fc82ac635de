"""Updates and conflicts as people chat (issue 39): each phrasing family the rules read
beside a near miss that must yield nothing. The families come from misses on the labelled
development conversations (bench/facts_chat.py); every sentence here is written by hand,
none is taken from them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent_notebook.facts import FactEngine, FactLink, Statement
from agent_notebook.facts.quantities import quantities_in

T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def links(*texts: str, who: str = "Ana", apart: timedelta = timedelta(minutes=1)) -> set[tuple]:
    """(earlier, relation, later) of every link found, statements numbered from 1."""
    engine = FactEngine()
    found: list[FactLink] = []
    for i, t in enumerate(texts):
        found += engine.observe(Statement(f"m_{i + 1}", t, T0 + i * apart, "user", who)).links
    return {(k.source, k.relation, k.target) for k in found}


def updated(*texts: str) -> set[tuple[str, str]]:
    return {(a, b) for a, r, b in links(*texts) if r == "superseded_by"}


def conflicts(*texts: str, apart: timedelta = timedelta(minutes=1)) -> set[frozenset[str]]:
    return {frozenset((a, b)) for a, r, b in links(*texts, apart=apart) if r == "conflicts_with"}


# -- quantities ----------------------------------------------------------------------------


def test_a_rating_out_of_ten_is_a_value_and_a_lower_one_said_changed_updates_it() -> None:
    assert updated(
        "My back pain is bad lately, about 7/10 most evenings.",
        "The stretching routine brought my back pain down to 3/10.",
    ) == {("m_1", "m_2")}


def test_a_rating_said_on_a_date_is_a_day_not_a_rating() -> None:
    assert [q.kind for q in quantities_in("The review is on 6/10 at noon.")] == []


def test_a_rating_of_another_thing_is_not_updated() -> None:
    assert not updated(
        "I would give the new cafe a 6/10.",
        "My sleep quality improved to 8/10 this week.",
    )


def test_a_date_said_moved_needs_one_word_in_common() -> None:
    assert updated(
        "The album release is set for May 2.",
        "Ugh, worried about the release being pushed back to May 20.",
    ) == {("m_1", "m_2")}


def test_a_date_moved_of_another_thing_ends_nothing() -> None:
    assert not updated(
        "My dentist appointment is on May 2.",
        "The album launch got pushed back to May 20.",
    )


def test_from_this_to_that_ends_only_what_held_that_value() -> None:
    # the change names its old value: another value said before is another thing
    assert not updated(
        "I skipped the 2 PM team meeting on Monday.",
        "We are moving the team meeting from 10 AM to 3 PM on Friday.",
    )
    assert updated(
        "Our team meeting is at 10 AM on Fridays.",
        "We are moving the team meeting from 10 AM to 3 PM on Friday.",
    ) == {("m_1", "m_2")}


def test_a_number_with_a_hyphenated_unit_is_a_count() -> None:
    assert [(q.kind, q.value) for q in quantities_in("I keep 2-hour practice slots.")] == [
        ("n:hour", "2")
    ]
    assert updated(
        "I keep 2-hour practice slots on weekdays.",
        "I extended my practice slots to 3 hours.",
    ) == {("m_1", "m_2")}


def test_a_daily_limit_and_a_new_daily_quota_are_one_thing() -> None:
    assert updated(
        "The service gives us a 500 daily request limit.",
        "We got a new daily quota of 800 requests per day.",
    ) == {("m_1", "m_2")}


def test_an_aim_is_not_updated_by_what_holds() -> None:
    # what one spends is not the target one set for it
    assert not updated(
        "I'm trying to cut my grocery spending from $400 to $250 a month.",
        "I reduced my grocery spending to $310 in May.",
    )


def test_reaching_an_aim_updates_the_balance_not_the_aim() -> None:
    assert updated(
        "I've saved $800 in my travel fund so far, toward a $1,500 goal.",
        "My travel fund goal is $1,500 by October.",
        "I just reached my travel fund goal of $1,500!",
    ) == {("m_1", "m_3")}


# -- "I have never…" against what was said done -------------------------------------------


def test_never_against_a_habit_kept_up_is_a_conflict() -> None:
    for habit in (
        "I keep using Notion to plan my week.",
        "I've been using Notion to plan my week since January.",
        "I'll keep using Notion to plan my week, it's simple.",
        "I prefer using Notion to plan my week.",
    ):
        assert conflicts(habit, "I've never used Notion to plan my week.") == {
            frozenset(("m_1", "m_2"))
        }, habit


def test_never_against_a_wish_to_start_is_no_conflict() -> None:
    assert not conflicts(
        "I want to start using Notion to plan my week.",
        "I've never used Notion to plan my week.",
    )
    assert not conflicts(
        "I don't keep using Notion to plan my week.",
        "I've never used Notion to plan my week.",
    )


def test_a_feeling_about_an_act_says_it_was_done() -> None:
    assert conflicts(
        "I feel guilty about skipping the Thursday rehearsal last week.",
        "I've never skipped a rehearsal to rest.",
    ) == {frozenset(("m_1", "m_2"))}


def test_a_feeling_about_an_act_ahead_says_nothing_was_done() -> None:
    assert not conflicts(
        "I'm nervous about skipping the Thursday rehearsal tomorrow.",
        "I've never skipped a rehearsal to rest.",
    )


def test_never_been_to_a_place_keeps_its_place() -> None:
    # "to" after a bare verb is where, not what for: the place must be met
    assert not conflicts("We went to Lisbon in May.", "I have never been to Porto.")


def test_two_people_with_two_values_and_no_change_cue_disagree() -> None:
    engine = FactEngine()
    first = engine.observe(Statement("m_1", "The venue budget is $3,000.", T0, "user", "Ana"))
    second = engine.observe(
        Statement("m_2", "The venue budget is $4,500.", T0 + timedelta(minutes=1), "user", "Ben")
    )
    assert not first.links
    assert {k.relation for k in second.links} == {"conflicts_with"}
