"""Per-query fusion weights (issue 31 item 2): the lexical weight scaled by the lexical
signal's own evidence, its score margin and its agreement with the vector signal. Made-up
score lists, and one small notebook on a real backend."""

from __future__ import annotations

import pytest

from agent_notebook.config import SearchSettings
from agent_notebook.search.explanation import Signal
from agent_notebook.search.hybrid import evidence_weights, margin, overlap

WEIGHTS = {Signal.LEXICAL: 1.0, Signal.VECTOR: 1.0, Signal.CONCEPT: 0.5}


def hits(prefix: str, scores: list[float]) -> list[tuple[str, float]]:
    return [(f"{prefix}{i}", s) for i, s in enumerate(scores)]


def test_margin_is_relative_and_bounded() -> None:
    assert margin([10.0, 8.0, 5.0], depth=3) == pytest.approx(0.5)
    # the same shape at another scale (another backend's BM25) reads alike
    assert margin([1.0, 0.8, 0.5], depth=3) == pytest.approx(0.5)
    assert margin([4.0, 4.0, 4.0, 4.0], depth=3) == 0.0  # flat: nothing stands out
    assert margin([4.0, 1.0], depth=10) == pytest.approx(0.75)  # fewer hits: the last
    assert margin([4.0], depth=10) == 0.0
    assert margin([], depth=10) == 0.0
    assert margin([0.0, 0.0], depth=2) == 0.0


def test_overlap_counts_the_shared_head() -> None:
    assert overlap(["a", "b", "c", "d"], ["d", "c", "x", "y"], depth=4) == pytest.approx(0.5)
    assert overlap(["a", "b"], ["x", "y"], depth=2) == 0.0
    assert overlap(["a", "b", "c"], ["c", "x", "y", "b"], depth=3) == pytest.approx(1 / 3)
    assert overlap([], ["a"], depth=3) == 0.0


def test_defaults_keep_the_fixed_weights() -> None:
    ranked = {Signal.LEXICAL: hits("l", [5.0, 5.0, 5.0]), Signal.VECTOR: hits("v", [0.5, 0.4])}
    assert evidence_weights(WEIGHTS, ranked, SearchSettings()) == WEIGHTS


def test_a_flat_lexical_list_weighs_less_than_a_peaked_one() -> None:
    settings = SearchSettings(fusion_margin_full=0.5, fusion_depth=3)
    vector = hits("v", [0.6, 0.5, 0.4])
    flat = evidence_weights(
        WEIGHTS, {Signal.LEXICAL: hits("l", [5.0, 4.5, 4.0]), Signal.VECTOR: vector}, settings
    )
    peaked = evidence_weights(
        WEIGHTS, {Signal.LEXICAL: hits("l", [9.0, 3.0, 2.0]), Signal.VECTOR: vector}, settings
    )
    assert flat[Signal.LEXICAL] == pytest.approx(0.4)  # margin 0.2 of the 0.5 that is full weight
    assert peaked[Signal.LEXICAL] == 1.0  # margin 0.78: full weight, never more
    assert flat[Signal.VECTOR] == peaked[Signal.VECTOR] == 1.0
    assert flat[Signal.CONCEPT] == 0.5


def test_a_lexical_head_the_vector_signal_does_not_share_weighs_less() -> None:
    settings = SearchSettings(fusion_agreement=0.5, fusion_depth=2)
    lexical = [("a", 3.0), ("b", 2.0)]
    agreeing = evidence_weights(
        WEIGHTS, {Signal.LEXICAL: lexical, Signal.VECTOR: [("b", 0.7), ("a", 0.6)]}, settings
    )
    half = evidence_weights(
        WEIGHTS, {Signal.LEXICAL: lexical, Signal.VECTOR: [("a", 0.7), ("x", 0.6)]}, settings
    )
    apart = evidence_weights(
        WEIGHTS, {Signal.LEXICAL: lexical, Signal.VECTOR: [("x", 0.7), ("y", 0.6)]}, settings
    )
    assert agreeing[Signal.LEXICAL] == 1.0
    assert half[Signal.LEXICAL] == pytest.approx(0.75)
    assert apart[Signal.LEXICAL] == pytest.approx(0.5)


def test_without_a_vector_signal_the_lexical_weight_stands() -> None:
    settings = SearchSettings(fusion_margin_full=0.8, fusion_agreement=1.0)
    flat = hits("l", [5.0, 5.0, 5.0])
    assert evidence_weights(WEIGHTS, {Signal.LEXICAL: flat}, settings)[Signal.LEXICAL] == 1.0
    assert (
        evidence_weights(WEIGHTS, {Signal.LEXICAL: flat, Signal.VECTOR: []}, settings)[
            Signal.LEXICAL
        ]
        == 1.0
    )


def test_agreement_counts_only_where_the_vector_signal_is_sure() -> None:
    settings = SearchSettings(fusion_agreement=1.0, fusion_vector_margin=0.3, fusion_depth=2)
    lexical = [("a", 3.0), ("b", 2.0)]
    unsure = evidence_weights(
        WEIGHTS, {Signal.LEXICAL: lexical, Signal.VECTOR: [("x", 0.50), ("y", 0.45)]}, settings
    )
    sure = evidence_weights(
        WEIGHTS, {Signal.LEXICAL: lexical, Signal.VECTOR: [("x", 0.8), ("y", 0.4)]}, settings
    )
    assert unsure[Signal.LEXICAL] == 1.0  # vector margin 0.1: its disagreement says nothing
    assert sure[Signal.LEXICAL] == 0.0  # vector margin 0.5, nothing shared
