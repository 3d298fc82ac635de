"""Recall of a user's past memory from the dialogue so far, on made-up dev cases.

``bench/data/dialogue_memory.json`` holds short memory events (a scene, an emotion, a
date) and dialogues (speaker-tagged, 70-110 distinct stems) each with the memories it should
recall, some of them only by the situation (a success recalls a past celebration). Each
memory is recorded at its date into one notebook (SQLite in a temporary directory); each
dialogue, whole, is the query (``nb.search(query, limit=10, mode=...)``). Reported:
R@5 and R@10 per variant (recall = relevant in top k / relevant, averaged), beside the plain
signals (BM25, MiniLM alone) from the same run. The cases are few and written by the
project: a smoke test of the shape, not a benchmark to tune on.

    python bench/dialogue_memory.py [--data bench/data/dialogue_memory.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from agent_notebook import Notebook
from agent_notebook.config import NotebookConfig, SearchSettings
from agent_notebook.embed import default_embedder
from agent_notebook.search.lexical import terms
from agent_notebook.storage import open_backend
from embed_cache import CachedEmbedder
from retrieval_locomo import PLAIN

DEFAULT_DATA = Path(__file__).parent / "data" / "dialogue_memory.json"
VARIANTS: list[tuple[str, str, dict[str, Any]]] = [
    ("bm25", "lexical", PLAIN),
    ("minilm", "vector", PLAIN),
    ("lexical", "lexical", {}),
    ("vector", "vector", {}),
    ("hybrid", "hybrid", {}),
    ("hybrid-no-latest", "hybrid", {"latest_turn_weight": 0}),
    ("hybrid-latest2", "hybrid", {"latest_turns": 2}),
    ("hybrid-latest-w2", "hybrid", {"latest_turn_weight": 2}),
    ("vector-no-latest", "vector", {"latest_turn_weight": 0}),
    ("vector-latest-0.5", "vector", {"latest_turn_weight": 0.5}),
    ("hybrid-lex0.5", "hybrid", {"lexical_weight": 0.5}),
    ("hybrid-no-latest-lex0.5", "hybrid", {"lexical_weight": 0.5, "latest_turn_weight": 0}),
    ("hybrid-no-content", "hybrid", {"content_match": False}),
    ("hybrid-no-concepts", "hybrid", {"concept_weight": 0}),
    ("hybrid-lex0.25", "hybrid", {"lexical_weight": 0.25}),
    ("hybrid-lex0.25-nolatest", "hybrid", {"lexical_weight": 0.25, "latest_turn_weight": 0}),
    ("hybrid-lex0", "hybrid", {"lexical_weight": 0.0}),
    ("hybrid-long-off", "hybrid", {"long_query_terms": 0}),
    ("hybrid-long10", "hybrid", {"long_query_terms": 10}),
    ("hybrid-long10-vlatest0", "hybrid", {"long_query_terms": 10, "latest_turn_weight": 0}),
    ("hybrid-no-session", "hybrid", {"session_share": 0}),
    ("hybrid-spread0.8", "hybrid", {"session_decay": 0.8, "session_free": 3}),
    ("hybrid-no-coverage", "hybrid", {"coverage_gain": 0}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    cases = json.loads(args.data.read_text(encoding="utf-8"))
    inner = default_embedder()
    embedder = CachedEmbedder(inner) if inner is not None else None
    with tempfile.TemporaryDirectory() as tmp:
        nb = Notebook(open_backend(str(Path(tmp) / "memories.db")), embedder=embedder)
        session = nb.start_session("memories", started=datetime(2015, 1, 1, tzinfo=UTC))
        ids: dict[str, str] = {}
        for memory in cases["memories"]:
            when = datetime.fromisoformat(memory["date"]).replace(hour=12, tzinfo=UTC)
            ids[nb.record(session.id, memory["text"], speaker="User", timestamp=when).id] = memory[
                "id"
            ]
        nb.reindex()
        stems = [len(set(terms(" ".join(d["turns"])))) for d in cases["dialogues"]]
        print(
            f"{len(cases['memories'])} memories, {len(cases['dialogues'])} dialogues of "
            f"{min(stems)}-{max(stems)} distinct stems; embedder: "
            f"{embedder.model_id if embedder else 'none'}\n"
        )
        print(f"{'variant':<20} {'R@5':>5} {'R@10':>5}  settings")
        for name, mode, settings in VARIANTS:
            if mode == "vector" and nb.semantic is None:
                continue
            nb.config = NotebookConfig(search=SearchSettings(**settings))
            recalls = {5: [], 10: []}  # type: dict[int, list[float]]
            for dialogue in cases["dialogues"]:
                query = "\n".join(dialogue["turns"])
                found = [ids[h.moment.id] for h in nb.search(query, limit=10, mode=mode)]
                for k in recalls:
                    hit = set(found[:k]) & set(dialogue["relevant"])
                    recalls[k].append(len(hit) / len(dialogue["relevant"]))
            r5, r10 = (100 * sum(v) / len(v) for v in recalls.values())
            print(
                f"{name:<20} {r5:5.1f} {r10:5.1f}  {settings if settings is not PLAIN else 'plain'}"
            )
        nb.close()
    if embedder is not None:
        embedder.save()


if __name__ == "__main__":
    sys.exit(main())
