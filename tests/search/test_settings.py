"""The search settings, grouped (issue 38): what a user sets at the top of ``search:``, the
tuning knobs in ``fusion``, ``priors``, ``spread``, ``coverage`` and ``dialogue``; the flat
keys of an older ``config.yaml`` still load, each into its group, to the same values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_notebook.config import (
    FLAT_SEARCH_KEYS,
    NotebookConfig,
    SearchSettings,
    load_config,
    write_config,
)
from agent_notebook.errors import InvalidInput

#: Every flat key of the old ``search:``, each set off its default (within its bounds).
OLD_FLAT: dict[str, Any] = {
    "lexical_weight": 0.7,
    "vector_weight": 0.9,
    "concept_weight": 0.25,
    "rrf_k": 30,
    "fusion_margin_full": 0.5,
    "fusion_agreement": 0.5,
    "fusion_vector_margin": 0.2,
    "fusion_depth": 5,
    "candidates": 50,
    "importance_prior": 0.2,
    "recency_prior": 0.1,
    "recency_half_life_days": 10.0,
    "neighbour_share": 0.1,
    "neighbour_gap_minutes": 5.0,
    "speaker_bonus": 0.2,
    "time_question_bonus": 0.1,
    "reply_share": 0.4,
    "assistant_reply_share": 0.1,
    "assistant_weight": 0.8,
    "concept_max_share": 0.1,
    "content_match": False,
    "latest_turn_weight": 0.5,
    "latest_turns": 2,
    "dialogue_speaker": "me",
    "dialogue_turns": 2,
    "dialogue_lexical_weight": 0.3,
    "dialogue_min_score": 0.1,
    "dialogue_context_weight": 0.2,
    "dialogue_context_turns": 5,
    "long_query_terms": 12,
    "date_weight": 0.5,
    "session_decay": 0.7,
    "session_free": 2,
    "session_share": 0.1,
    "session_best": 4,
    "coverage_gain": 0.5,
    "coverage_window": 30,
    "coverage_idf_power": 1.0,
    "coverage_residual": 0.2,
}


def write(home: Path, search: str) -> None:
    home.mkdir(exist_ok=True)
    (home / "config.yaml").write_text(f"search:\n{search}", encoding="utf-8")


def test_every_flat_key_of_an_old_config_loads_into_its_group(tmp_path: Path) -> None:
    assert OLD_FLAT.keys() == FLAT_SEARCH_KEYS.keys()
    lines = "".join(f"  {key}: {value!r}\n".replace("'", '"') for key, value in OLD_FLAT.items())
    write(tmp_path, "  embedder: none\n  min_score: 0.2\n" + lines)
    search = load_config(tmp_path).search
    assert (search.embedder, search.min_score) == ("none", 0.2)
    for key, value in OLD_FLAT.items():
        group, name = FLAT_SEARCH_KEYS[key]
        assert getattr(getattr(search, group), name) == value, key
    assert SearchSettings(**OLD_FLAT, embedder="none", min_score=0.2) == search
    # written back, it is grouped, and reads the same
    write_config(tmp_path, NotebookConfig(search=search))
    text = (tmp_path / "config.yaml").read_text(encoding="utf-8")
    assert "rrf_k: 30" in text and "coverage:" in text and "session_decay" in text
    assert load_config(tmp_path).search == search


def test_the_grouped_keys_load_and_a_setting_given_both_ways_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "  fusion:\n    rrf_k: 30\n  coverage:\n    session_decay: 0.7\n")
    search = load_config(tmp_path).search
    assert (search.fusion.rrf_k, search.coverage.session_decay) == (30, 0.7)
    assert search.fusion.lexical_weight == SearchSettings().fusion.lexical_weight
    write(tmp_path, "  rrf_k: 10\n  fusion:\n    rrf_k: 30\n")
    with pytest.raises(InvalidInput, match=r"rrf_k and fusion\.rrf_k are the same setting"):
        load_config(tmp_path)


@pytest.mark.parametrize(
    ("search", "message"),
    [
        (
            "  rrf: 30\n",
            "search.rrf: unknown field (valid fields: embedder, min_score, fusion, priors, "
            "spread, coverage, dialogue)",
        ),
        ("  fusion:\n    rrf: 30\n", "search.fusion.rrf: unknown field (valid fields: "),
        ("  rrf_k: 0\n", "search.rrf_k: Input should be greater than or equal to 1"),
        ("  fusion:\n    rrf_k: 0\n", "search.fusion.rrf_k: Input should be greater than"),
    ],
)
def test_a_wrong_key_is_named_as_the_file_wrote_it(
    tmp_path: Path, search: str, message: str
) -> None:
    write(tmp_path, search)
    with pytest.raises(InvalidInput) as refused:
        load_config(tmp_path)
    assert message in str(refused.value) and "config.yaml" in str(refused.value)


def test_the_embedder_is_a_built_in_name_or_a_provider_model_name() -> None:
    """``search.embedder`` (issue 43): the offline names, or LangChain's ``provider:model``."""
    for name in ("default", "minilm", "e5-small", "none", "openai:text-embedding-3-small"):
        assert SearchSettings(embedder=name).embedder == name
    assert SearchSettings(embedder="ollama:nomic-embed-text").embedder.startswith("ollama:")
    for wrong in ("minilm-large", "openai:", ":model", "Open AI:x"):
        with pytest.raises(ValueError, match="provider:model name such as openai:"):
            SearchSettings(embedder=wrong)
