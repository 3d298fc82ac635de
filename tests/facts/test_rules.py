"""The fact rules (issue 30) on the labelled cases of tests/facts/cases.yaml: precision and
recall floors per kind of finding, and the behaviours the issue names, one by one."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest

from agent_notebook.embed import default_embedder
from agent_notebook.facts import FactEngine, Findings, Statement

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _cases_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_facts_cases", BENCH / "_facts_cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["_facts_cases"] = module
    spec.loader.exec_module(module)
    return module


cases = _cases_module()
T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def _embed(texts: Sequence[str]) -> list[list[float]]:
    embedder = default_embedder()
    assert embedder is not None
    return [[float(x) for x in row] for row in embedder.embed_documents(list(texts))]


def _said(*texts: str, vectors: bool = False, role: str = "user") -> list[Findings]:
    rows = _embed(texts) if vectors else [None] * len(texts)
    return FactEngine().observe_all(
        Statement(f"m_{i + 1}", text, T0 + timedelta(days=i), role, "", row)
        for i, (text, row) in enumerate(zip(texts, rows, strict=True))
    )


def _links(findings: list[Findings]) -> set[tuple[str, str, str]]:
    return {(k.source, k.relation, k.target) for f in findings for k in f.links}


@pytest.fixture(scope="module")
def score() -> object:
    embed = _embed if default_embedder() is not None else None
    return cases.score(cases.load_cases(), embed)


def test_the_labelled_cases_are_many_and_half_of_them_near_misses() -> None:
    labelled = cases.load_cases()
    assert len(labelled) >= 60
    assert len({c["id"] for c in labelled}) == len(labelled)
    near_misses = [c for c in labelled if c["id"].startswith("no-")]
    assert len(near_misses) >= 25


def test_precision_and_recall_floors_on_the_labelled_cases(score: object) -> None:
    result = score
    assert isinstance(result, cases.Score)
    assert result.cases >= 60
    for kind, counts in result.counts.items():
        assert counts.tp > 0, kind
        assert counts.precision >= 0.9, (kind, result.wrong)
        assert counts.recall >= 0.8, (kind, result.wrong)
    # Precision first: a false decision is worse than a missed one.
    assert result.counts["decisions"].precision == 1.0, result.wrong
    total = result.total()
    assert total.precision >= 0.95 and total.recall >= 0.9, result.wrong


def test_a_moving_launch_date_marks_each_older_date_superseded_until_the_next() -> None:
    found = _said(
        "The launch is on June 5.",
        "The launch moved to June 12.",
        "Update: the launch date is now June 19.",
    )
    supersessions = [k for f in found for k in f.links if k.relation == "superseded_by"]
    assert [(k.source, k.target) for k in supersessions] == [("m_1", "m_2"), ("m_2", "m_3")]
    assert [k.valid_until for k in supersessions] == [
        T0 + timedelta(days=1),
        T0 + timedelta(days=2),
    ]


def test_other_values_of_many_valued_or_other_subjects_end_nothing() -> None:
    assert not _links(_said("I like coffee.", "I like tea."))
    assert not _links(_said("My dog is 3.", "My cat is 5."))
    assert not _links(_said("Ticket 123 is assigned to Bob.", "Ticket 456 is assigned to Alice."))
    assert not _links(_said("We use Redis for caching.", "We use Kafka, Redis and Postgres."))


@pytest.mark.skipif(default_embedder() is None, reason="no sentence embedder installed")
def test_a_paraphrase_is_folded_and_a_changed_value_is_not() -> None:
    folded = _said(
        "The nightly backup job runs at 2 am on the main database.",
        "On the main database, the nightly backup job runs at 2 am.",
        vectors=True,
    )
    assert _links(folded) == {("m_2", "duplicate_of", "m_1")}
    changed = _said(
        "The nightly backup job runs at 2 am on the main database.",
        "The nightly backup job runs at 3 am on the main database.",
        vectors=True,
    )
    assert not any(r == "duplicate_of" for _, r, _ in _links(changed))


def test_never_then_did_is_a_conflict_on_both_and_no_longer_is_an_update() -> None:
    found = _said("I have never used Docker.", "I used Docker to deploy the blog last week.")
    assert _links(found) == {("m_2", "conflicts_with", "m_1"), ("m_1", "conflicts_with", "m_2")}
    found = _said("We use Jenkins for CI.", "We no longer use Jenkins, it was too slow.")
    assert _links(found) == {("m_1", "superseded_by", "m_2")}


def test_decisions_say_what_why_who_when_and_where_from() -> None:
    engine = FactEngine()
    said = Statement(
        "m_7", "Decision: we go with PostgreSQL because it has JSONB.", T0, "user", "ana"
    )
    (decision,) = engine.observe(said).decisions
    assert (decision.what, decision.why) == ("we go with PostgreSQL", "it has JSONB")
    assert (decision.who, decision.when, decision.source) == ("ana", T0, "m_7")


def test_a_commitment_is_closed_by_the_moment_that_reports_it_done() -> None:
    found = _said("I'll send the report to Ana tomorrow.", "Sent the report to Ana this morning.")
    (item,) = found[0].pending
    assert item.kind == "commitment" and item.source == "m_1"
    (closure,) = found[1].closures
    assert closure.item == item and closure.closed_by == "m_2"


def test_assistant_manners_of_speaking_are_not_threads_decisions_or_facts() -> None:
    found = _said(
        "I'll explain how the cache works. Let's use a dictionary. The total is 5.",
        "The total is 7.",
        role="assistant",
    )
    assert not any(f.pending or f.decisions or f.links for f in found)


def test_expiry_from_the_text_is_midnight_after_the_day_named() -> None:
    (found,) = _said("I'm working from the Berlin office until Friday.")
    assert found.expires == datetime(2026, 6, 6, tzinfo=UTC)
    (found,) = _said("I worked at Acme until 2019.")
    assert found.expires is None


def test_the_engine_is_deterministic() -> None:
    texts = [
        c if isinstance(c, str) else c["text"] for case in cases.load_cases() for c in case["said"]
    ]
    assert _said(*texts) == _said(*texts)
