"""Search latency at 10k and 100k moments, and ingest throughput with embeddings (SQLite).

For each size, a fresh notebook on SQLite in a temporary directory receives that many chat
turns: the LoCoMo development turns (``<speaker> said, "<text>"``), copied over and over with
the speakers' names drawn from a pool of 60 and every number redrawn, so no two copies are
alike (without the data set: generated turns from ``bench/chat_turns.py``'s templates).
Throughput has two phases, measured apart:

* record: ``record_many`` in batches of 500 (one notebook session per batch), through a
  notebook with no embedder, so no embedding competes with the writes;
* embed: the same file reopened with the default embedder (MiniLM) and ``nb.reindex()``,
  which embeds every moment (the model is loaded before the clock starts); every text is
  embedded, none reused.

Then, with 0 moments waiting for a vector (printed), one hybrid query builds the in-process
vector index from the stored vectors (timed), the wait for its background HNSW graph (built
above 50,000 vectors) is timed too, then 10 warm-up queries per mode, then ``--queries``
questions (LoCoMo questions with the names redrawn from the same pool, or generated ones),
each timed in lexical then hybrid mode (``nb.search(q, limit=10)``); the
hybrid time includes embedding the query. Reported: p50/p95/mean per size and mode against
the targets (p95 <= 20 ms lexical, <= 100 ms hybrid at 100k), and ratios. Dialogue-long
queries (issue 16: eight consecutive turns of the corpus, ``<speaker>: <text>`` a line) are
timed the same way, reported as ``lexical-dialogue`` and ``hybrid-dialogue`` (and read
whole, ``search.dialogue.turns=0``, interleaved, as ``<mode>-dialogue-whole``); the
questions once more without query coverage (``search.coverage.gain=0``), interleaved, as
``lexical-nocover`` and ``hybrid-nocover``, and without the speaker bonus
(``search.priors.speaker_bonus=0``) as ``<mode>-nospeaker``, and without the neighbours' share
(``search.spread.neighbour_share=0``) as ``<mode>-noneighbour``. With
``--lexical-only`` nothing is embedded and only the lexical modes are timed (for sizes too
large to embed on a shared machine).

    python bench/search_latency.py [--sizes 10000,100000] [--queries 200] [--limit 10]
        [--data ../shared/data/locomo/locomo-dev.json] [--seed 0] [--lexical-only]
        [--keep DIR]

With ``--keep DIR`` each size's notebook is kept there (``notebook-<size>.db``, recorded and
embedded) and a later run with the same ``--keep`` times a copy of it instead of recording
and embedding again: the search latency of a change, at 100k moments, in minutes.

100k moments take a while to embed (about 23 minutes on two cores); run it in the background:
``nohup .venv/bin/python bench/search_latency.py > latency.txt 2> latency.err &``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile
from agent_notebook import Notebook
from agent_notebook.config import NotebookConfig, SearchSettings
from agent_notebook.storage import open_backend

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared/data/locomo/locomo-dev.json"
BATCH = 500
WARMUP = 10
TARGET_P95_MS = {"lexical": 20.0, "hybrid": 100.0}
TARGET_SIZE = 100_000
POOL_NAMES = """
Caroline Melanie Jon Gina John Maria Joanna Nate Tim Audrey Andrew James Deborah Evan Sam
Calvin Dave Jolene Priya Tomas Aiko Olivier Fatima Sven Lena Marco Nina Omar Hana Lucas
Sofia Diego Mei Ravi Ingrid Kofi Elena Pablo Yuki Amara Felix Zoe Hugo Leila Mateo Astrid
Tariq Clara Jonas Noor Emil Rosa Viktor Ada Bruno Ines Kenji Maya Luca Freya
"""
POOL = POOL_NAMES.split()
DIGITS = re.compile(r"\d+")


# -- texts ------------------------------------------------------------------------------------


def redraw(text: str, names: dict[str, str], rng: random.Random) -> str:
    for old, new in names.items():
        text = text.replace(old, new)
    return DIGITS.sub(lambda m: str(rng.randint(10 ** (len(m[0]) - 1), 10 ** len(m[0]) - 1)), text)


def locomo_corpus(data: list[dict[str, Any]], rng: random.Random) -> Iterator[str]:
    """LoCoMo turns, conversation after conversation, forever, names and numbers redrawn."""
    while True:
        for conv in data:
            body = conv["conversation"]
            pair = rng.sample(POOL, 2)
            names = {body["speaker_a"]: pair[0], body["speaker_b"]: pair[1]}
            for key in sorted(k for k in body if re.fullmatch(r"session_\d+", k)):
                for turn in body[key]:
                    text = f'{turn["speaker"]} said, "{turn["text"]}"'
                    if caption := (turn.get("blip_caption") or "").strip():
                        text += f" and shared {caption}"
                    yield redraw(text, names, rng)


def locomo_questions(data: list[dict[str, Any]], n: int, rng: random.Random) -> list[str]:
    questions = [q["question"] for conv in data for q in conv["qa"]]
    # sorted: a set's order changes with PYTHONHASHSEED, and so would the names drawn
    speakers = sorted(
        {s for c in data for s in (c["conversation"]["speaker_a"], c["conversation"]["speaker_b"])}
    )
    return [
        redraw(q, {s: rng.choice(POOL) for s in speakers}, rng) for q in rng.sample(questions, n)
    ]


def dialogue_queries(texts: Iterator[str], n: int, turns: int = 8) -> list[str]:
    """Dialogue-long queries (issue 16): ``turns`` consecutive turns each, one a line, as
    ``<speaker>: <text>``."""
    queries = []
    for _ in range(n):
        lines = []
        for _ in range(turns):
            text = next(texts)
            speaker, _, said = text.partition(" said, ")
            lines.append(f"{speaker}: {said.strip(chr(34))}" if said else text)
        queries.append("\n".join(lines))
    return queries


def generated_corpus(rng: random.Random) -> Iterator[str]:
    from chat_turns import ANSWER_TEMPLATES, USER_TEMPLATES, _fill

    while True:
        for templates in (USER_TEMPLATES, ANSWER_TEMPLATES):
            yield " ".join(_fill(rng.choice(templates), rng) for _ in range(rng.randint(1, 3)))


def generated_questions(n: int, rng: random.Random) -> list[str]:
    from chat_turns import NAMES, NOUNS, PLACES

    forms = [
        "What did {name} say about the {noun}?",
        "When is the {noun} at {place}?",
        "Who sent the {noun} for {name}?",
        "Where did {name} leave the {noun}?",
    ]
    return [
        rng.choice(forms).format(
            name=rng.choice(NAMES), noun=rng.choice(NOUNS), place=rng.choice(PLACES)
        )
        for _ in range(n)
    ]


# -- one size ---------------------------------------------------------------------------------


@dataclass
class SizeResult:
    size: int
    record_s: float = 0.0
    embed_s: float = 0.0
    embed_first_10k_s: float | None = None
    unembedded: int = -1
    index_load_s: float = 0.0
    graph_build_s: float = 0.0
    approximate: bool = False
    #: Timed on a copy of a notebook kept by an earlier run (``--keep``): no ingest measured.
    reused: bool = False
    times: dict[str, list[float]] = field(default_factory=dict)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def copy_notebook(source: str | Path, target: str | Path) -> None:
    """A consistent copy of a SQLite notebook (the backup API: its WAL included)."""
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


def measure(
    size: int,
    texts: Iterator[str],
    questions: list[str],
    dialogues: list[str],
    limit: int,
    lexical_only: bool,
    keep: Path | None = None,
) -> SizeResult:
    result = SizeResult(size)
    kept = (
        None if keep is None else keep / f"notebook-{size}{'-lexical' if lexical_only else ''}.db"
    )
    with tempfile.TemporaryDirectory() as tmp:
        location = str(Path(tmp) / "notebook.db")
        if kept is not None and kept.exists():  # recorded (and embedded) by an earlier run
            log(f"{size}: timing a copy of {kept}")
            copy_notebook(kept, location)
            result.reused = True
            modes = ("lexical",) if lexical_only else ("lexical", "hybrid")
            nb = Notebook(open_backend(location), embedder=None if lexical_only else "default")
            result.unembedded = nb.unembedded() if not lexical_only else -1
            prepare(nb, result, questions[0], limit, lexical_only)
            timed(nb, result, questions, dialogues, limit, modes)
            nb.close()
            return result
        nb = Notebook(open_backend(location), embedder=None)
        start = datetime(2024, 1, 1, tzinfo=UTC)
        t0 = time.perf_counter()
        for first in range(0, size, BATCH):
            when = start + timedelta(hours=first // BATCH)
            session = nb.start_session(f"batch {first // BATCH}", started=when)
            drafts = [
                {"text": next(texts), "speaker": "user", "timestamp": when + timedelta(seconds=i)}
                for i in range(min(BATCH, size - first))
            ]
            nb.record_many(session.id, drafts)
            if (first + BATCH) % 10_000 == 0:
                log(f"{size}: recorded {first + BATCH}")
        result.record_s = time.perf_counter() - t0
        if lexical_only:  # nothing embedded: the lexical signal alone is timed
            if kept is not None:
                copy_notebook(location, kept)
            timed(nb, result, questions, dialogues, limit, ("lexical",))
            nb.close()
            return result
        nb.close()

        nb = Notebook(open_backend(location), embedder="default")
        semantic = nb.semantic
        if semantic is None:
            raise SystemExit("no embedder: see 'agent-notebook doctor' (hybrid needs MiniLM)")
        semantic.embedder.embed_documents(["warm up the model"])
        done = 0
        t0 = time.perf_counter()

        def progress(n: int) -> None:
            nonlocal done
            before, done = done, done + n
            if before < 10_000 <= done and result.embed_first_10k_s is None:
                result.embed_first_10k_s = (time.perf_counter() - t0) * 10_000 / done
            if before // 5000 != done // 5000:
                rate = done / (time.perf_counter() - t0)
                log(f"{size}: embedded {done} ({rate:.0f} moments/s)")

        nb.reindex(progress)
        result.embed_s = time.perf_counter() - t0
        result.unembedded = nb.unembedded()
        log(f"{size}: {result.unembedded} moments unembedded before timing")
        if kept is not None:
            copy_notebook(location, kept)
        prepare(nb, result, questions[0], limit, lexical_only)
        timed(nb, result, questions, dialogues, limit, ("lexical", "hybrid"))
        nb.close()
    return result


def prepare(nb: Notebook, result: SizeResult, query: str, limit: int, lexical_only: bool) -> None:
    """Before timing: one hybrid query builds the vector index (timed), then the wait for
    its background HNSW graph (timed too)."""
    if lexical_only or nb.semantic is None:
        return
    t0 = time.perf_counter()
    nb.search(query, limit=limit, mode="hybrid")  # builds the vector index
    result.index_load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    index = nb.semantic.index()
    index.wait_idle()  # above its exact limit, the index builds an HNSW graph first
    result.graph_build_s = time.perf_counter() - t0
    result.approximate = index.approximate


def timed(
    nb: Notebook,
    result: SizeResult,
    questions: list[str],
    dialogues: list[str],
    limit: int,
    modes: tuple[str, ...],
) -> None:
    """Warm up, then time each question in each mode, interleaved (noise hits all alike);
    the dialogue-long queries are timed as ``<mode>-dialogue``, and once more read whole
    (``search.dialogue.turns=0``: the whole dialogue embedded, its words ranked) as
    ``<mode>-dialogue-whole``; the questions once more without query coverage
    (``search.coverage.gain=0``) as ``<mode>-nocover``, without the speaker bonus
    (``search.priors.speaker_bonus=0``) as ``<mode>-nospeaker`` and without the neighbours'
    share (``search.spread.neighbour_share=0``) as ``<mode>-noneighbour``."""
    shipped = nb.config
    uncovered = NotebookConfig(search=SearchSettings(coverage_gain=0))
    anyone = NotebookConfig(search=SearchSettings(speaker_bonus=0))
    apart = NotebookConfig(search=SearchSettings(neighbour_share=0))
    whole = NotebookConfig(search=SearchSettings(dialogue_turns=0))
    for q in questions[:WARMUP] + dialogues[:WARMUP]:
        for mode in modes:
            nb.search(q, limit=limit, mode=mode)  # type: ignore[arg-type]
    # Each timed search starts cold: the SQLite backend remembers the rankings of the last
    # searches, and the next mode's search of the same query would reuse them.
    forget = getattr(nb.backend, "forget_rankings", lambda: None)
    configs = {
        "": (
            (shipped, ""),
            (uncovered, "-nocover"),
            (anyone, "-nospeaker"),
            (apart, "-noneighbour"),
        ),
        "-dialogue": ((shipped, ""), (whole, "-whole")),
    }
    for kind, queries in (("", questions), ("-dialogue", dialogues)):
        for i, q in enumerate(queries[WARMUP:]):
            # The first search of a query embeds it, the next reuse its vector: the order
            # of the configurations rotates query by query, so each pays alike.
            turn = i % len(configs[kind])
            rotated = configs[kind][turn:] + configs[kind][:turn]
            for mode in modes:
                for config, suffix in rotated:
                    nb.config = config
                    forget()
                    t1 = time.perf_counter()
                    nb.search(q, limit=limit, mode=mode)  # type: ignore[arg-type]
                    elapsed = time.perf_counter() - t1
                    result.times.setdefault(mode + kind + suffix, []).append(elapsed)
    nb.config = shipped


# -- report -----------------------------------------------------------------------------------


def report(results: list[SizeResult], source: str, n_queries: int, limit: int) -> None:
    print(
        f"corpus: {source}; {n_queries} timed queries per mode after {WARMUP} warm-up, "
        f"limit {limit}; SQLite (synchronous FULL) in a temporary directory"
    )
    print("\ningest throughput (moments/s)")
    print(
        f"{'moments':>8}  {'record':>8}  {'embed':>7}  {'embed first 10k':>15}  "
        f"{'record+embed':>12}  unembedded before timing"
    )
    for r in results:
        if r.reused:
            print(f"{r.size:>8}  (a notebook kept by an earlier run: ingest not measured)")
            continue
        first = f"{10_000 / r.embed_first_10k_s:15.0f}" if r.embed_first_10k_s else f"{'-':>15}"
        embed = f"{r.size / r.embed_s:7.0f}" if r.embed_s else f"{'-':>7}"  # --lexical-only
        print(
            f"{r.size:>8}  {r.size / r.record_s:8.0f}  {embed}  {first}  "
            f"{r.size / (r.record_s + r.embed_s):12.0f}  {r.unembedded}"
        )
    print("\nsearch latency (ms)")
    print(f"{'moments':>8}  {'mode':<8} {'p50':>7} {'p95':>7} {'mean':>7}  target p95 at 100k")
    for r in results:
        for mode, times in r.times.items():
            ms = [t * 1000 for t in times]
            p95 = percentile(ms, 0.95)
            target = TARGET_P95_MS.get(mode.split("-")[0], 0.0)
            verdict = ""
            if r.size == TARGET_SIZE:
                verdict = f"{'met' if p95 <= target else 'MISSED'} (<= {target:.0f})"
            print(
                f"{r.size:>8}  {mode:<8} {percentile(ms, 0.5):7.2f} {p95:7.2f} "
                f"{statistics.fmean(ms):7.2f}  {verdict}"
            )
        kind = "HNSW (approximate)" if r.approximate else "exact"
        if "hybrid" not in r.times:
            continue
        print(
            f"{'':>8}  vector index {kind}: the first hybrid query loads it in "
            f"{r.index_load_s * 1000:.0f} ms, then {r.graph_build_s:.1f} s waiting for its "
            "background graph build (before timing)"
        )
    print("\nratios of medians (p50)")
    for r in results:
        if "hybrid" in r.times:
            lex, hyb = (statistics.median(r.times[m]) for m in ("lexical", "hybrid"))
            print(f"  {r.size:>7} moments: hybrid / lexical {hyb / lex:5.2f}")
    if len(results) > 1:
        a, b = results[0], results[-1]
        for mode in sorted(set(a.times) & set(b.times)):
            ratio = statistics.median(b.times[mode]) / statistics.median(a.times[mode])
            print(
                f"  {mode:<8}: {b.size} / {a.size} moments {ratio:5.2f} "
                f"({b.size / a.size:.0f}x the moments)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)  # from /work/main
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--keep",
        type=Path,
        help="keep each size's notebook in this directory (notebook-<size>.db), and time a "
        "copy of it instead of recording and embedding again when it is there already",
    )
    parser.add_argument(
        "--lexical-only",
        action="store_true",
        help="embed nothing, time the lexical signal only (100k moments embed for hours here)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(args.seed)
    n = args.queries + WARMUP
    if args.data.exists():
        data = json.loads(args.data.read_text(encoding="utf-8"))
        source = "LoCoMo dev turns, names and numbers redrawn"
        questions = locomo_questions(data, n, rng)
    else:
        data = None
        source = "generated turns (bench/chat_turns.py templates); LoCoMo absent"
        questions = generated_questions(n, rng)
    results = []
    for size in sizes:
        text_rng = random.Random(args.seed + 1)  # the same texts for every size
        texts = locomo_corpus(data, text_rng) if data else generated_corpus(text_rng)
        log(f"{size}: recording")
        dialogues = dialogue_queries(
            locomo_corpus(data, random.Random(args.seed + 2)) if data else generated_corpus(rng), n
        )
        results.append(
            measure(size, texts, questions, dialogues, args.limit, args.lexical_only, args.keep)
        )
    report(results, source, args.queries, args.limit)


if __name__ == "__main__":
    sys.exit(main())
