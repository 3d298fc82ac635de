"""The search plan (issue 29): what a search will do, decided from the query, the options
and the settings alone, without a notebook: which signals run with which weights, which
words each reads, how a dialogue is read, which steps shape the results."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from agent_notebook.config import SearchSettings
from agent_notebook.core.lexical import stem
from agent_notebook.search.explanation import Signal
from agent_notebook.search.hybrid import MEDIA_WEIGHT
from agent_notebook.search.plan import SearchPlan, VectorQuery, plan_search
from agent_notebook.search.request import SearchRequest
from agent_notebook.storage import MomentFilter

DEFAULTS = SearchSettings()
QUESTION = "What is Ana's door code?"
DIALOGUE = "\n".join(
    [
        "User: We finally took the night ferry to the islands last week.",
        "Assistant: That sounds lovely. What was the best part of the crossing?",
        "User: Watching dolphins in the wake at midnight, I felt so calm.",
    ]
)


def plan(
    query: str = QUESTION,
    *,
    semantic: bool = True,
    settings: SearchSettings = DEFAULTS,
    **options: object,
) -> SearchPlan:
    request = SearchRequest(query, MomentFilter(), **{"limit": 10, **options})  # type: ignore[arg-type]
    return plan_search(request, settings, semantic)


def test_a_question_runs_every_word_signal_and_its_content_words_judge_relevance() -> None:
    p = plan(min_score=0.3)
    assert p.signals == (Signal.LEXICAL, Signal.VECTOR, Signal.CONCEPT, Signal.DATE)
    assert dict(p.weights) == {
        Signal.LEXICAL: DEFAULTS.fusion.lexical_weight,
        Signal.LEXICAL_LATEST: DEFAULTS.fusion.lexical_weight
        * DEFAULTS.dialogue.latest_turn_weight,
        Signal.VECTOR: DEFAULTS.fusion.vector_weight,
        Signal.CONCEPT: DEFAULTS.fusion.concept_weight,
        Signal.DATE: DEFAULTS.fusion.date_weight,
        Signal.MEDIA: MEDIA_WEIGHT,
    }
    assert p.words and p.priors and p.session_evidence and p.spread_to_neighbours
    assert (p.spoken, p.latest, p.said) == (QUESTION, None, None)
    # "what", "is" and the stray "s" are stopwords: the other words are looked up apart
    assert p.content_query == "ana door code"
    assert p.judge_relevance and p.request.min_score == 0.3
    assert p.vector == VectorQuery(QUESTION, None, DEFAULTS.dialogue.latest_turn_weight)
    # beside a vector signal, a match on stopwords alone stays in the lexical ranking
    assert not p.lexical_by_content
    assert p.name_speakers
    assert p.aspects == tuple(stem(w) for w in ("ana", "door", "code"))
    assert p.shown == DEFAULTS.coverage.window  # the coverage step reads its whole window
    assert p.pool == DEFAULTS.fusion.candidates


def test_without_an_embedder_words_judge_and_stopword_matches_are_dropped() -> None:
    assert plan(semantic=False).signals == (Signal.LEXICAL, Signal.CONCEPT, Signal.DATE)
    assert plan(mode="lexical").signals == (Signal.LEXICAL, Signal.DATE)
    for p in (plan(semantic=False), plan(mode="lexical")):
        assert p.vector is None
        assert p.lexical_by_content
        assert p.content_query == "ana door code"  # wanted to drop stopword-only matches
    assert plan(mode="lexical").weights[Signal.LEXICAL] == 1.0  # alone, at full weight
    assert plan(semantic=False).weights[Signal.LEXICAL] == DEFAULTS.fusion.lexical_weight


def test_content_lookups_by_the_words_of_the_query() -> None:
    assert plan("door code", min_score=0.3).content_query is None  # the ranking is the list
    stopwords_only = plan("what is it", mode="lexical")
    assert stopwords_only.content_query == ""  # no moment can have another word
    assert not stopwords_only.lexical_by_content  # nothing else to match by: keep them
    # no relevance cut and a vector signal beside: no list is needed
    assert plan(QUESTION, min_score=0.0).content_query is None
    assert not plan(QUESTION, min_score=0.0).judge_relevance


def test_vector_mode_runs_the_vector_signal_alone_at_full_weight() -> None:
    p = plan(mode="vector")
    assert p.signals == (Signal.VECTOR,)
    assert p.weights[Signal.VECTOR] == 1.0
    assert not p.spread_to_neighbours


def test_a_query_of_several_lines_ranks_its_latest_turn_on_its_own() -> None:
    query = "We talked about the budget.\nThen Priya asked about the Lyon hotel refund"
    p = plan(query, min_score=0.3)
    assert p.latest == "Then Priya asked about the Lyon hotel refund"
    assert p.said is None
    assert p.signals == (
        Signal.LEXICAL,
        Signal.LEXICAL_LATEST,
        Signal.VECTOR,
        Signal.CONCEPT,
        Signal.DATE,
    )
    assert p.latest_content_query == "priya asked lyon hotel refund"
    assert p.vector == VectorQuery(query, p.latest, DEFAULTS.dialogue.latest_turn_weight)
    # a dialogue's lines name their speakers; no aspects of a question either
    assert not p.name_speakers and p.aspects == () and p.shown == 10
    no_latest = plan(query, settings=SearchSettings(latest_turn_weight=0.0))
    assert Signal.LEXICAL_LATEST not in no_latest.signals


def test_a_dialogue_is_read_by_what_the_user_said_lately() -> None:
    p = plan(DIALOGUE, min_score=0.3)
    assert p.said is not None and "dolphins" in p.said and "ferry" in p.said
    assert "crossing" not in p.said  # the assistant's turn is context, not what was said
    assert p.request.min_score == DEFAULTS.dialogue.min_score  # lowered for a dialogue
    assert p.signals == (
        Signal.VECTOR,
        Signal.CONCEPT,
        Signal.DATE,
    )  # dialogue_lexical_weight 0: no words
    assert p.weights[Signal.LEXICAL] == 0.0
    assert p.content_query == ""  # read by meaning: sharing ordinary words is no match
    assert p.vector is not None
    assert p.vector.text == p.said
    assert p.vector.latest is not None and "crossing" in p.vector.latest
    assert p.vector.latest_weight == DEFAULTS.dialogue.context_weight
    assert p.spoken.splitlines()[0] == "We finally took the night ferry to the islands last week."
    # the dialogue's tags are cut from what the lexical signal reads
    weighed = plan(DIALOGUE, settings=SearchSettings(dialogue_lexical_weight=0.5))
    assert weighed.signals[:2] == (Signal.LEXICAL, Signal.LEXICAL_LATEST)
    assert weighed.weights[Signal.LEXICAL] == 0.5 * DEFAULTS.fusion.lexical_weight
    unweighed_context = plan(DIALOGUE, settings=SearchSettings(dialogue_context_weight=0.0))
    assert unweighed_context.vector == VectorQuery(p.said, None, 0.0)


def test_without_an_embedder_a_dialogue_is_searched_by_its_words() -> None:
    p = plan(DIALOGUE, semantic=False, min_score=0.3)
    assert p.said is not None
    assert p.signals == (Signal.LEXICAL, Signal.LEXICAL_LATEST, Signal.CONCEPT, Signal.DATE)
    assert p.weights[Signal.LEXICAL] == DEFAULTS.fusion.lexical_weight
    assert p.content_query not in ("", None)


def test_a_dialogue_long_query_weighs_its_words_less_and_drops_its_stopwords() -> None:
    words = [f"topic{i}" for i in range(40)]
    query = "the " + " and the ".join(words)
    p = plan(query)
    assert p.weights[Signal.LEXICAL] == pytest.approx(DEFAULTS.dialogue.long_query_terms / 40)
    assert p.spoken == " ".join(words)
    assert p.aspects == ()  # a long query is not a list of things asked
    assert plan(query, settings=SearchSettings(long_query_terms=0)).weights[Signal.LEXICAL] == 1.0


def test_an_example_alone_is_ranked_by_the_media_signal_without_priors() -> None:
    p = plan("", example="image:abc", min_score=0.3)
    assert p.signals == (Signal.MEDIA,)
    assert not (p.words or p.priors or p.session_evidence or p.judge_relevance)
    assert p.vector is None and p.aspects == ()
    with_words = plan("harbour slides", example="image:abc")
    assert with_words.signals == (
        Signal.LEXICAL,
        Signal.VECTOR,
        Signal.CONCEPT,
        Signal.DATE,
        Signal.MEDIA,
    )


def test_settings_turn_steps_on_and_off() -> None:
    assert not plan().spread_sessions
    assert plan(settings=SearchSettings(session_decay=0.7)).spread_sessions
    no_cover = plan(settings=SearchSettings(coverage_gain=0.0))
    # (a one-line question still loads the best coverage.window: its reading, issue 42)
    assert no_cover.aspects == () and no_cover.shown == 20
    assert not plan(settings=SearchSettings(speaker_bonus=0.0)).name_speakers
    assert Signal.DATE not in plan(settings=SearchSettings(date_weight=0.0)).signals


def test_the_pool_covers_a_large_limit_and_the_excluded() -> None:
    assert plan(limit=90, exclude={"m_1", "m_2", "m_3", "m_4", "m_5", "m_6"}).pool == 100
    assert plan(limit=98, exclude={"m_1", "m_2", "m_3", "m_4"}).pool == 102
    assert plan(limit=200).shown == 200


def test_a_plan_is_frozen_and_made_without_io() -> None:
    request = SearchRequest(QUESTION, MomentFilter(speaker="ana"), 5, now=datetime.now(UTC))
    p = plan_search(request, DEFAULTS, True)
    assert p == plan_search(request, DEFAULTS, True)  # the same request, the same plan
    assert p.request == request and p.limit == 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.pool = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        p.weights[Signal.LEXICAL] = 2.0  # type: ignore[index]
