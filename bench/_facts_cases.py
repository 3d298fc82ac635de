"""The labelled cases of the fact rules (tests/facts/cases.yaml), run and scored: per kind
of finding, true positives, false positives and misses, and what each case got wrong.
Shared by bench/facts_beam.py and tests/facts/test_rules.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from agent_notebook.facts import FactEngine, Findings, Statement

CASES = Path(__file__).resolve().parent.parent / "tests" / "facts" / "cases.yaml"
START = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)  # a Monday
KINDS = (
    "decisions",
    "pending",
    "closures",
    "duplicates",
    "supersession",
    "contradictions",
    "expiry",
)
Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


@dataclass
class Score:
    counts: dict[str, Counts] = field(default_factory=lambda: {k: Counts() for k in KINDS})
    wrong: list[str] = field(default_factory=list)
    cases: int = 0

    def total(self) -> Counts:
        return Counts(
            *(sum(getattr(c, f) for c in self.counts.values()) for f in ("tp", "fp", "fn"))
        )


def load_cases(path: Path = CASES) -> list[dict[str, Any]]:
    cases = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(cases, list)
    return cases


def statements_of(case: dict[str, Any], embed: Embed | None) -> list[Statement]:
    said = [s if isinstance(s, dict) else {"text": s} for s in case["said"]]
    vectors: Sequence[Sequence[float] | None] = [None] * len(said)
    if case.get("vectors") and embed is not None:
        vectors = embed([s["text"] for s in said])
    return [
        Statement(
            str(i + 1),
            s["text"],
            START + timedelta(hours=i),
            s.get("role", "user"),
            s.get("speaker", ""),
            None if v is None else list(v),
        )
        for i, (s, v) in enumerate(zip(said, vectors, strict=True))
    ]


def score(cases: list[dict[str, Any]], embed: Embed | None = None) -> Score:
    result = Score()
    for case in cases:
        if case.get("vectors") and embed is None:
            continue
        result.cases += 1
        findings = FactEngine().observe_all(statements_of(case, embed))
        _score_case(case, findings, result)
    return result


def _score_case(case: dict[str, Any], findings: list[Findings], result: Score) -> None:
    found_decisions = [d.what for f in findings for d in f.decisions]
    _match_words(case["id"], "decisions", found_decisions, case.get("decisions", []), result)
    found_pending = [f"{p.kind}: {p.what}" for f in findings for p in f.pending]
    wanted_pending = [f"{kind}: {words}" for kind, words in case.get("pending", [])]
    _match_words(case["id"], "pending", found_pending, wanted_pending, result)
    closures = {(c.item.source, c.closed_by) for f in findings for c in f.closures}
    _match_set(
        case["id"],
        "closures",
        closures,
        {(str(a), str(b)) for a, b in case.get("closed", [])},
        result,
    )
    links = [(k.source, k.relation, k.target) for f in findings for k in f.links]
    wanted = [(str(a), r, str(b)) for a, r, b in case.get("links", [])]
    for relation, kind in (("duplicate_of", "duplicates"), ("superseded_by", "supersession")):
        _match_set(
            case["id"],
            kind,
            {x for x in links if x[1] == relation},
            {x for x in wanted if x[1] == relation},
            result,
        )
    pairs = {frozenset((a, b)) for a, r, b in links if r == "conflicts_with"}
    _match_set(
        case["id"],
        "contradictions",
        pairs,
        {frozenset((a, b)) for a, r, b in wanted if r == "conflicts_with"},
        result,
    )
    expiries = {(f.statement, f.expires) for f in findings if f.expires is not None}
    wanted_expiry = {(str(i), date.fromisoformat(d)) for i, d in case.get("expires", [])}
    got = {(i, _day_of(e)) for i, e in expiries}
    _match_set(case["id"], "expiry", got, wanted_expiry, result)


def _day_of(expires: datetime) -> date:
    """The last day an expiry covers: midnight after day D is D."""
    return (expires - timedelta(microseconds=1)).date()


def _match_words(case: str, kind: str, found: list[str], wanted: list[str], result: Score) -> None:
    left = list(wanted)
    counts = result.counts[kind]
    for item in found:
        hit = next((w for w in left if w.casefold() in item.casefold()), None)
        if hit is None:
            counts.fp += 1
            result.wrong.append(f"{case}: false {kind}: {item!r}")
        else:
            left.remove(hit)
            counts.tp += 1
    counts.fn += len(left)
    result.wrong += [f"{case}: missed {kind}: {w!r}" for w in left]


def _match_set(case: str, kind: str, found: set[Any], wanted: set[Any], result: Score) -> None:
    counts = result.counts[kind]
    counts.tp += len(found & wanted)
    counts.fp += len(found - wanted)
    counts.fn += len(wanted - found)
    result.wrong += [
        f"{case}: false {kind}: {sorted(map(str, x)) if isinstance(x, frozenset) else x}"
        for x in found - wanted
    ]
    result.wrong += [
        f"{case}: missed {kind}: {sorted(map(str, x)) if isinstance(x, frozenset) else x}"
        for x in wanted - found
    ]
