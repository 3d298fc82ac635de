"""Model-free enrichment: concepts, retrieval keys and importance from a moment's text."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_notebook.core.enrich import (
    BASE_IMPORTANCE,
    MAX_CONCEPTS,
    MAX_RETRIEVAL_KEYS,
    Enrichment,
    enrich,
)
from agent_notebook.model import MomentMetadata, normalize_concept

CODE = (
    "Let's move the auth check into auth/middleware.py:42 and call verify_token() "
    "before the handler"
)
LOCOMO = "Caroline went to the LGBTQ support group on 7 May 2023"
DECISION = "We decided: the deadline is Friday and we must always run the migration first."


def test_constants() -> None:
    assert (MAX_CONCEPTS, MAX_RETRIEVAL_KEYS, BASE_IMPORTANCE) == (8, 16, 0.3)


def test_enrichment_is_a_frozen_value() -> None:
    e = enrich(LOCOMO)
    assert isinstance(e, Enrichment)
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.importance = 1.0  # type: ignore[misc]


def test_code_identifiers_become_retrieval_keys() -> None:
    e = enrich(CODE)
    assert "auth/middleware.py:42" in e.retrieval_keys
    assert "verify_token" in e.retrieval_keys
    assert "auth check" in e.concepts
    # Keys are cut out of the text before phrases are found: no fragment of them is a concept.
    assert not any("middleware" in c or "verify" in c for c in e.concepts)
    assert "let's" not in e.concepts and "let" not in e.concepts


def test_named_things_and_key_phrases() -> None:
    e = enrich(LOCOMO)
    assert "caroline" in e.concepts
    assert any("lgbtq support group" in c for c in e.concepts)
    assert "caroline" in e.retrieval_keys
    assert "2023-05-07" in e.retrieval_keys  # a full date becomes ISO


def test_multi_word_names_with_connectors_and_titles() -> None:
    e = enrich(
        "Hey Melanie! I went to the Museum of Modern Art in New York. Dr. Smith was there too."
    )
    assert e.concepts[:3] == ["melanie", "museum of modern art", "new york"]
    assert "smith" in e.concepts
    assert not {"hey", "dr", "i", "dr. smith"} & set(e.concepts)


def test_pronoun_i_and_sentence_initial_stopwords_are_never_named() -> None:
    e = enrich("I think I told Bob. The weather was fine. Thanks, I will.")
    assert "bob" in e.retrieval_keys
    assert not {"i", "the", "thanks", "the weather"} & set(e.retrieval_keys)
    assert "weather" in e.concepts


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("see https://example.com/a?b=1.", "https://example.com/a?b=1"),
        ("mail Bob@Example.org today", "bob@example.org"),
        ("ticket ABC-123 is open", "abc-123"),
        ("moment m_12 was wrong", "m_12"),
        ("the SessionStore class", "sessionstore"),
        ("use os.path.join here", "os.path.join"),
        ("upgrade to 1.2.3 now", "1.2.3"),
        ("it costs $5,000 a year", "$5,000"),
        ("about 40% of runs", "40%"),
        ("latency went to 250ms", "250 ms"),
        ("meet on May 3rd, 2024", "2024-05-03"),
        ("back in June 2023", "2023-06"),
        ("at 1:56 pm on the day", "1:56pm"),
        ("read ~/notes/todo.md", "~/notes/todo.md"),
    ],
)
def test_exact_keys(text: str, key: str) -> None:
    assert key in enrich(text).retrieval_keys


def test_words_that_only_look_like_keys_are_not_keys() -> None:
    keys = enrich("on the 2nd, e.g. read and/or write in the 1990s").retrieval_keys
    assert not {"2nd", "e.g", "and/or", "1990s"} & set(keys)


def test_decisions_outrank_chit_chat() -> None:
    assert enrich(DECISION).importance > BASE_IMPORTANCE > enrich("ok thanks").importance
    assert enrich("lol").importance < BASE_IMPORTANCE


def test_corrections_by_the_user_raise_importance() -> None:
    plain = "use the staging database for the report"
    corrected = "No, that's wrong: use the staging database for the report instead"
    assert enrich(corrected).importance > enrich(plain).importance
    assert (
        enrich(corrected, role="user").importance > enrich(corrected, role="assistant").importance
    )


def test_actions_and_identifiers_raise_importance() -> None:
    text = "I looked at the parser"
    assert enrich(text, has_actions=True).importance > enrich(text).importance
    assert enrich(text + " in src/parse.py:10").importance > enrich(text).importance


def test_system_and_tool_roles_stay_moderate() -> None:
    user = enrich(DECISION).importance
    for role in ("system", "tool"):
        quiet = enrich(DECISION, role=role).importance
        assert BASE_IMPORTANCE < quiet < user


@pytest.mark.parametrize("text", ["", "   ", "\n\t ", "😀😀", "..."])
def test_empty_text(text: str) -> None:
    e = enrich(text)
    assert e.concepts == [] and e.retrieval_keys == []
    assert 0.0 <= e.importance <= BASE_IMPORTANCE
    assert enrich(text, has_actions=True).importance <= BASE_IMPORTANCE


def test_limits_on_long_text() -> None:
    text = " ".join(
        f"Person{i} Alpha{i} met Team Bravo{i} about widget_{i} and gadget{i} pricing."
        for i in range(50)
    )
    e = enrich(text * 3)
    assert len(e.concepts) == MAX_CONCEPTS
    assert len(e.retrieval_keys) == MAX_RETRIEVAL_KEYS
    assert e.importance <= 1.0


def test_deterministic() -> None:
    for text in (CODE, LOCOMO, DECISION, "ok"):
        assert enrich(text) == enrich(text)
        assert enrich(text, role="tool", has_actions=True) == enrich(
            text, role="tool", has_actions=True
        )


@pytest.mark.parametrize(
    "text",
    [
        "我今天去了商店\uff0c买了苹果。",
        "emoji 🎉🔥 party at Café Zoë",
        "control \x00\x07\x1b[31m chars\r\n",
        "lone surrogate \ud800 here",
        "\uff34\uff4f\uff4b\uff59\uff4f (fullwidth) and \ufb01 ligature",
        "'s ' - -- .. // :: __ () $ % #",
    ],
)
def test_any_unicode_works(text: str) -> None:
    e = enrich(text)
    assert all(c == normalize_concept(c) and c for c in e.concepts)
    assert 0.0 <= e.importance <= 1.0


def test_output_is_accepted_by_moment_metadata() -> None:
    e = enrich(LOCOMO + ". " + CODE)
    meta = MomentMetadata(
        concepts=e.concepts, retrieval_keys=e.retrieval_keys, importance=e.importance
    )
    assert meta.concepts == e.concepts


@settings(max_examples=300)
@given(
    text=st.text(max_size=400),
    role=st.sampled_from(["user", "assistant", "system", "tool", "Caroline"]),
    has_actions=st.booleans(),
)
def test_any_text_gives_normalised_values_within_limits(
    text: str, role: str, has_actions: bool
) -> None:
    e = enrich(text, role=role, has_actions=has_actions)
    assert 0.0 <= e.importance <= 1.0 and round(e.importance, 2) == e.importance
    assert len(e.concepts) <= MAX_CONCEPTS and len(e.retrieval_keys) <= MAX_RETRIEVAL_KEYS
    assert len(set(e.concepts)) == len(e.concepts)
    assert len(set(e.retrieval_keys)) == len(e.retrieval_keys)
    for value in e.concepts + e.retrieval_keys:
        assert value and value == normalize_concept(value)
    assert enrich(text, role=role, has_actions=has_actions) == e
    if not text.strip():
        assert e.concepts == [] and e.retrieval_keys == [] and e.importance <= BASE_IMPORTANCE


NAMES = ["Alice", "Bob", "NASA", "Paris", "Museum of Modern Art", "Jean de Florette"]


@given(st.lists(st.sampled_from(NAMES), min_size=1, max_size=6))
def test_every_named_thing_is_a_retrieval_key(names: list[str]) -> None:
    e = enrich(" and later met ".join(names) + ".")
    for name in names:
        assert normalize_concept(name) in e.retrieval_keys
