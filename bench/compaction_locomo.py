"""Age-tiered compaction on LoCoMo (development split): active tokens and recall, before and
after.

For each conversation, one fresh notebook (SQLite in a temporary directory) receives its turns
with their real session dates, exactly as ``retrieval_locomo.py`` loads them (its helpers are
imported, not copied). Every question is asked raw to ``nb.search(question, limit=10)``
(hybrid; lexical and concepts alone with ``--embedder none``) and recall@k follows the published protocol
(``retrieval_locomo.recall_at``). Then ``nb.compact(now=<last session> + 365 days)`` applies
the default policy, the rollups are embedded, and the questions are asked again; a rollup
found counts as a hit for the turns in its lineage (``rollup.originals``), an original turn for
itself. Reported: active moments and tokens before and after, recall@1/3/5/10 before and after,
the share of the sources' identifiers, numbers, dates and names the summaries dropped (the
dropped-manifest rate, over every rollup made, at every level), and the times.

    python bench/compaction_locomo.py [--data ../shared/data/locomo/locomo-dev.json]
        [--limit-conversations N] [--embedder default|none]

Skips cleanly (exit 0) when the data set is absent; it is never copied into this repository.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from agent_notebook import Notebook
from agent_notebook.compaction import dropped_manifest
from agent_notebook.model import SearchHit
from agent_notebook.storage import open_backend
from retrieval_locomo import DEFAULT_DATA, load_conversation, normalise_evidence

SHOWN_KS = (1, 3, 5, 10)
#: Also reported: recall of the hits that fit this many tokens of context (whole, in rank
#: order; the first always counts), which compares originals and rollups at equal cost.
BUDGET = 1000
TARGET_REDUCTION = 5.0
TARGET_RECALL_SHARE = 0.85


def recall(
    nb: Notebook, qa: list[dict[str, Any]], dia_of: Callable[[SearchHit], list[str]]
) -> list[dict[int, float]]:
    """recall@k of every question: |evidence ∩ turns covered by the top k hits| / |evidence|
    (a rollup covers every turn of its lineage; empty evidence counts as 1)."""
    out = []
    for q in qa:
        evidence = set(normalise_evidence(q.get("evidence", [])))
        hits = nb.search(q["question"], limit=50)
        scores = {}
        for k in SHOWN_KS:
            covered = {d for hit in hits[:k] for d in dia_of(hit)}
            scores[k] = len(evidence & covered) / len(evidence) if evidence else 1.0
        used, within = 0, set()  # the hits, whole and in rank order, that fit the budget
        for hit in hits:
            used += nb.tokens.count(hit.moment.content.text)
            if used > BUDGET and within:
                break
            within.update(dia_of(hit))
        scores[BUDGET] = len(evidence & within) / len(evidence) if evidence else 1.0
        out.append(scores)
    return out


def lineage(dia: dict[str, str]) -> Callable[[SearchHit], list[str]]:
    """The dia_ids a hit stands for: an original turn's own, a rollup's whole lineage."""

    def dia_of(hit: SearchHit) -> list[str]:
        rollup = hit.moment.rollup
        ids = rollup.originals if rollup is not None else [hit.moment.id]
        return [dia[i] for i in ids if dia.get(i)]

    return dia_of


def mean(values: list[dict[int, float]], k: int) -> float:
    return 100 * sum(v[k] for v in values) / len(values) if values else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--embedder", choices=["default", "none"], default="default")
    args = parser.parse_args()
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (see ../shared/data/locomo/README.md)")
        return 0
    data = json.loads(args.data.read_text(encoding="utf-8"))[: args.limit_conversations]
    embedder: Any = "default" if args.embedder == "default" else None
    before_all: list[dict[int, float]] = []
    after_all: list[dict[int, float]] = []
    totals = dict.fromkeys(
        [
            "moments",
            "tokens",
            "active_after",
            "tokens_after",
            "salient",
            "dropped",
            "archived",
            "end_salient",
            "end_dropped",
        ],
        0,
    )
    levels = {"daily": 0, "weekly": 0, "monthly": 0}
    compact_s = 0.0
    rows = []
    for conversation in data:
        with tempfile.TemporaryDirectory() as tmp:
            nb = Notebook(open_backend(str(Path(tmp) / "notebook.db")), embedder=embedder)
            load_conversation(nb, conversation)
            if nb.semantic is not None:
                nb.semantic.wait_idle()
                nb.reindex()
            moments = list(nb.backend.iter_moments())
            dia = {m.id: m.source_id or "" for m in moments}
            texts = {m.id: m.content.text for m in moments}
            dia_of = lineage(dia)

            qa = conversation["qa"]
            before = recall(nb, qa, dia_of)
            last = max(m.timestamp for m in moments)
            t0 = time.perf_counter()
            report = nb.compact(now=last + timedelta(days=365), archive_dir=Path(tmp) / "archive")
            compact_s += time.perf_counter() - t0
            if nb.semantic is not None:
                nb.semantic.wait_idle()
                nb.reindex()  # the rollups are new moments
            after = recall(nb, qa, dia_of)
            for m in nb.backend.iter_moments():  # what the active set lost of the originals
                if m.rollup is not None:
                    lost, items = dropped_manifest(
                        [texts[i] for i in m.rollup.originals], m.content.text
                    )
                    totals["end_salient"] += items
                    totals["end_dropped"] += len(lost)
                elif m.id in texts:
                    totals["end_salient"] += len(dropped_manifest([m.content.text], "")[0])
            nb.close()
        before_all += before
        after_all += after
        for level, n in report.rollups.items():
            levels[level] += n
        totals["moments"] += report.active_before
        totals["tokens"] += report.tokens_before
        totals["active_after"] += report.active_after
        totals["tokens_after"] += report.tokens_after
        totals["salient"] += report.salient
        totals["dropped"] += report.dropped
        totals["archived"] += report.archived
        rows.append(
            f"{conversation['sample_id']:>8}  {report.active_before:5d} -> {report.active_after:3d}"
            f"  {report.tokens_before:6d} -> {report.tokens_after:5d}"
            f"  ({report.tokens_before / max(1, report.tokens_after):4.1f}x)"
            f"  R@10 {mean(before, 10):5.1f} -> {mean(after, 10):5.1f}"
            f"  dropped {report.dropped}/{report.salient}"
        )
        print(f"{conversation['sample_id']} done", file=sys.stderr)

    reduction = totals["tokens"] / max(1, totals["tokens_after"])
    share = mean(after_all, 10) / max(1e-9, mean(before_all, 10))
    print(
        f"LoCoMo dev, {len(data)} conversations, {len(before_all)} questions; compacted with "
        "--now = last session + 365 days, default policy, extractive summarizer; search: "
        + ("hybrid (lexical + MiniLM vectors + concepts)" if embedder else "lexical + concepts")
    )
    print("conversation  active moments  active tokens (reduction)  recall@10  dropped/salient")
    print("\n".join(rows))
    print(
        f"rollups made: {levels['daily']} daily, {levels['weekly']} weekly, "
        f"{levels['monthly']} monthly; {totals['archived']} originals archived; "
        f"compaction took {compact_s:.1f} s"
    )
    print(
        f"active moments: {totals['moments']} -> {totals['active_after']};  active tokens: "
        f"{totals['tokens']} -> {totals['tokens_after']} ({reduction:.1f}x fewer; "
        f"target >= {TARGET_REDUCTION:.0f}x: {'met' if reduction >= TARGET_REDUCTION else 'NOT met'})"
    )
    for k in SHOWN_KS:
        print(f"recall@{k:<2} before {mean(before_all, k):5.1f}   after {mean(after_all, k):5.1f}")
    print(
        f"recall within {BUDGET} tokens of hits   before {mean(before_all, BUDGET):5.1f}   "
        f"after {mean(after_all, BUDGET):5.1f}"
    )
    print(
        f"recall@10 after / before: {share:.1%} (target >= {TARGET_RECALL_SHARE:.0%}: "
        f"{'met' if share >= TARGET_RECALL_SHARE else 'NOT met'})"
    )
    rate = totals["dropped"] / max(1, totals["salient"])
    print(
        f"dropped-manifest rate, per rollup step: {totals['dropped']}/{totals['salient']} = "
        f"{rate:.1%} of the identifiers, numbers, dates and names of each rollup's direct "
        "sources (all levels, as kept in the manifests)"
    )
    end = totals["end_dropped"] / max(1, totals["end_salient"])
    print(
        f"dropped end to end: {totals['end_dropped']}/{totals['end_salient']} = {end:.1%} of "
        "those of the original turns are in no active rollup's text (they stay in the archive)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
