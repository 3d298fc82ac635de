"""The search golden run: every hit, score and explanation of a fixed set of searches, as
JSON, so that a refactor of search can be checked to change nothing (issue 38).

One fresh notebook (SQLite in a temporary directory, lexical and the default offline
embedder, embedded at ``reindex``, not in the background) receives one LoCoMo conversation
(the first of ``../shared/data/locomo/locomo-dev.json``, read by
``agent_notebook.ingest.parse_file`` as ``agent-notebook ingest`` reads it) and one BEAM chat
(``../shared/data/beam/100K/1``, recorded as ``bench/retrieval_beam.py`` does). Every
question of both is then asked with ``nb.search(question, limit=10, mode=m)`` for each mode,
with the clock fixed (the recency and importance priors read it), and the hits are printed,
per query: moment id, score (``repr``), tier, covered words and the full ``explain``
mapping, as JSON with sorted keys.

How to check a change to search: run it before and after, and compare; the two outputs
must be byte-identical::

    PYTHONPATH=src .venv/bin/python bench/search_golden.py > /tmp/golden_before.json
    # ... the change ...
    PYTHONPATH=src .venv/bin/python bench/search_golden.py > /tmp/golden_after.json
    diff /tmp/golden_before.json /tmp/golden_after.json && echo identical

The output is deterministic (two runs of the same code print the same bytes): the script
runs itself again under ``PYTHONHASHSEED=0``, as the coverage step sums a hit's word
weights in the order of a set of strings, which moves the last bits of a score from one
process to the next under random string hashing. Exits 0
with a note on stderr, printing nothing, when a data set is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_notebook import Notebook
from agent_notebook.embed import default_embedder
from agent_notebook.ingest import parse_file
from agent_notebook.search import engine as search_engine
from agent_notebook.storage import open_backend

sys.path.insert(0, str(Path(__file__).parent))
from retrieval_beam import load as load_beam  # the chat loaded as that bench loads it

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
LOCOMO = SHARED / "locomo" / "locomo-dev.json"
BEAM_CHAT = SHARED / "beam" / "100K" / "1"
#: The clock of every search: the priors (recency, importance's decay) read it.
NOW = datetime(2026, 1, 1, tzinfo=UTC)
LIMIT = 10
#: Every search mode there is (as of issue 38).
MODES = ("hybrid", "lexical", "vector")


def questions() -> list[tuple[str, str]]:
    """(label, question) of the LoCoMo conversation, then of the BEAM chat."""
    conversation = json.loads(LOCOMO.read_text(encoding="utf-8"))[0]
    asked = [(f"locomo {i}", qa["question"]) for i, qa in enumerate(conversation["qa"])]
    probing = json.loads((BEAM_CHAT / "probing_questions.json").read_text(encoding="utf-8"))
    for ability in sorted(probing):
        for i, q in enumerate(probing[ability]):
            if q.get("question"):
                asked.append((f"beam {ability} {i}", q["question"][:9000]))
    return asked


def explained(hit: Any) -> dict[str, float]:
    """The hit's ``explain`` as the API serializes it (a mapping of names to floats)."""
    dumped: dict[str, float] = hit.model_dump()["explain"]
    return dumped


def main() -> int:
    argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Run before and after a change to search; diff the two outputs: they must "
        "be byte-identical (the issue 38 acceptance check 'search golden run "
        "byte-identical').",
    ).parse_args()
    if os.environ.get("PYTHONHASHSEED") != "0":  # see the docstring
        os.execve(
            sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"}
        )
    if not LOCOMO.is_file() or not (BEAM_CHAT / "chat.json").is_file():
        print("skipped: ../shared/data/locomo or ../shared/data/beam is absent", file=sys.stderr)
        return 0
    embedder = default_embedder()
    if embedder is None:
        print("the default embedder cannot run here: no golden run", file=sys.stderr)
        return 1
    search_engine.now_utc = lambda: NOW  # type: ignore[attr-defined]
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        locomo_file = Path(tmp) / "conversation.json"
        conversation = json.loads(LOCOMO.read_text(encoding="utf-8"))[0]
        locomo_file.write_text(json.dumps([conversation]), encoding="utf-8")
        nb = Notebook(
            open_backend(str(Path(tmp) / "nb.db")),
            embedder=embedder,
            background_embedding=False,
        )
        try:
            nb.ingest(parse_file(locomo_file, format="locomo"))
            load_beam(nb, json.loads((BEAM_CHAT / "chat.json").read_text(encoding="utf-8")))
            nb.reindex()
            for label, question in questions():
                for mode in MODES:
                    hits = nb.search(question, limit=LIMIT, mode=mode)  # type: ignore[arg-type]
                    out[f"{label} | {mode}"] = {
                        "query": question,
                        "hits": [
                            {
                                "id": h.moment.id,
                                "score": repr(h.score),
                                "tier": h.tier,
                                "covered": h.covered,
                                # in its order: the order the JSON of the HTTP API has
                                "explain": [[k, repr(v)] for k, v in explained(h).items()],
                                "explain_json": json.loads(h.model_dump_json())["explain"],
                            }
                            for h in hits
                        ],
                    }
        finally:
            nb.close()
    json.dump(out, sys.stdout, sort_keys=True, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
