"""Chat as people write it (issue 39, item 2), as minimal pairs: the phrasing families the
rules read, each beside a near miss that must yield nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_notebook.facts import FactEngine, Statement

T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def opened(text: str) -> list[str]:
    found = FactEngine().observe(Statement("m_1", text, T0, "user", "Ana"))
    return [p.what for p in found.pending]


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("We still need to book the venue.", "book the venue"),
        ("Remind me to call Dad on Sunday.", "call Dad on Sunday"),
        ("Don't forget to bring the cake!", "bring the cake"),
        ("Someone needs to tell Raj about the date.", "tell Raj about the date"),
        ("Oh and I have to renew my passport.", "renew my passport"),
    ],
)
def test_an_obligation_or_a_reminder_opens_an_item(text: str, what: str) -> None:
    assert [w.casefold() for w in opened(text)] == [what.casefold()]


@pytest.mark.parametrize(
    "text",
    [
        "We don't need to book anything.",
        "I never have to wait long there.",
        "I need to be honest with you.",
        "If we need to book, I'll do it.",
    ],
)
def test_a_near_miss_opens_nothing(text: str) -> None:
    assert opened(text) == []


def links(*texts: str) -> set[tuple[str, str, str]]:
    engine = FactEngine()
    found = [
        engine.observe(Statement(f"m_{i + 1}", t, T0.replace(day=1 + i), "user", "Ana"))
        for i, t in enumerate(texts)
    ]
    return {(k.source, k.relation, k.target) for f in found for k in f.links}


@pytest.mark.parametrize(
    ("first", "later"),
    [
        ("Door code is 4471.", "Door code changed to 9902."),
        ("My number is 555-0100.", "New number: 555-0199"),
        ("The party is on Friday.", "Change of plan: the party is on Saturday."),
        ("Kickoff is Wednesday at 10.", "Kickoff moved to Monday at 10."),
        ("The budget is $50,000.", "The budget is now $80,000."),
    ],
)
def test_a_new_value_said_the_way_people_chat_ends_the_old_one(first: str, later: str) -> None:
    assert ("m_1", "superseded_by", "m_2") in links(first, later)


@pytest.mark.parametrize(
    ("first", "later"),
    [
        ("The budget is $50,000.", "The budget is $50,000 in total."),  # thousands kept whole
        ("It is 5pm.", "It is 6pm."),  # a pronoun names nothing to keep
        ("Life is good.", "Life is hard."),
    ],
)
def test_no_update_where_nothing_changed_or_nothing_is_named(first: str, later: str) -> None:
    assert not any(r == "superseded_by" for _, r, _ in links(first, later))


def test_a_different_weekday_is_never_a_paraphrase() -> None:
    engine = FactEngine()
    vector = [1.0, 0.0]
    for i, text in enumerate(
        ["Kickoff Wednesday at 10 in room B", "Kickoff Monday at 10 in room B"]
    ):
        found = engine.observe(Statement(f"m_{i + 1}", text, T0, "user", "Ana", vector))
    assert not any(k.relation == "duplicate_of" for k in found.links)


def decided(text: str) -> list[str]:
    found = FactEngine().observe(Statement("m_1", text, T0, "user", "Ana"))
    return [d.what for d in found.decisions]


@pytest.mark.parametrize(
    ("text", "what"),
    [
        (
            "I'm stressed about the cost, but I chose Adobe to save time, was that a good call?",
            "Adobe to save time",
        ),
        ("The trial ended, so I'm gonna stick with Excel for budgeting.", "Excel for budgeting"),
        ("I think I'll go with the train.", "the train"),
        (
            "I approved the extra $100 for June, how do I keep track?",
            "approved the extra $100 for June",
        ),
    ],
)
def test_a_decision_inside_a_run_on_sentence_is_read(text: str, what: str) -> None:
    assert decided(text) == [what]


@pytest.mark.parametrize(
    "text",
    [
        "Let's keep going, you're doing great!",
        "Was choosing Adobe a good call?",
        "If I chose Adobe, would it pay off?",
    ],
)
def test_a_cheer_or_a_question_decides_nothing(text: str) -> None:
    assert decided(text) == []


def test_a_models_recap_closes_no_task_but_its_own_report_does() -> None:
    for reply, closed in (
        ("You're welcome! Here's a quick recap: book the venue, then the cake.", False),
        ("Done: I've booked the venue for Saturday.", True),
    ):
        engine = FactEngine()
        engine.observe(Statement("m_1", "Remind me to book the venue.", T0, "user", "Ana"))
        found = engine.observe(Statement("m_2", reply, T0, "assistant"))
        assert bool(found.closures) is closed, reply


def test_a_choice_left_open_is_an_item_a_decision_on_it_closes() -> None:
    engine = FactEngine()
    engine.observe(
        Statement("m_1", "Alan invited me to the gala on March 22, should I go?", T0, "user", "Ana")
    )
    found = engine.observe(Statement("m_2", "I think I'll go to the gala.", T0, "user", "Ana"))
    assert found.decisions and found.closures


def test_no_expiry_from_a_models_words_and_a_year_given_is_kept() -> None:
    from agent_notebook.facts.expiry import expires_from_text

    engine = FactEngine()
    said = engine.observe(
        Statement("m_1", "The deadline is approaching, until June 30!", T0, "assistant")
    )
    assert said.expires is None
    end = expires_from_text("The offer runs until December 31, 2027.", T0)
    assert end is not None and end.date().isoformat() == "2028-01-01"


def test_it_is_the_thing_just_spoken_of() -> None:
    found = links("The offsite is in the Thames room.", "Actually we moved it to the Severn room.")
    assert ("m_1", "superseded_by", "m_2") in found


def test_it_with_nothing_spoken_of_before_claims_nothing() -> None:
    assert links("Good morning!", "Actually we moved it to the Severn room.") == set()


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("Agreed, Casa Lucia it is!", "Casa Lucia"),
        ("OK, decided: we fly on Friday.", "we fly on Friday"),
        ("Final answer: the blue logo.", "the blue logo"),
    ],
)
def test_an_agreement_in_few_words_is_a_decision(text: str, what: str) -> None:
    assert decided(text) == [what]


@pytest.mark.parametrize("text", ["That is what it is.", "Here it is.", "So be it."])
def test_it_is_alone_decides_nothing(text: str) -> None:
    assert decided(text) == []


def test_a_tick_says_a_task_is_done() -> None:
    engine = FactEngine()
    engine.observe(Statement("m_1", "Remind me to book the venue.", T0, "user", "Ana"))
    assert engine.observe(Statement("m_2", "Venue booked \u2705", T0, "user", "Ana")).closures


def test_a_date_is_no_count() -> None:
    from agent_notebook.facts.claims import claims_in

    counts = [
        (c.head, c.value)
        for c in claims_in("We fly on 7 June and I have 3 bags.")
        if c.attribute == "count"
    ]
    assert counts == [("bag", "3")]
