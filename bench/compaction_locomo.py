"""Age-tiered compaction on LoCoMo (development split): what an agent still gets after it.

For each conversation, one fresh notebook (SQLite in a temporary directory) receives its turns
with their real session dates, exactly as ``retrieval_locomo.py`` loads them (its helpers are
imported, not copied). Every question is asked raw to ``nb.search`` (hybrid; lexical and
concepts alone with ``--embedder none``). Then ``nb.compact(now=<last session> + 365 days)``
applies the default policy, the rollups are embedded, and the questions are asked again.

The headline, two numbers that a compaction which keeps less than it should fails:

(a) **recall within 1,000 tokens**: the hits an agent can read whole in 1,000 tokens of
    context, in rank order (the first always counts), and the evidence turns they cover; a
    rollup covers the turns of its lineage. After / before, target >= 90%. A top 10 of
    rollups covers most of a conversation, so recall@k credits nothing; a budget makes a big
    rollup pay for what it covers.
(b) **salient items kept**: the identifiers, numbers, dates and names of the compacted turns
    (``compaction.dropped_manifest``: whole words, ``16`` is not kept by ``2016``) found in
    the text of the active rollup over them. Target >= 80%.

Also reported, without a target: the same recall crediting a rollup only with the evidence
turns whose words it keeps (at least half of their content words), the salient items kept
by the summary's sentences alone (the index line left out), recall@k, active moments and
tokens before and after, and the times.

Tuning: the summarizer's constants were set on conv-41, conv-42 and conv-43; report on the
held-out conv-26 and conv-30 (``--conversations conv-26,conv-30``).

    python bench/compaction_locomo.py [--data ../shared/data/locomo/locomo-dev.json]
        [--conversations conv-26,conv-30 | --limit-conversations N]
        [--embedder default|none] [--summary-ratio 0.15]

Skips cleanly (exit 0) when the data set is absent; it is never copied into this repository.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from agent_notebook import Notebook
from agent_notebook.compaction import dropped_manifest
from agent_notebook.core.enrich import STOPWORDS
from agent_notebook.model import ROLLUP_INDEX_PREFIX, Moment
from agent_notebook.search.hits import SearchHit
from agent_notebook.storage import open_backend
from retrieval_locomo import DEFAULT_DATA, load_conversation, normalise_evidence

SHOWN_KS = (1, 3, 5, 10)
BUDGET = 1000  # tokens of hits an agent reads
TARGET_BUDGET_SHARE = 0.90  # (a) recall within BUDGET after / before
TARGET_SALIENT_KEPT = 0.80  # (b)
TARGET_REDUCTION = 5.0
KEEPS_A_TURN = 0.5  # the share of a turn's content words a rollup must hold to be credited
_CONTENT_WORD = re.compile(r"[^\W\d_][\w'-]{2,}")
STRICT = "strict"  # the key of recall within BUDGET crediting only what a rollup keeps


def content_words(text: str) -> set[str]:
    return {w for w in map(str.casefold, _CONTENT_WORD.findall(text)) if w not in STOPWORDS}


@dataclass
class Credit:
    """What a hit gives an agent: the turns it stands for (an original turn its own, a rollup
    its lineage) and the turns whose words it holds (strictly)."""

    dia: dict[str, str]  # moment id -> dia_id
    words: dict[str, set[str]]  # original moment id -> its content words
    _cache: dict[str, tuple[set[str], set[str]]] = field(default_factory=dict)

    def of(self, hit: SearchHit) -> tuple[set[str], set[str]]:
        moment = hit.moment
        if moment.id not in self._cache:
            if moment.rollup is None:
                own = {self.dia[moment.id]} if self.dia.get(moment.id) else set()
                self._cache[moment.id] = (own, own)
            else:
                held = content_words(moment.content.text)
                lineage = [i for i in moment.rollup.originals if self.dia.get(i)]
                kept = {
                    self.dia[i]
                    for i in lineage
                    if len(self.words[i] & held) >= KEEPS_A_TURN * len(self.words[i])
                }
                self._cache[moment.id] = ({self.dia[i] for i in lineage}, kept)
        return self._cache[moment.id]


def recall(nb: Notebook, qa: list[dict[str, Any]], credit: Credit) -> list[dict[Any, float]]:
    """Per question: recall@k (a rollup covering its lineage), recall within ``BUDGET``
    tokens of hits (key ``BUDGET``), and the same crediting strictly (key ``STRICT``);
    empty evidence counts as 1."""
    out = []
    for q in qa:
        evidence = set(normalise_evidence(q.get("evidence", [])))

        def share(covered: set[str], evidence: set[str] = evidence) -> float:
            return len(evidence & covered) / len(evidence) if evidence else 1.0

        hits = nb.search(q["question"], limit=50)
        scores: dict[Any, float] = {}
        for k in SHOWN_KS:
            scores[k] = share({d for hit in hits[:k] for d in credit.of(hit)[0]})
        used, within, strict = 0, set(), set()  # the hits, whole and in rank order, that fit
        for hit in hits:
            used += nb.tokens.count(hit.moment.content.text)
            if used > BUDGET and within:
                break
            lineage, kept = credit.of(hit)
            within |= lineage
            strict |= kept
        scores[BUDGET] = share(within)
        scores[STRICT] = share(strict)
        out.append(scores)
    return out


def mean(values: list[dict[Any, float]], k: Any) -> float:
    return 100 * sum(v[k] for v in values) / len(values) if values else 0.0


def salient_kept(rollup: Moment, texts: dict[str, str]) -> tuple[int, int, int]:
    """The salient items of the rollup's original turns, those its text keeps, and those
    its summary keeps without the index line."""
    assert rollup.rollup is not None
    sources = [texts[i] for i in rollup.rollup.originals if i in texts]
    text = rollup.content.text
    lost, items = dropped_manifest(sources, text)
    body = "\n".join(x for x in text.splitlines() if not x.startswith(ROLLUP_INDEX_PREFIX))
    lost_by_body, _ = dropped_manifest(sources, body)
    return items, items - len(lost), items - len(lost_by_body)


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", default="", help="sample ids, comma-separated")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--embedder", choices=["default", "none"], default="default")
    parser.add_argument(
        "--summary-ratio", type=float, default=None, help="compaction.summary_ratio (0.15)"
    )
    args = parser.parse_args()
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (see ../shared/data/locomo/README.md)")
        return 0
    data = json.loads(args.data.read_text(encoding="utf-8"))
    if args.conversations:
        wanted = args.conversations.split(",")
        data = [c for c in data if c["sample_id"] in wanted]
    data = data[: args.limit_conversations]
    embedder: Any = "default" if args.embedder == "default" else None
    before_all: list[dict[Any, float]] = []
    after_all: list[dict[Any, float]] = []
    totals = dict.fromkeys(["moments", "tokens", "active_after", "tokens_after", "archived"], 0)
    salient = [0, 0, 0]  # items, kept by the text, kept by the summary without its index
    levels = {"daily": 0, "weekly": 0, "monthly": 0}
    compact_s = 0.0
    rows = []
    for conversation in data:
        with tempfile.TemporaryDirectory() as tmp:
            nb = Notebook(open_backend(str(Path(tmp) / "notebook.db")), embedder=embedder)
            if args.summary_ratio is not None:
                settings = nb.config.compaction.model_copy(
                    update={"summary_ratio": args.summary_ratio}
                )
                nb.config = nb.config.model_copy(update={"compaction": settings})
            load_conversation(nb, conversation)
            if nb.semantic is not None:
                nb.semantic.wait_idle()
                nb.reindex()
            moments = list(nb.backend.iter_moments())
            texts = {m.id: m.content.text for m in moments}
            credit = Credit(
                {m.id: m.source_id or "" for m in moments},
                {m.id: content_words(m.content.text) for m in moments},
            )
            qa = conversation["qa"]
            before = recall(nb, qa, credit)
            last = max(m.timestamp for m in moments)
            t0 = time.perf_counter()
            report = nb.compact(now=last + timedelta(days=365), archive_dir=Path(tmp) / "archive")
            compact_s += time.perf_counter() - t0
            if nb.semantic is not None:
                nb.semantic.wait_idle()
                nb.reindex()  # the rollups are new moments
            after = recall(nb, qa, credit)
            kept = [0, 0, 0]
            for m in nb.backend.iter_moments():
                if m.rollup is not None:
                    kept = [a + b for a, b in zip(kept, salient_kept(m, texts), strict=True)]
            nb.close()
        salient = [a + b for a, b in zip(salient, kept, strict=True)]
        before_all += before
        after_all += after
        for level, n in report.rollups.items():
            levels[level] += n
        totals["moments"] += report.active_before
        totals["tokens"] += report.tokens_before
        totals["active_after"] += report.active_after
        totals["tokens_after"] += report.tokens_after
        totals["archived"] += report.archived
        rows.append(
            f"{conversation['sample_id']:>8}  {report.active_before:5d} -> {report.active_after:3d}"
            f"  {report.tokens_before:6d} -> {report.tokens_after:5d}"
            f"  ({report.tokens_before / max(1, report.tokens_after):4.1f}x)"
            f"  {mean(before, BUDGET):5.1f} -> {mean(after, BUDGET):5.1f}"
            f"  {kept[1]}/{kept[0]}"
        )
        print(f"{conversation['sample_id']} done", file=sys.stderr)

    reduction = totals["tokens"] / max(1, totals["tokens_after"])
    budget_share = mean(after_all, BUDGET) / max(1e-9, mean(before_all, BUDGET))
    kept_share = salient[1] / max(1, salient[0])
    print(
        f"LoCoMo dev, {len(data)} conversations ({', '.join(c['sample_id'] for c in data)}), "
        f"{len(before_all)} questions; compacted with --now = last session + 365 days, "
        + (
            "default policy"
            if args.summary_ratio is None
            else f"summary_ratio {args.summary_ratio}"
        )
        + ", extractive summarizer; search: "
        + ("hybrid (lexical + MiniLM vectors + concepts)" if embedder else "lexical + concepts")
    )
    print(
        f"conversation  active moments  active tokens (reduction)  recall within {BUDGET} "
        "tokens  salient kept"
    )
    print("\n".join(rows))
    print(
        f"(a) recall within {BUDGET} tokens of hits: before {mean(before_all, BUDGET):5.1f}   "
        f"after {mean(after_all, BUDGET):5.1f}   after / before {budget_share:.1%} "
        f"(target >= {TARGET_BUDGET_SHARE:.0%}: {verdict(budget_share >= TARGET_BUDGET_SHARE)})"
    )
    print(
        f"    the same, a rollup credited only with the turns whose words it keeps (what the "
        f"agent reads): before {mean(before_all, STRICT):5.1f}   "
        f"after {mean(after_all, STRICT):5.1f}"
    )
    print(
        f"(b) salient items of the compacted turns in an active rollup's text: "
        f"{salient[1]}/{salient[0]} = {kept_share:.1%} "
        f"(target >= {TARGET_SALIENT_KEPT:.0%}: {verdict(kept_share >= TARGET_SALIENT_KEPT)})"
    )
    print(
        f"active moments: {totals['moments']} -> {totals['active_after']};  active tokens: "
        f"{totals['tokens']} -> {totals['tokens_after']} ({reduction:.1f}x fewer; "
        f"target >= {TARGET_REDUCTION:.0f}x: {verdict(reduction >= TARGET_REDUCTION)})"
    )
    print("without a target:")
    print(
        f"  salient items kept by the summaries without their index line: "
        f"{salient[2]}/{salient[0]} = {salient[2] / max(1, salient[0]):.1%}"
    )
    for k in SHOWN_KS:
        note = "   (a rollup covers its whole lineage: this credits nothing)" * (k == SHOWN_KS[-1])
        print(
            f"  recall@{k:<2} before {mean(before_all, k):5.1f}   "
            f"after {mean(after_all, k):5.1f}{note}"
        )
    print(
        f"  rollups made: {levels['daily']} daily, {levels['weekly']} weekly, "
        f"{levels['monthly']} monthly; {totals['archived']} originals archived; "
        f"compaction took {compact_s:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
