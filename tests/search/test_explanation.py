"""A hit's typed explanation: its fields, and the flat ``name: number`` form it serializes to
(the JSON of the HTTP API, MCP and ``--format json``), in the order search always gave."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from agent_notebook.model import Moment, MomentContent
from agent_notebook.search.explanation import (
    CoverageStep,
    Explanation,
    Gain,
    Mark,
    Prior,
    Signal,
    SignalPart,
)
from agent_notebook.search.hits import SearchHit

FOUND = Explanation(
    relevance=1.0,
    fused=0.1,
    signals={
        Signal.LEXICAL: SignalPart(1, 12.5, 0.6),
        Signal.DATE: SignalPart(1, 1.0, 0.4),
    },
    priors={Prior.IMPORTANCE: 0.95, Prior.SPREAD: 0.7},
    gains={Gain.REPLY: 0.02},
    coverage=CoverageStep(before=3, after=1, added=0.05),
)
FLAT = {
    "relevance": 1.0,
    "fused": 0.1,
    "lexical_share": 0.6,
    "date_share": 0.4,
    "lexical_rank": 1.0,
    "date_rank": 1.0,
    "lexical_raw": 12.5,
    "date_raw": 1.0,
    "importance_prior": 0.95,
    "spread_prior": 0.7,
    "reply_gain": 0.02,
    "coverage_before": 3.0,
    "coverage_move": 2.0,
    "coverage_added": 0.05,
}


def hit(explain: object) -> SearchHit:
    moment = Moment(
        id="m_1",
        session="s_2026-05-20_001",
        timestamp=datetime(2026, 5, 20, tzinfo=UTC),
        content=MomentContent(text="Book the train to Lyon"),
    )
    return SearchHit(moment=moment, score=0.1, explain=explain)  # type: ignore[arg-type]


def test_the_flat_form_has_the_names_and_order_search_always_gave() -> None:
    assert list(FOUND.as_dict().items()) == list(FLAT.items())
    assert FOUND == FLAT and FOUND["date_share"] == 0.4 and "vector_rank" not in FOUND
    assert FOUND.coverage is not None and FOUND.coverage.move == 2
    dumped = hit(FOUND).model_dump_json()
    assert dumped.split('"explain":')[1].startswith(json.dumps(FLAT, separators=(",", ":")))


def test_marks_keep_their_places() -> None:
    """An archived hit's mark comes first, a rollup's last (as they always did)."""
    archived = Explanation(signals={Signal.LEXICAL: SignalPart(2, 3.5)}, marks=(Mark.ARCHIVED,))
    assert list(archived.as_dict()) == ["archived", "lexical_rank", "lexical_raw"]
    assert list(FOUND.with_mark(Mark.ROLLUP).as_dict())[-2:] == ["coverage_added", "rollup"]
    assert Explanation(marks=(Mark.CONFLICT,)) == {"conflict": 1.0}
    assert Explanation() == {} and hit({}).explain == Explanation()


@pytest.mark.parametrize(
    "flat",
    [
        FLAT,
        {"archived": 1.0, "lexical_rank": 2.0, "lexical_raw": 3.5},
        {
            "relevance": 0.4,
            "fused": 0.05,
            "lexical_latest_share": 1.0,
            "lexical_latest_rank": 4.0,
            "lexical_latest_raw": 2.0,
            "neighbours_gain": 0.01,
            "rollup": 1.0,
        },
        {"successor": 1.0},
    ],
)
def test_the_flat_form_reads_back_to_the_same_explanation(flat: dict[str, float]) -> None:
    explained = Explanation.from_mapping(flat)
    assert list(explained.as_dict().items()) == list(flat.items())
    assert SearchHit.model_validate_json(hit(explained).model_dump_json()).explain == explained


def test_a_name_no_explanation_has_is_refused() -> None:
    with pytest.raises(ValidationError, match="'telepathy_share' is not a name"):
        hit({"telepathy_share": 1.0})


def test_the_json_schema_is_a_mapping_of_names_to_numbers() -> None:
    for mode in ("validation", "serialization"):
        schema = SearchHit.model_json_schema(mode=mode)  # type: ignore[arg-type]
        assert schema["properties"]["explain"] == {
            "additionalProperties": {"type": "number"},
            "title": "Explain",
            "type": "object",
        }
