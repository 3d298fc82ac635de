"""Retrieval on BEAM 100K (issue 31): the probing questions against their chat's messages.

Each chat (``../shared/data/beam/100K/<n>/chat.json``) is recorded into its own notebook
(SQLite in a temporary directory): each batch a session, dated by its ``time_anchor``, each
message a moment (the ``->-> b,t`` marker cut) with its id as ``source_id``. Each probing
question (``probing_questions.json``) is the query; its evidence is its ``source_chat_ids``
(a list, or every list of a dict). Recall@k = |evidence in the top k| / |evidence|,
averaged, per ability and in all, for BM25 and MiniLM alone (the raw question, none of the
ranking's additions), the lexical, vector and hybrid defaults, and the variants named.

    python bench/retrieval_beam.py [--chats 20] [--variants bm25,minilm,lexical,...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from agent_notebook import Notebook
from agent_notebook.config import NotebookConfig, SearchSettings
from agent_notebook.embed import default_embedder
from agent_notebook.storage import open_backend
from embed_cache import CachedEmbedder
from retrieval_locomo import PLAIN

BEAM = Path(__file__).resolve().parents[2] / "shared" / "data" / "beam" / "100K"
KS = (5, 10, 25)
#: name -> (mode, settings)
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "bm25": ("lexical", PLAIN),
    "minilm": ("vector", PLAIN),
    "lexical": ("lexical", {}),
    "vector": ("vector", {}),
    "hybrid": ("hybrid", {}),
    "hybrid-time0.05": ("hybrid", {"time_question_bonus": 0.05}),
    "hybrid-time0.1": ("hybrid", {"time_question_bonus": 0.1}),
    "hybrid-time0.2": ("hybrid", {"time_question_bonus": 0.2}),
}
DEFAULT = "bm25,minilm,lexical,vector,hybrid"


def anchor(value: str | None, fallback: datetime) -> datetime:
    if not value:
        return fallback
    try:
        return datetime.strptime(value, "%B-%d-%Y").replace(hour=9, tzinfo=UTC)
    except ValueError:
        return fallback


def load(nb: Notebook, batches: list[dict[str, Any]]) -> None:
    when = datetime(2024, 1, 1, 9, tzinfo=UTC)
    for b, batch in enumerate(batches):
        when = anchor(batch.get("time_anchor"), when + timedelta(days=1))
        session = nb.start_session(f"batch {b}", started=when)
        drafts = []
        for turn in batch["turns"]:
            for m in turn:
                said = anchor(m.get("time_anchor"), when)
                drafts.append(
                    {
                        "text": m["content"].split("->->")[0].strip() or "(empty)",
                        "speaker": m["role"],
                        "role": m["role"],
                        "timestamp": max(said, when) + timedelta(seconds=len(drafts)),
                        "source_id": str(m["id"]),
                    }
                )
        nb.record_many(session.id, drafts)


def evidence_of(question: dict[str, Any]) -> list[str]:
    ids = question.get("source_chat_ids") or []
    flat = [i for v in ids.values() for i in v] if isinstance(ids, dict) else ids
    return list(dict.fromkeys(str(i) for i in flat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--variants", default=DEFAULT)
    args = parser.parse_args()
    if not BEAM.exists():
        print("skipped: ../shared/data/beam is absent (see its README.md)")
        return
    names = args.variants.split(",")
    inner = default_embedder()
    embedder = CachedEmbedder(inner) if inner is not None else None
    paths = sorted(
        (p for p in BEAM.iterdir() if (p / "chat.json").is_file()), key=lambda p: int(p.name)
    )[: args.chats]
    # variant -> ability -> per question, k -> recall
    table: dict[str, dict[str, list[dict[int, float]]]] = {n: {} for n in names}
    started = time.perf_counter()
    questions = 0
    for path in paths:
        with tempfile.TemporaryDirectory() as tmp:
            nb = Notebook(open_backend(str(Path(tmp) / "nb.db")), embedder=embedder)
            load(nb, json.loads((path / "chat.json").read_text(encoding="utf-8")))
            nb.reindex()
            probing = json.loads((path / "probing_questions.json").read_text(encoding="utf-8"))
            for ability, items in probing.items():
                for q in items:
                    evidence = evidence_of(q)
                    if not evidence or not q.get("question"):
                        continue
                    questions += 1
                    for name in names:
                        mode, settings = VARIANTS[name]
                        nb.config = NotebookConfig(search=SearchSettings(**settings))
                        hits = nb.search(q["question"][:9000], limit=max(KS), mode=mode)  # type: ignore[arg-type]
                        found = [h.moment.source_id for h in hits]
                        recall = {
                            k: len(set(evidence) & set(found[:k])) / len(evidence) for k in KS
                        }
                        table[name].setdefault(ability, []).append(recall)
            nb.close()
    if embedder is not None:
        embedder.save()
    print(
        f"BEAM 100K: {len(paths)} chats, {questions} questions, {time.perf_counter() - started:.0f} s"
    )
    abilities = sorted({a for rows in table.values() for a in rows})
    print(f"\nR@5 / R@10 / R@25 per ability\n{'ability':<26}" + "".join(f"{n:>20}" for n in names))
    for ability in [*abilities, "all"]:
        cells = []
        for name in names:
            rows = (
                [r for a in abilities for r in table[name].get(a, [])]
                if ability == "all"
                else table[name].get(ability, [])
            )
            cells.append(
                "/".join(f"{100 * statistics.fmean(r[k] for r in rows):.1f}" for k in KS)
                if rows
                else "-"
            )
        print(f"{ability:<26}" + "".join(f"{c:>20}" for c in cells))


if __name__ == "__main__":
    main()
