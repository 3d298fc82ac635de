"""What found a search hit and what moved it, typed: the names of the signals, priors,
gains and marks (:class:`Signal`, :class:`Prior`, :class:`Gain`, :class:`Mark`) and a hit's
:class:`Explanation`.

An explanation serializes (HTTP, MCP, ``--format json``) to the flat mapping of names to
numbers that search has always returned, in its order::

    archived                      1.0, a hit from the cold archive
    relevance                     0 to 1 (see ``min_score``), when judged
    fused                         the fused score before the priors
    <signal>_share                each signal's share of the fused score
    <signal>_rank, <signal>_raw   its rank in that signal (1 = best) and raw score
    <prior>_prior                 each prior's factor
    <gain>_gain                   the score other hits passed to it
    coverage_before, coverage_move, coverage_added    what the query coverage step did
    rollup, successor, conflict   1.0: what the hit is besides found
    own_score                     the score it had before it was placed just below the
                                  later moment that ended it (superseded)

Only this module reads or writes those names; the front ends read the typed fields.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

__all__ = ["CoverageStep", "Explanation", "Gain", "Mark", "Prior", "Signal", "SignalPart"]


class Signal(StrEnum):
    """What finds a moment: each signal ranks its own candidates, and the ranks are fused
    (weighted reciprocal rank fusion; see :mod:`.hybrid`)."""

    #: BM25 over the query's words.
    LEXICAL = "lexical"
    #: The lexical ranking of a long query's last turns alone.
    LEXICAL_LATEST = "lexical_latest"
    #: Similarity of meaning (the embedder's vectors).
    VECTOR = "vector"
    #: The query's concepts and identifiers, rarer ones weighing more.
    CONCEPT = "concept"
    #: Moments said on a day or in a month the query names (each counts as ranked first).
    DATE = "date"
    #: Search by example: stored image or audio signatures ranked by distance.
    MEDIA = "media"


class Prior(StrEnum):
    """What multiplies a hit's fused score after fusion."""

    IMPORTANCE = "importance"
    RECENCY = "recency"
    #: The question names the hit's speaker (``priors.speaker_bonus``).
    SPEAKER = "speaker"
    #: An assistant said it (``priors.assistant_weight``).
    ASSISTANT = "assistant"
    #: Spreading the head of the results over sessions lowered it (``coverage.session_decay``).
    SPREAD = "spread"
    #: A question about time, and the hit carries a date (``priors.time_question_bonus``).
    DATED = "dated"
    #: Said on the days the question names, or in the span an event bounds
    #: (``priors.time_window_bonus``).
    WINDOW = "window"
    #: "The first time", "the last time": the earliest (newest) of the best
    #: (``priors.time_order_bonus``).
    ORDER = "order"
    #: The question names someone, and another person speaks of themselves here
    #: (``priors.other_person_weight``).
    OTHER_PERSON = "other_person"
    #: A recorded question, the query asked again (``priors.echo_weight``).
    ECHO = "echo"


class Gain(StrEnum):
    """Where score other hits passed to a hit came from."""

    #: It replies to a question that was found (``spread.reply_share``, ``spread.assistant_reply_share``).
    REPLY = "reply"
    #: A neighbouring turn was found (``spread.neighbour_share``).
    NEIGHBOURS = "neighbours"


class Mark(StrEnum):
    """What a hit is besides found (``1.0`` under its name)."""

    #: From the cold archive (``include_archive``).
    ARCHIVED = "archived"
    #: A summary made by compaction.
    ROLLUP = "rollup"
    #: Not found: the later moment that ended a hit, shown beside it.
    SUCCESSOR = "successor"
    #: Not found: a moment a hit conflicts with, shown beside it.
    CONFLICT = "conflict"


@dataclass(frozen=True, slots=True)
class SignalPart:
    """One signal's part in a hit: its rank (1 = best) and raw score in that signal, and
    its share of the fused score (None: not fused, as for an archived hit)."""

    rank: int
    raw: float
    share: float | None = None


@dataclass(frozen=True, slots=True)
class CoverageStep:
    """What the query coverage step did to a hit: its place (1 = first) before and after
    the step, and the score it added."""

    before: int
    after: int
    added: float

    @property
    def move(self) -> int:
        """How many places it went up (negative: down)."""
        return self.before - self.after


_COVERAGE = ("coverage_before", "coverage_move", "coverage_added")
_SIGNALS = frozenset(Signal)
_PRIORS = frozenset(Prior)
_GAINS = frozenset(Gain)
_MARKS = frozenset(Mark)


@dataclass(frozen=True, slots=True, eq=False)
class Explanation(Mapping[str, float]):
    """What found a hit and what moved it. Read its fields; as a mapping (and serialized)
    it is the flat ``name: number`` form of the module's docstring, so ``explain["relevance"]``
    and ``explain == {"conflict": 1.0}`` read as they always did."""

    #: How well it matches, 0 to 1 (``min_score`` cuts by it); None when not judged.
    relevance: float | None = None
    #: The fused score, before the priors; None for a hit that was not fused.
    fused: float | None = None
    #: Each signal that found it, in the order they were fused.
    signals: Mapping[Signal, SignalPart] = field(default_factory=dict)
    #: Each prior's factor, in the order they were applied.
    priors: Mapping[Prior, float] = field(default_factory=dict)
    #: The score other hits passed to it, by where it came from.
    gains: Mapping[Gain, float] = field(default_factory=dict)
    coverage: CoverageStep | None = None
    marks: tuple[Mark, ...] = ()
    #: A superseded hit shown after the later moment that ended it takes a score just below
    #: that one's, so the results stay in score order; this is the score it had.
    own_score: float | None = None

    def with_mark(self, mark: Mark) -> Explanation:
        return replace(self, marks=(*self.marks, mark))

    def as_dict(self) -> dict[str, float]:
        """The flat form (see the module's docstring), as search has always returned it."""
        out: dict[str, float] = {}
        if Mark.ARCHIVED in self.marks:
            out[Mark.ARCHIVED.value] = 1.0
        if self.relevance is not None:
            out["relevance"] = self.relevance
        if self.fused is not None:
            out["fused"] = self.fused
        parts = self.signals.items()
        out.update((f"{s}_share", p.share) for s, p in parts if p.share is not None)
        out.update((f"{s}_rank", float(p.rank)) for s, p in parts)
        out.update((f"{s}_raw", p.raw) for s, p in parts)
        out.update((f"{name}_prior", factor) for name, factor in self.priors.items())
        out.update((f"{name}_gain", gain) for name, gain in self.gains.items())
        if (step := self.coverage) is not None:
            out.update(
                zip(_COVERAGE, (float(step.before), float(step.move), step.added), strict=True)
            )
        out.update((mark.value, 1.0) for mark in self.marks if mark is not Mark.ARCHIVED)
        if self.own_score is not None:
            out["own_score"] = self.own_score
        return out

    @classmethod
    def from_mapping(cls, flat: Mapping[str, float]) -> Explanation:
        """An explanation from its flat form; ValueError names a name it does not know."""
        signals: dict[Signal, dict[str, float]] = {}
        priors: dict[Prior, float] = {}
        gains: dict[Gain, float] = {}
        marks: list[Mark] = []
        for key, value in flat.items():
            name, _, kind = key.rpartition("_")
            if key in _MARKS:
                marks.append(Mark(key))
            elif key in ("relevance", "fused", "own_score") or key in _COVERAGE:
                continue
            elif kind in ("share", "rank", "raw") and name in _SIGNALS:
                signals.setdefault(Signal(name), {})[kind] = value
            elif kind == "prior" and name in _PRIORS:
                priors[Prior(name)] = value
            elif kind == "gain" and name in _GAINS:
                gains[Gain(name)] = value
            else:
                raise ValueError(f"{key!r} is not a name of a search hit's explanation")
        coverage = None
        if "coverage_before" in flat:
            before = int(flat["coverage_before"])
            moved = int(flat.get("coverage_move", 0.0))
            coverage = CoverageStep(before, before - moved, flat.get("coverage_added", 0.0))
        return cls(
            relevance=flat.get("relevance"),
            fused=flat.get("fused"),
            signals={
                s: SignalPart(int(p.get("rank", 0.0)), p.get("raw", 0.0), p.get("share"))
                for s, p in signals.items()
            },
            priors=priors,
            gains=gains,
            coverage=coverage,
            marks=tuple(marks),
            own_score=flat.get("own_score"),
        )

    # -- the flat form, as a read-only mapping -----------------------------------------------

    def __getitem__(self, key: str) -> float:
        return self.as_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_dict())

    def __len__(self) -> int:
        return len(self.as_dict())

    def __repr__(self) -> str:
        return f"Explanation({self.as_dict()!r})"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """Validated from an explanation or its flat form; serialized (and described in
        the JSON schema) as the flat form, a mapping of names to numbers."""
        flat = handler.generate_schema(dict[str, float])
        from_flat = core_schema.no_info_after_validator_function(cls.from_mapping, flat)
        return core_schema.json_or_python_schema(
            json_schema=from_flat,
            python_schema=core_schema.union_schema(
                [core_schema.is_instance_schema(cls), from_flat]
            ),
            serialization=core_schema.plain_serializer_function_ser_schema(
                cls.as_dict, return_schema=flat
            ),
        )
