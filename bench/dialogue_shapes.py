"""Should a dialogue query read its latest turns, or the whole dialogue? Measured on LoCoMo
and BEAM dialogues (issue 31), not on cases written for the reading.

Each conversation is recorded whole into one notebook (LoCoMo: its sessions' turns as
``retrieval_locomo`` records them; BEAM 100K: each batch a session, each message a moment).
The queries are windows of the conversation itself, pasted as a dialogue in the shape the
held-out sets use (``[BEGIN DIALOGUE]`` / ``<Name>: "text"`` / ``[END DIALOGUE]``); the target
is a turn that holds a question's evidence (the LoCoMo ``qa`` evidence, the BEAM probing
questions' ``source_chat_ids``), and the window's own turns are excluded from the results:

* ``around``: the three turns before the target and the three after it: the target is
  what the dialogue around it is about;
* ``before``: the six turns before it: the target is what the dialogue leads to.

Variants (``nb.search(limit=10)``): the shipped dialogue reading (the user's or last
speaker's latest turns embedded with the exchange around them, lexical off, ``min_score``
lowered to ``dialogue_min_score``), the same without that bar, the whole dialogue (the
reading of any query of several lines: its whole text and its last line), the whole
dialogue without its tags (``clean``), beside BM25 and MiniLM alone on the raw text.
Reported: R@5 / R@10 per data set and task; the leave-one-data-set-out choice among each
mode's readings (chosen by R@5 + R@10 on the other data set, counted on this one).

    python bench/dialogue_shapes.py [--per-conversation 60] [--beam-chats 20]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from agent_notebook import Notebook
from agent_notebook.config import NotebookConfig, SearchSettings
from agent_notebook.embed import default_embedder
from agent_notebook.search.query import turns
from agent_notebook.storage import open_backend
from embed_cache import CachedEmbedder
from retrieval_locomo import (
    DEFAULT_DATA,
    PLAIN,
    SESSION_KEY,
    load_conversation,
    normalise_evidence,
)

BEAM = Path(__file__).resolve().parents[2] / "shared" / "data" / "beam" / "100K"
RAW = {**PLAIN, "dialogue_turns": 0}
#: (name, mode, settings, how the query is pasted: "tagged" or "clean")
VARIANTS: list[tuple[str, str, dict[str, Any], str]] = [
    ("bm25", "lexical", RAW, "tagged"),
    ("minilm", "vector", RAW, "tagged"),
    ("vector-latest", "vector", {}, "tagged"),
    ("vector-latest-min0", "vector", {"dialogue_min_score": 0.0}, "tagged"),
    ("vector-whole", "vector", {"dialogue_turns": 0}, "tagged"),
    ("vector-clean", "vector", {"dialogue_turns": 0}, "clean"),
    ("hybrid-latest", "hybrid", {}, "tagged"),
    ("hybrid-latest-min0", "hybrid", {"dialogue_min_score": 0.0}, "tagged"),
    ("hybrid-whole", "hybrid", {"dialogue_turns": 0}, "tagged"),
    ("hybrid-clean", "hybrid", {"dialogue_turns": 0}, "clean"),
]
TASKS = ("around", "before")
#: A pasted turn keeps its first this many words (BEAM's answers run to 2,000; a query is
#: at most 10,000 characters).
TURN_WORDS = 120
#: One conversation's turns, in order: (source id, speaker, text).
Turns = list[tuple[str, str, str]]


def pasted(window: Turns) -> str:
    body = [f'<{speaker}>: "{" ".join(text.split()[:TURN_WORDS])}"' for _, speaker, text in window]
    return "\n".join(["[BEGIN DIALOGUE]", *body, "[END DIALOGUE]"])


def windows(order: Turns, targets: list[str], task: str) -> list[tuple[str, list[str]]]:
    """(the target, the window's ids) for each target with a full window."""
    at = {sid: i for i, (sid, _, _) in enumerate(order)}
    out = []
    for target in targets:
        i = at.get(target)
        if i is None:
            continue
        span = range(i - 3, i + 4) if task == "around" else range(i - 6, i)
        if span.start < 0 or span.stop > len(order):
            continue
        out.append((target, [order[j][0] for j in span if j != i]))
    return out


def locomo(per_conversation: int) -> list[tuple[Callable[[Notebook], None], Turns, list[str]]]:
    rng = random.Random(31)
    out = []
    for conversation in json.loads(DEFAULT_DATA.read_text(encoding="utf-8")):
        body = conversation["conversation"]
        sessions = sorted(
            (int(m[1]), k) for k in body if (m := SESSION_KEY.fullmatch(k)) and body[k]
        )
        order = [(t["dia_id"], t["speaker"], t["text"]) for _, k in sessions for t in body[k]]
        evidence = {e for q in conversation["qa"] for e in normalise_evidence(q["evidence"])}
        targets = sorted(evidence)
        rng.shuffle(targets)
        out.append(
            (
                lambda nb, c=conversation: load_conversation(nb, c),
                order,
                targets[:per_conversation],
            )
        )
    return out


def beam(
    chats: int, per_conversation: int
) -> list[tuple[Callable[[Notebook], None], Turns, list[str]]]:
    rng = random.Random(31)
    out = []
    paths = sorted(
        (p for p in BEAM.iterdir() if (p / "chat.json").is_file()), key=lambda p: int(p.name)
    )
    for path in paths[:chats]:
        batches = json.loads((path / "chat.json").read_text(encoding="utf-8"))
        order: Turns = []
        for batch in batches:
            for turn in batch["turns"]:
                for m in turn:
                    text = m["content"].split("->->")[0].strip()
                    order.append((str(m["id"]), m["role"].capitalize(), text))
        questions = json.loads((path / "probing_questions.json").read_text(encoding="utf-8"))
        evidence: set[str] = set()
        for items in questions.values():
            for q in items:
                ids = q.get("source_chat_ids") or []
                flat = [i for v in ids.values() for i in v] if isinstance(ids, dict) else ids
                evidence.update(str(i) for i in flat)
        targets = sorted(evidence)
        rng.shuffle(targets)

        def load(nb: Notebook, batches: list[dict[str, Any]] = batches) -> None:
            start = datetime(2024, 1, 1, tzinfo=UTC)
            for b, batch in enumerate(batches):
                session = nb.start_session(f"batch {b}", started=start + timedelta(days=7 * b))
                drafts = []
                for turn in batch["turns"]:
                    for m in turn:
                        drafts.append(
                            {
                                "text": m["content"].split("->->")[0].strip(),
                                "speaker": m["role"].capitalize(),
                                "timestamp": session.started + timedelta(seconds=len(drafts)),
                                "source_id": str(m["id"]),
                            }
                        )
                nb.record_many(session.id, drafts)

        out.append((load, order, targets[:per_conversation]))
    return out


def run(
    name: str,
    conversations: list[tuple[Callable[[Notebook], None], Turns, list[str]]],
    embedder: Any,
) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """Per (task, variant), per query, (hit in the top 5, in the top 10)."""
    table: dict[tuple[str, str], list[tuple[float, float]]] = {}
    started = time.perf_counter()
    queries = 0
    for load, order, targets in conversations:
        with tempfile.TemporaryDirectory() as tmp:
            nb = Notebook(open_backend(str(Path(tmp) / "nb.db")), embedder=embedder)
            load(nb)
            nb.reindex()
            by_source = {}
            for moment in nb.moments(limit=None):
                by_source[moment.source_id] = moment.id
            for task in TASKS:
                for target, window in windows(order, targets, task):
                    turns_of = [t for t in order if t[0] in set(window)]
                    tagged = pasted(turns_of)
                    clean = "\n".join(turns(tagged))
                    exclude = [by_source[w] for w in window if w in by_source]
                    queries += 1
                    for variant, mode, settings, shape in VARIANTS:
                        nb.config = NotebookConfig(search=SearchSettings(**settings))
                        hits = nb.search(
                            tagged if shape == "tagged" else clean,
                            limit=10,
                            mode=mode,  # type: ignore[arg-type]
                            exclude=exclude,
                        )
                        found = [h.moment.source_id for h in hits]
                        table.setdefault((task, variant), []).append(
                            (float(target in found[:5]), float(target in found[:10]))
                        )
            nb.close()
    if hasattr(embedder, "save"):
        embedder.save()
    print(
        f"{name}: {len(conversations)} conversations, {queries} windows, {time.perf_counter() - started:.0f} s"
    )
    return table


def pct(rows: list[tuple[float, float]]) -> str:
    if not rows:
        return "  -  /  -  "
    return f"{100 * statistics.fmean(r[0] for r in rows):5.1f} / {100 * statistics.fmean(r[1] for r in rows):5.1f}"


def fit(rows: list[tuple[float, float]]) -> float:
    return statistics.fmean(r[0] + r[1] for r in rows) if rows else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-conversation", type=int, default=60)
    parser.add_argument("--beam-chats", type=int, default=20)
    args = parser.parse_args()
    if not DEFAULT_DATA.exists() or not BEAM.exists():
        print("skipped: ../shared/data/locomo or ../shared/data/beam is absent")
        return
    inner = default_embedder()
    embedder = CachedEmbedder(inner) if inner is not None else None
    tables = {
        "LoCoMo": run("LoCoMo", locomo(args.per_conversation), embedder),
        "BEAM": run("BEAM", beam(args.beam_chats, args.per_conversation // 2), embedder),
    }
    print('\nR@5 / R@10 (the target turn in the top k), windows pasted as <Name>: "..."\n')
    print(f"{'variant':<22}" + "".join(f"{d + ' ' + t:>18}" for d in tables for t in TASKS))
    for variant, *_ in VARIANTS:
        print(
            f"{variant:<22}"
            + "".join(f"{pct(tables[d][(t, variant)]):>18}" for d in tables for t in TASKS)
        )
    print("\nleave-one-data-set-out: each mode's reading chosen on the other data set (both tasks)")
    for mode in ("vector", "hybrid"):
        names = [v for v, m, _, _ in VARIANTS if m == mode and v not in ("bm25", "minilm")]
        for held in tables:
            other = next(d for d in tables if d != held)
            best = max(names, key=lambda v: sum(fit(tables[other][(t, v)]) for t in TASKS))
            cells = "  ".join(f"{t} {pct(tables[held][(t, best)])}" for t in TASKS)
            print(f"  {mode:<7} {held:<7} chosen on {other:<7}: {best:<20} {cells}")


if __name__ == "__main__":
    main()
