"""Retrieval recall on LoCoMo (development split), following the published protocol, with
the ranking's settings tuned leave-one-conversation-out.

For each conversation, one fresh notebook (SQLite in a temporary directory) receives its
turns, one notebook session per LoCoMo session, each turn at its session's real date (turn i
at date + i seconds), indexed as ``<speaker> said, "<text>"`` (plus `` and shared
<blip_caption>`` when it has an image); the LLM-written ``observation``, ``session_summary``
and ``event_summary`` are never read. Every question is then asked raw to
``nb.search(question, limit=50, mode=..., asked_at=the day after the last turn)`` and the hits are mapped to their dia_ids:
recall@k = |evidence ∩ top-k| / |evidence|, averaged over all questions (empty evidence
counts as 1).

A variant with a grid of settings is scored leave-one-conversation-out (LOCO): for each
conversation, the grid point with the best mean (R@5 + R@10) on the other four is chosen and
its recall on the held-out one is what counts; the figures are those held-out recalls, all
five folds pooled, never the in-sample best (printed apart, with the points chosen). ``bm25``
and ``minilm`` are the plain signals from the same run: FTS5 BM25 and MiniLM alone on the
raw question, none of the ranking's additions.

Embeddings are cached under /tmp (``bench/embed_cache.py``): the first run embeds the
turns (minutes), the next ones read them back (seconds).

    python bench/retrieval_locomo.py [--data ../shared/data/locomo/locomo-dev.json]
        [--variants bm25,minilm,lexical,vector,hybrid,...] [--limit-conversations N]
        [--embedder default|none] [--failures N] [--failure-variant hybrid]

Skips cleanly (exit 0) when the data set is absent; it is never copied into this repository.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile
from agent_notebook import Notebook
from agent_notebook.config import NotebookConfig, SearchSettings
from agent_notebook.core.enrich import STOPWORDS
from agent_notebook.core.lexical import tokenize
from agent_notebook.embed import default_embedder
from agent_notebook.ingest.locomo import parse_locomo_time
from agent_notebook.search.engine import SearchEngine
from agent_notebook.search.request import SearchRequest
from agent_notebook.storage import MomentFilter, open_backend
from embed_cache import CachedEmbedder

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared/data/locomo/locomo-dev.json"
KS = (5, 10, 25, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TARGETS = {5: 70.0, 10: 80.0}
REFERENCES = [  # (name, R@5, R@10, R@25, R@50); None: not published
    ("DRAGON dense retriever (paper, all ten conversations)", 56.7, 66.2, 76.7, 82.7),
    ("hybrid on held-out conversations (issue 16)", 52.8, 65.0, None, None),
]
SESSION_KEY = re.compile(r"session_(\d+)")
#: The plain signals: none of the ranking's additions.
PLAIN = {
    "content_match": False,
    "latest_turn_weight": 0.0,
    "date_weight": 0.0,
    "session_decay": 1.0,
    "reply_share": 0.0,
    "assistant_reply_share": 0.0,
    "assistant_weight": 1.0,
    "neighbour_share": 0.0,
    "importance_prior": 0.0,
    "recency_prior": 0.0,
    "session_share": 0.0,
    "coverage_gain": 0.0,
    # issue 42's readings of a question: its time words, the people it names, its echoes,
    # whether it gathers; and the cut's protection of what a signal ranks first
    "priors": {"time_window_bonus": 0.0, "other_person_weight": 1.0, "echo_weight": 1.0},
    "coverage": {"gather_decay": 1.0},
    "fusion": {"first_floor": 1.0},
}
Point = dict[str, Any]


@dataclass(frozen=True)
class Variant:
    name: str
    mode: str  # hybrid, lexical, vector
    settings: Point = field(default_factory=dict)
    #: Axes of settings tuned LOCO: each a list of alternatives, every combination tried.
    grid: tuple[tuple[Point, ...], ...] = ()
    proto: str = ""  # a prototype of ProtoEngine, or "" for nb.search itself
    note: str = ""

    def points(self) -> list[Point]:
        return [merged(self.settings, *combo) for combo in itertools.product(*self.grid)] or [
            dict(self.settings)
        ]


def merged(*parts: Point) -> Point:
    """The settings of ``parts`` in one, a group's (``priors: {...}``) merged key by key."""
    out: Point = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = {**out[key], **value}
            else:
                out[key] = value
    return out


def axis(name: str, *values: Any) -> tuple[Point, ...]:
    """A setting's alternatives: ``name`` flat (``speaker_bonus``) or in its group
    (``priors.echo_weight``)."""
    group, _, inner = name.rpartition(".")
    return tuple({group: {inner: v}} if group else {name: v} for v in values)


#: Issue 42's readings of a question, each off: its time words, another person's words, its
#: echoes, the spread of a gathering question, the cut's protection of a signal's first.
ISSUE42_OFF: dict[str, Point] = {
    "time": {"priors": {"time_window_bonus": 0.0}},
    "person": {"priors": {"other_person_weight": 1.0}},
    "echo": {"priors": {"echo_weight": 1.0}},
    "gather": {"coverage": {"gather_decay": 1.0}},
    "first": {"fusion": {"first_floor": 1.0}},
    "content-first": {"fusion": {"content_first": False}},
    "common": {"fusion": {"common_weight": 1.0}},
}


SPREAD = axis("session_decay", 1.0, 0.7)
HYBRID_GRID = (axis("coverage_gain", 0.0, 1.0), axis("coverage_residual", 0.0, 0.3), SPREAD)
VARIANTS = [
    Variant("bm25", "lexical", PLAIN, note="FTS5 BM25 alone, raw question"),
    Variant("minilm", "vector", PLAIN, note="MiniLM alone, raw question"),
    Variant(
        "lexical",
        "lexical",
        grid=(axis("content_match", False, True), axis("coverage_gain", 0.0, 1.0), SPREAD),
        note="LOCO",
    ),
    Variant("vector", "vector", grid=(axis("coverage_gain", 0.0, 1.0), SPREAD), note="LOCO"),
    Variant("hybrid", "hybrid", grid=HYBRID_GRID, note="LOCO"),
    Variant(
        "hybrid-neighbour",
        "hybrid",
        grid=(axis("neighbour_share", 0.0, 0.1, 0.2, 0.3, 0.4, 0.5),),
        note="LOCO: a share of each turn's score to its neighbours (the defaults else)",
    ),
    Variant(
        "hybrid-speaker",
        "hybrid",
        grid=(axis("speaker_bonus", 0.0, 0.05, 0.1, 0.2, 0.4),),
        note="LOCO: a bonus for the turns of a speaker the question names (the defaults else)",
    ),
    Variant(
        "hybrid-speaker-neighbour",
        "hybrid",
        grid=(
            axis("speaker_bonus", 0.0, 0.05, 0.1, 0.15),
            axis("neighbour_share", 0.0, 0.02, 0.05),
        ),
        note="LOCO: the speaker bonus and the neighbours' share together",
    ),
    Variant(
        "hybrid-time",
        "hybrid",
        grid=(axis("time_question_bonus", 0.0, 0.05, 0.1, 0.2),),
        note="LOCO: a time question lifts the results that carry a date (the defaults else)",
    ),
    Variant("hybrid-no-date", "hybrid", {"date_weight": 0}, note="the defaults, no date signal"),
    Variant("hybrid-no-cutoff", "hybrid", {"min_score": 0}, note="every match, however weak"),
    Variant(
        "hybrid-spread",
        "hybrid",
        grid=(
            (
                {"session_decay": 1.0},
                {"session_decay": 0.7, "session_free": 3},
                {"session_decay": 0.5, "session_free": 3},
                {"session_decay": 0.7, "session_free": 2},
                {"session_decay": 0.5, "session_free": 5},
            ),
        ),
        note="LOCO: session spread past a session's first hits",
    ),
    Variant(
        "hybrid-spread-mild",
        "hybrid",
        grid=(
            (
                {"session_decay": 1.0},
                {"session_decay": 0.9, "session_free": 2},
                {"session_decay": 0.9, "session_free": 3},
                {"session_decay": 0.8, "session_free": 3},
                {"session_decay": 0.7, "session_free": 4},
                {"session_decay": 0.5, "session_free": 4},
            ),
        ),
        note="LOCO: milder session spread (each but the first passes the two-session test)",
    ),
    Variant(
        "hybrid-session",
        "hybrid",
        grid=(axis("session_share", 0.0, 0.05, 0.1, 0.2, 0.4), axis("session_best", 1, 3)),
        note="LOCO: session-level evidence (a share of its session's best scores)",
    ),
    Variant(
        "hybrid-cover",
        "hybrid",
        grid=(
            axis("coverage_gain", 1.0, 2.0, 4.0),
            axis("coverage_idf_power", 0.0, 1.0, 2.0),
            axis("coverage_residual", 0.0, 0.3),
        ),
        note="LOCO: query coverage, words weighed by idf^power, a covered word keeps a residual",
    ),
    Variant(
        "hybrid-cover-window",
        "hybrid",
        grid=(axis("coverage_window", 5, 10, 20, 50),),
        note="LOCO: query coverage over the best 5, 10, 20 or 50",
    ),
    Variant(
        "hybrid-fusion",
        "hybrid",
        grid=(
            axis("fusion_margin_full", 0.0, 0.3, 0.5, 0.8),
            axis("fusion_agreement", 0.0, 0.5, 1.0),
        ),
        note="LOCO: per-query lexical weight from its margin and agreement (the defaults else)",
    ),
    Variant(
        "hybrid-agree-reply",
        "hybrid",
        grid=(axis("fusion_agreement", 0.0, 1.0), axis("reply_share", 0.0, 0.5)),
        note="LOCO: lexical weight by agreement, and the reply's share (BEAM: 0 and 1 best)",
    ),
    Variant("hybrid-agree", "hybrid", {"fusion_agreement": 1.0}, note="fusion_agreement 1"),
    Variant(
        "hybrid-agree-sure",
        "hybrid",
        grid=(
            axis("fusion_agreement", 0.0, 0.5, 1.0),
            axis("fusion_vector_margin", 0.2, 0.25, 0.3),
        ),
        note="LOCO: agreement only where the vector signal's own margin is this or more",
    ),
    Variant("hybrid-defaults", "hybrid", note="the shipped defaults"),
    *(
        Variant(f"hybrid-no-{name}", "hybrid", off, note=f"the defaults, issue 42's {name} off")
        for name, off in ISSUE42_OFF.items()
    ),
    Variant(
        "hybrid-no-42", "hybrid", merged(*ISSUE42_OFF.values()), note="issue 42's readings all off"
    ),
    Variant(
        "hybrid-42",
        "hybrid",
        grid=(
            axis("priors.time_window_bonus", 0.0, 0.25, 0.5, 1.0),
            axis("priors.other_person_weight", 1.0, 0.85, 0.7, 0.5),
        ),
        note="LOCO: the time window's bonus, another person's weight",
    ),
    Variant(
        "hybrid-42-gather",
        "hybrid",
        grid=(
            axis("coverage.gather_decay", 1.0, 0.85, 0.7, 0.5),
            axis("coverage.gather_free", 1, 2, 3),
        ),
        note="LOCO: a gathering question's spread over sessions",
    ),
    Variant(
        "hybrid-42-people",
        "hybrid",
        grid=(axis("speaker_bonus", 0.1, 0.2, 0.4), axis("priors.other_person_weight", 1.0, 0.7)),
        note="LOCO: the named speaker's bonus and another person's weight",
    ),
    Variant(
        "hybrid-42-when",
        "hybrid",
        grid=(axis("time_question_bonus", 0.0, 0.1, 0.2),),
        note="LOCO: a when / how long question lifts what carries a date or a duration",
    ),
    Variant(
        "hybrid-42-floor",
        "hybrid",
        grid=(axis("fusion.first_floor", 1.0, 0.3, 0.25, 0.2, 0.15),),
        note="LOCO: the cut's floor for what a signal ranks first",
    ),
    Variant("proto-stop", "hybrid", proto="stop", note="BM25 query without stopwords"),
]
DEFAULT_VARIANTS = ["bm25", "minilm", "lexical", "vector", "hybrid", "hybrid-defaults"]


# -- data -------------------------------------------------------------------------------------


def normalise_evidence(ids: list[str]) -> list[str]:
    """Split on ';' and spaces, drop a stray colon, strip leading zeros, skip bare ids."""
    out: list[str] = []
    for raw in ids:
        for part in re.split(r"[;\s]+", raw):
            m = re.fullmatch(r"D:?(\d+):(\d+)", part.strip())
            if m:
                out.append(f"D{int(m[1])}:{int(m[2])}")
    return list(dict.fromkeys(out))


def turn_text(turn: dict[str, Any]) -> str:
    text = f'{turn["speaker"]} said, "{turn["text"]}"'
    caption = (turn.get("blip_caption") or "").strip()
    return f"{text} and shared {caption}" if caption else text


def load_conversation(nb: Notebook, conversation: dict[str, Any]) -> None:
    body = conversation["conversation"]
    keys = sorted((int(m[1]), k) for k in body if (m := SESSION_KEY.fullmatch(k)))
    for number, key in keys:
        if not body[key]:
            continue
        started = parse_locomo_time(body[f"{key}_date_time"])
        session = nb.start_session(f"{conversation['sample_id']} session {number}", started=started)
        drafts = [
            {
                "text": turn_text(turn),
                "speaker": turn["speaker"],
                "timestamp": started + timedelta(seconds=i),
                "source_id": turn["dia_id"],
            }
            for i, turn in enumerate(body[key])
        ]
        nb.record_many(session.id, drafts)


# -- prototypes -------------------------------------------------------------------------------


class ProtoEngine(SearchEngine):
    """The engine with generic changes, each off unless named in ``protos``:

    ``stop``   the BM25 query without stopwords (the vector signal keeps the raw question).
    """

    def __init__(self, *args: Any, protos: set[str]) -> None:
        super().__init__(*args)
        self.protos = protos

    def _lexical(
        self, request: SearchRequest, pool: int, allowed: Any, content: Any = None
    ) -> list[tuple[str, float]]:
        if "stop" in self.protos:
            kept = [t for t in tokenize(request.query) if t not in STOPWORDS]
            if kept:
                request = SearchRequest(" ".join(kept), request.where, request.limit)
        return super()._lexical(request, pool, allowed, content)


def asked_after(nb: Notebook) -> datetime:
    """When the questions are asked: the day after the conversation's last turn (their
    "last year" and "recently" are said of the conversation, not of today)."""
    last = max(m.timestamp for m in nb.moments(limit=None))
    return last + timedelta(days=1)


def searcher(nb: Notebook, variant: Variant, point: Point) -> Callable[[str], list[str]]:
    settings = SearchSettings(**point)
    asked = asked_after(nb)
    if not variant.proto:
        nb.config = NotebookConfig(search=settings)
        return lambda q: [
            h.moment.source_id or ""
            for h in nb.search(q, limit=50, mode=variant.mode, asked_at=asked)
        ]
    engine = ProtoEngine(nb.backend, settings, nb.semantic, protos=set(variant.proto.split("+")))
    return lambda q: [
        h.moment.source_id or ""
        for h in engine.search(
            SearchRequest(
                q, MomentFilter(), 50, mode=variant.mode, min_score=settings.min_score, now=asked
            )
        )
    ]


# -- the run ----------------------------------------------------------------------------------

#: One question's outcome: (conversation index, category, k -> recall).
Outcome = tuple[int, int, dict[int, float]]


@dataclass
class Result:
    by_point: list[list[Outcome]]  # per grid point, per question
    latencies: list[float] = field(default_factory=list)
    chosen: list[Point] = field(default_factory=list)  # per held-out conversation

    def loco(self, n_conv: int) -> list[Outcome]:
        """Each conversation's outcomes at the point best on the other conversations."""
        if len(self.by_point) == 1:
            return self.by_point[0]
        held_out: list[Outcome] = []
        self.chosen_index: list[int] = []
        for conv in range(n_conv):

            def score(point: int, conv: int = conv) -> float:
                rows = [r for c, _, r in self.by_point[point] if c != conv]
                return sum(r[5] + r[10] for r in rows) / max(1, len(rows))

            best = max(range(len(self.by_point)), key=score)
            self.chosen_index.append(best)
            held_out += [o for o in self.by_point[best] if o[0] == conv]
        return held_out

    def in_sample(self) -> list[Outcome]:
        return max(self.by_point, key=lambda rows: sum(r[5] + r[10] for _, _, r in rows))


def recall_at(evidence: list[str], found: list[str]) -> dict[int, float]:
    if not evidence:
        return dict.fromkeys(KS, 1.0)
    return {k: len(set(evidence) & set(found[:k])) / len(evidence) for k in KS}


def run(args: argparse.Namespace, data: list[dict[str, Any]], variants: list[Variant]) -> None:
    results = {v.name: Result([[] for _ in v.points()]) for v in variants}
    index_s = record_s = 0.0
    failures: list[tuple[str, list[str], list[str], dict[str, str]]] = []
    embedder: Any = None
    if args.embedder != "none" and (inner := default_embedder(args.embedder)) is not None:
        embedder = CachedEmbedder(inner)
    conversations = data[: args.limit_conversations]
    for conv_index, conversation in enumerate(conversations):
        with tempfile.TemporaryDirectory() as tmp:
            nb = Notebook(open_backend(str(Path(tmp) / "notebook.db")), embedder=embedder)
            t0 = time.perf_counter()
            load_conversation(nb, conversation)
            record_s += time.perf_counter() - t0
            if nb.semantic is not None:  # let the worker finish, then catch up what is left
                nb.semantic.wait_idle()  # (a reindex beside the worker embeds twice)
                nb.reindex()
            index_s += time.perf_counter() - t0
            texts = {m.source_id or "": m.content.text for m in nb.moments(limit=None)}
            qa = conversation["qa"]
            print(
                f"{conversation['sample_id']}: {len(texts)} turns, {len(qa)} questions, "
                f"indexed in {time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
            )
            for variant in variants:
                if variant.mode == "vector" and nb.semantic is None:
                    continue
                result = results[variant.name]
                for p, point in enumerate(variant.points()):
                    search = searcher(nb, variant, point)
                    for q in qa:
                        evidence = normalise_evidence(q.get("evidence", []))
                        t1 = time.perf_counter()
                        found = search(q["question"])
                        result.latencies.append(time.perf_counter() - t1)
                        recall = recall_at(evidence, found)
                        result.by_point[p].append((conv_index, q["category"], recall))
                        if variant.name == args.failure_variant and p == 0 and recall[10] == 0:
                            failures.append(
                                (f"[{q['category']}] {q['question']}", evidence, found, texts)
                            )
            nb.close()
        if embedder is not None:
            embedder.save()
    report(results, variants, index_s, record_s, len(conversations), args.embedder)
    show_failures(failures, args.failures, args.failure_variant)


def mean_pct(values: list[float]) -> str:
    return f"{100 * sum(values) / len(values):5.1f}" if values else "    -"


def cells_of(rows: list[dict[int, float]]) -> list[str]:
    return [mean_pct([r[k] for r in rows]) for k in KS]


def report(
    results: dict[str, Result],
    variants: list[Variant],
    index_s: float,
    record_s: float,
    n_conv: int,
    embedder: str,
) -> None:
    print(
        f"\nLoCoMo dev, {n_conv} conversations, published protocol (turns of the same "
        f"conversation, raw questions); embedder: {embedder}; LOCO = tuned on the other "
        "conversations, scored on the held-out one"
    )
    print(
        f"index time (all conversations): record {record_s:.1f} s, record + embed {index_s:.1f} s"
    )
    print(f"targets: R@5 >= {TARGETS[5]:.0f}, R@10 >= {TARGETS[10]:.0f}\n")
    head = f"{'variant':<18} {'n':>4}  {'R@5':>5} {'R@10':>5} {'R@25':>5} {'R@50':>5}  "
    print(head + f"{'p50 ms':>7}  {'in-sample R@5/10':<17} note")
    held: dict[str, list[Outcome]] = {}
    for variant in variants:
        result = results[variant.name]
        if not result.by_point[0]:
            print(f"{variant.name:<18} skipped (no embedder)")
            continue
        held[variant.name] = outcomes = result.loco(n_conv)
        cells = cells_of([r for _, _, r in outcomes])
        p50 = percentile(result.latencies, 0.5) * 1000
        best = cells_of([r for _, _, r in result.in_sample()])
        inside = f"{best[0]} {best[1]}" if len(result.by_point) > 1 else ""
        print(
            f"{variant.name:<18} {len(outcomes):>4}  {' '.join(cells)}  {p50:7.1f}  "
            f"{inside:<17} {variant.note or variant.settings or ''}"
        )
    print("\nreference (issue / paper):")
    for name, *refs in REFERENCES:
        cells = [f"{r:5.1f}" if r is not None else "    -" for r in refs]
        print(f"  {name:<56} {' '.join(cells)}")
    for cat, cat_name in CATEGORIES.items():
        first = next(iter(held.values()), [])
        n = sum(1 for _, c, _ in first if c == cat)
        print(f"\ncategory {cat} ({cat_name}), {n} questions, R@5/10/25/50")
        for name, outcomes in held.items():
            rows = [r for _, c, r in outcomes if c == cat]
            if rows:
                print(f"  {name:<18} {' '.join(cells_of(rows))}")
    print("\nin-sample R@5/R@10 of each grid point (all five conversations; not the figure):")
    for variant in variants:
        result = results[variant.name]
        if len(result.by_point) > 1 and result.by_point[0]:
            for point, rows in zip(variant.points(), result.by_point, strict=True):
                cells = cells_of([r for _, _, r in rows])
                print(f"  {variant.name:<10} {cells[0]} {cells[1]}  {point}")
    print("\nsettings chosen per held-out conversation (LOCO):")
    for variant in variants:
        result = results[variant.name]
        if len(result.by_point) > 1 and variant.name in held:
            points = variant.points()
            tuned = {k for axis_ in variant.grid for part in axis_ for k in part}
            for conv, index in enumerate(result.chosen_index):
                shown = {k: v for k, v in points[index].items() if k in tuned}
                print(f"  {variant.name:<10} conversation {conv + 1}: {shown}")


def step(dia_id: str, by: int) -> str:
    session, turn = dia_id.split(":")
    return f"{session}:{int(turn) + by}"


def show_failures(
    failures: list[tuple[str, list[str], list[str], dict[str, str]]], n: int, name: str
) -> None:
    if not n or not failures:
        return
    kinds: dict[str, int] = defaultdict(int)
    for question, evidence, found, _ in failures:
        top = set(found[:10])
        cat = int(question[1])
        kinds[f"category {cat} ({CATEGORIES[cat]})"] += 1
        after = {d for d in evidence if step(d, -1) in top}
        beside = after | {d for d in evidence if step(d, 1) in top}
        ranked = {d for d in evidence if d in found}
        kinds["an evidence turn is the reply (next turn) to a top-10 hit"] += bool(after)
        kinds["an evidence turn is next to a top-10 hit (either side)"] += bool(beside)
        kinds["an evidence turn is ranked 11-50"] += bool(ranked)
        kinds["none of these"] += not (beside or ranked)
    print(f"\n{len(failures)} questions with R@10 = 0 for {name}:")
    order = sorted(k for k in kinds if k.startswith("category")) + [
        k for k in kinds if not k.startswith("category")
    ]
    for kind in order:
        print(f"  {kind:<58} {kinds[kind]:4d}  ({100 * kinds[kind] / len(failures):4.1f}%)")
    stride = max(1, len(failures) // n)
    print(f"\n{n} of them, evenly spaced:")
    for question, evidence, found, texts in failures[::stride][:n]:
        print(f"\nQ {question}")
        for dia in evidence:
            rank = found.index(dia) + 1 if dia in found else None
            print(f"  evidence {dia} (rank {rank}): {texts.get(dia, '?')[:150]}")
        for i, dia in enumerate(found[:3], start=1):
            print(f"  top {i} {dia}: {texts.get(dia, '?')[:150]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS))
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument(
        "--embedder", choices=["default", "minilm", "e5-small", "none"], default="default"
    )
    parser.add_argument("--failures", type=int, default=0, help="show N failing questions")
    parser.add_argument("--failure-variant", default="hybrid")
    args = parser.parse_args()
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (see ../shared/data/locomo/README.md)")
        return
    by_name = {v.name: v for v in VARIANTS}
    unknown = [n for n in args.variants.split(",") if n not in by_name]
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {', '.join(by_name)}")
    variants = [by_name[n] for n in args.variants.split(",")]
    if args.embedder not in ("default", "minilm", "none"):  # the plain vector row is its own
        variants = [
            replace(v, name=args.embedder, note=f"{args.embedder} alone, raw question")
            if v.name == "minilm"
            else v
            for v in variants
        ]
    data = json.loads(args.data.read_text(encoding="utf-8"))
    run(args, data, variants)


if __name__ == "__main__":
    sys.exit(main())
