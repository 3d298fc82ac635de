"""Retrieval recall on LoCoMo (development split), following the published protocol.

For each conversation, one fresh notebook (SQLite in a temporary directory) receives its
turns, one notebook session per LoCoMo session, each turn at its session's real date (turn i
at date + i seconds), indexed as ``<speaker> said, "<text>"`` (plus `` and shared
<blip_caption>`` when it has an image); the LLM-written ``observation``, ``session_summary``
and ``event_summary`` are never read. Every question is then asked raw to
``nb.search(question, limit=50, mode=...)`` and the hits are mapped to their dia_ids:
recall@k = |evidence ∩ top-k| / |evidence|, averaged over all questions (empty evidence
counts as 1). Reported per variant (search mode and settings): R@5/10/25/50 overall and per
category, the time to index (record + embed) and the per-query latency p50.

Variants named ``proto-*`` are prototypes of ranking changes, run by a subclass of the
search engine defined here (``src/`` is unchanged); they are reported, not tuned.

    python bench/retrieval_locomo.py [--data ../shared/data/locomo/locomo-dev.json]
        [--variants lexical,vector,hybrid,...] [--limit-conversations N]
        [--embedders minilm,e5-small|none] [--speed-repeats N]
        [--failures N] [--failure-variant 'hybrid[minilm]']

Each embedder named gets its own vector and hybrid rows (``vector[minilm]``), beside the
lexical ones (BM25) of the same run, and a line of speed: install size, query embedding
p50/p95 and indexing moments/s (bench/_embedders.py).

Skips cleanly (exit 0) when the data set is absent; it is never copied into this repository.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile
from _embedders import CANDIDATES, install_mb, make, speed
from agent_notebook import Notebook
from agent_notebook.config import NotebookConfig, SearchSettings
from agent_notebook.embed import Embedder
from agent_notebook.enrich import STOPWORDS
from agent_notebook.ingest.locomo import parse_locomo_time
from agent_notebook.search.engine import SearchEngine, SearchRequest
from agent_notebook.search.lexical import tokenize
from agent_notebook.storage import MomentFilter, open_backend

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared/data/locomo/locomo-dev.json"
KS = (5, 10, 25, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TARGETS = {5: 70.0, 10: 80.0}
REFERENCES = [  # (name, R@5, R@10, R@25, R@50); None: not published
    ("DRAGON dense retriever (paper, all ten conversations)", 56.7, 66.2, 76.7, 82.7),
    ("BM25, this machine (issue)", 45.9, 53.2, None, None),
    ("MiniLM alone (issue)", 37.5, 46.5, None, None),
    ("untuned RRF (issue)", 45.8, 55.4, None, None),
]
SESSION_KEY = re.compile(r"session_(\d+)")


@dataclass(frozen=True)
class Variant:
    name: str
    mode: str  # hybrid, lexical, vector
    settings: dict[str, float] = field(default_factory=dict)
    proto: str = ""  # a prototype of ProtoEngine, or "" for nb.search itself
    note: str = ""


VARIANTS = [
    Variant("lexical", "lexical", note="BM25 (FTS5) alone"),
    Variant("vector", "vector", note="the embedder alone"),
    Variant("hybrid", "hybrid", note="default settings"),
    Variant(
        "hybrid-before",
        "hybrid",
        {"reply_share": 0, "concept_max_share": 1, "rrf_k": 60},
        note="issue 5's first hybrid: no reply share, every concept scored",
    ),
    Variant("hybrid-no-cutoff", "hybrid", {"min_score": 0}, note="every match, however weak"),
    Variant("hybrid-no-reply", "hybrid", {"reply_share": 0}),
    Variant("hybrid-no-priors", "hybrid", {"importance_prior": 0, "recency_prior": 0}),
    Variant("hybrid-ns0.1", "hybrid", {"neighbour_share": 0.1}),
    Variant("hybrid-rrf60", "hybrid", {"rrf_k": 60}, note="the usual constant"),
    Variant("proto-stop", "hybrid", proto="stop", note="BM25 query without stopwords"),
]
DEFAULT_VARIANTS = [v.name for v in VARIANTS]


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

    def _lexical(self, request: SearchRequest, pool: int, allowed: Any) -> list[tuple[str, float]]:
        if "stop" in self.protos:
            kept = [t for t in tokenize(request.query) if t not in STOPWORDS]
            if kept:
                request = SearchRequest(" ".join(kept), request.where, request.limit)
        return super()._lexical(request, pool, allowed)


def searcher(nb: Notebook, variant: Variant) -> Callable[[str], list[str]]:
    settings = SearchSettings(**variant.settings)
    if not variant.proto:
        nb.config = NotebookConfig(search=settings)
        return lambda q: [
            h.moment.source_id or "" for h in nb.search(q, limit=50, mode=variant.mode)
        ]
    engine = ProtoEngine(nb.backend, settings, nb.semantic, protos=set(variant.proto.split("+")))
    return lambda q: [
        h.moment.source_id or ""
        for h in engine.search(SearchRequest(q, MomentFilter(), 50, mode=variant.mode))
    ]


# -- the run ----------------------------------------------------------------------------------


@dataclass
class Result:
    recalls: list[tuple[int, dict[int, float]]] = field(default_factory=list)  # (cat, k->r)
    latencies: list[float] = field(default_factory=list)


def recall_at(evidence: list[str], found: list[str]) -> dict[int, float]:
    if not evidence:
        return dict.fromkeys(KS, 1.0)
    return {k: len(set(evidence) & set(found[:k])) / len(evidence) for k in KS}


def rows_for(variants: list[Variant], embedders: list[str]) -> list[tuple[str, Variant, str]]:
    """(row label, variant, embedder name) for each row of the report: a lexical variant
    once (it reads no vector), every other once per embedder, labelled with its name."""
    rows = [
        (v.name, v, embedders[0] if embedders else "none") for v in variants if v.mode == "lexical"
    ]
    for name in embedders:
        rows += [(f"{v.name}[{name}]", v, name) for v in variants if v.mode != "lexical"]
    return rows


def run(args: argparse.Namespace, data: list[dict[str, Any]], variants: list[Variant]) -> None:
    names = [n for n in args.embedders.split(",") if n != "none"]
    made: dict[str, Embedder] = {}
    for name in names:
        embedder = make(name)
        if isinstance(embedder, str):
            print(embedder, file=sys.stderr)
        else:
            made[name] = embedder
    rows = rows_for(variants, list(made) or ["none"])
    results = {label: Result() for label, _, _ in rows}
    index_s: dict[str, float] = defaultdict(float)
    record_s = 0.0
    failures: list[tuple[str, list[str], list[str], dict[str, str]]] = []
    conversations = data[: args.limit_conversations]
    for name in list(made) or ["none"]:
        embedder: Any = made.get(name)
        todo = [r for r in rows if r[2] == name]
        for conversation in conversations:
            with tempfile.TemporaryDirectory() as tmp:
                nb = Notebook(open_backend(str(Path(tmp) / "notebook.db")), embedder=embedder)
                t0 = time.perf_counter()
                load_conversation(nb, conversation)
                record_s += time.perf_counter() - t0
                if nb.semantic is not None:  # let the worker finish, then catch up the rest
                    nb.semantic.wait_idle()  # (a reindex beside the worker embeds twice)
                    nb.reindex()
                index_s[name] += time.perf_counter() - t0
                texts = {m.source_id or "": m.content.text for m in nb.moments(limit=None)}
                qa = conversation["qa"]
                print(
                    f"{name} {conversation['sample_id']}: {len(texts)} turns, {len(qa)} "
                    f"questions, indexed in {time.perf_counter() - t0:.1f} s",
                    file=sys.stderr,
                )
                for label, variant, _ in todo:
                    search = searcher(nb, variant)
                    result = results[label]
                    for q in qa:
                        evidence = normalise_evidence(q.get("evidence", []))
                        t1 = time.perf_counter()
                        found = search(q["question"])
                        result.latencies.append(time.perf_counter() - t1)
                        recall = recall_at(evidence, found)
                        result.recalls.append((q["category"], recall))
                        if label == args.failure_variant and recall[10] == 0:
                            failures.append(
                                (f"[{q['category']}] {q['question']}", evidence, found, texts)
                            )
                nb.close()
    report(results, rows, index_s, record_s, len(conversations), list(made))
    if made and args.speed_repeats:
        report_speed(made, conversations, args.speed_repeats)
    show_failures(failures, args.failures, args.failure_variant)


def report_speed(
    made: dict[str, Embedder], conversations: list[dict[str, Any]], repeats: int
) -> None:
    """Each embedder's query latency and indexing rate on the same texts (the first
    conversation's turns, 100 of its questions), the median of ``repeats`` runs: the
    machine is shared and noisy."""
    first = conversations[0]
    body = first["conversation"]
    texts = [turn_text(t) for k, v in body.items() if SESSION_KEY.fullmatch(k) for t in v]
    queries = [q["question"] for q in first["qa"]][:100]
    print(
        f"\nembedder speed on {len(texts)} turns and {len(queries)} questions of "
        f"{first['sample_id']}, median of {repeats} runs (targets: query p95 <= 30 ms, "
        f"indexing >= 100 moments/s on 2 cores when nothing else runs)"
    )
    print(f"load average (1 min) before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"  {'embedder':<14} {'threads':>7} {'install MB':>10} {'query p50':>10} "
        f"{'query p95':>10} {'moments/s':>10} {'per CPU-s':>10}"
    )
    for name, embedder in made.items():
        runs = [speed(embedder, texts, queries) for _ in range(repeats)]
        med = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        size = install_mb(name)
        size_cell = f"{size:10.1f}" if size is not None else f"{'-':>10}"
        threads = getattr(embedder, "threads", "-")
        print(
            f"  {name:<14} {threads:>7} {size_cell} {med['query_p50_ms']:8.1f}ms "
            f"{med['query_p95_ms']:8.1f}ms {med['moments_per_s']:10.1f} "
            f"{med['moments_per_cpu_s']:10.1f}"
        )
    print(f"load average (1 min) after: {os.getloadavg()[0]:.1f}")


def mean_pct(values: list[float]) -> str:
    return f"{100 * sum(values) / len(values):5.1f}" if values else "    -"


def report(
    results: dict[str, Result],
    rows: list[tuple[str, Variant, str]],
    index_s: dict[str, float],
    record_s: float,
    n_conv: int,
    embedders: list[str],
) -> None:
    print(
        f"\nLoCoMo dev, {n_conv} conversations, published protocol (turns of the same "
        f"conversation, raw questions); embedders: {', '.join(embedders) or 'none'}"
    )
    print("no setting is tuned here: the leave-one-conversation-out figure is the one below")
    spent = ", ".join(f"{name} {s:.1f} s" for name, s in index_s.items())
    print(f"index time (all conversations): record {record_s:.1f} s; record + embed: {spent}")
    print(f"targets: R@5 >= {TARGETS[5]:.0f}, R@10 >= {TARGETS[10]:.0f}\n")
    head = f"{'variant':<30} {'n':>4}  {'R@5':>5} {'R@10':>5} {'R@25':>5} {'R@50':>5}  "
    print(head + f"{'p50 ms':>7}  {'R@5/R@10 vs target':<19} note")
    for label, variant, _ in rows:
        result = results[label]
        if not result.recalls:
            print(f"{label:<30} skipped (no embedder)")
            continue
        cells = [mean_pct([r[k] for _, r in result.recalls]) for k in KS]
        p50 = percentile(result.latencies, 0.5) * 1000
        gap = " ".join(f"{float(cells[i]) - TARGETS[k]:+5.1f}" for i, k in enumerate(TARGETS))
        print(
            f"{label:<30} {len(result.recalls):>4}  {' '.join(cells)}  {p50:7.1f}  "
            f"{gap:<19} {variant.note or variant.settings}"
        )
    print("\nreference (issue / paper):")
    for name, *refs in REFERENCES:
        cells = [f"{r:5.1f}" if r is not None else "    -" for r in refs]
        print(f"  {name:<56} {' '.join(cells)}")
    for cat, cat_name in CATEGORIES.items():
        first = next((r for r in results.values() if r.recalls), None)
        n = sum(1 for c, _ in first.recalls if c == cat) if first else 0
        print(f"\ncategory {cat} ({cat_name}), {n} questions")
        for label, _, _ in rows:
            cat_rows = [r for c, r in results[label].recalls if c == cat]
            if cat_rows:
                cells = [mean_pct([r[k] for r in cat_rows]) for k in KS]
                print(f"  {label:<30} {' '.join(cells)}")


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
        "--embedders",
        default="minilm",
        help=f"comma-separated, of {', '.join(CANDIDATES)} or none (lexical variants only)",
    )
    parser.add_argument("--speed-repeats", type=int, default=3, help="0: no speed table")
    parser.add_argument("--failures", type=int, default=0, help="show N failing questions")
    parser.add_argument("--failure-variant", default="hybrid[minilm]")
    args = parser.parse_args()
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (see ../shared/data/locomo/README.md)")
        return
    by_name = {v.name: v for v in VARIANTS}
    unknown = [n for n in args.variants.split(",") if n not in by_name]
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {', '.join(by_name)}")
    bad = [n for n in args.embedders.split(",") if n not in CANDIDATES and n != "none"]
    if bad:
        parser.error(f"unknown embedders {bad}; known: {', '.join(CANDIDATES)}, none")
    variants = [by_name[n] for n in args.variants.split(",")]
    data = json.loads(args.data.read_text(encoding="utf-8"))
    run(args, data, variants)


if __name__ == "__main__":
    sys.exit(main())
