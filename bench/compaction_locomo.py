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
by the rollups' body alone (the index line left out), and active tokens before and after.

``compaction.summary_ratio`` is scored over a grid (``--ratios``) and judged leave one
conversation out: for each conversation, the smallest ratio whose recall and strict recall
are both at least 90% of before on the other four (else the best sum of the two) is the one
it is scored with; the held-out figures are pooled. ``--beside REV`` runs the same bench on
the code of a git revision (its ``src``, default policy) in the same run, to print today's
compaction beside the new one.

    python bench/compaction_locomo.py [--data ../shared/data/locomo/locomo-dev.json]
        [--conversations conv-26,conv-30 | --limit-conversations N]
        [--embedder default|none] [--ratios default,0.2,0.25,0.3,0.35] [--beside e321f2e]

Skips cleanly (exit 0) when the data set is absent; it is never copied into this repository.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
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
from agent_notebook.embed import default_embedder
from agent_notebook.model import ROLLUP_INDEX_PREFIX, Moment
from agent_notebook.search.hits import SearchHit
from agent_notebook.storage import MemoryBackend, open_backend
from embed_cache import CachedEmbedder
from retrieval_locomo import DEFAULT_DATA, load_conversation, normalise_evidence

SHOWN_KS = (1, 3, 5, 10)
BUDGET = 1000  # tokens of hits an agent reads
TARGET_BUDGET_SHARE = 0.90  # (a) recall within BUDGET after / before
TARGET_SALIENT_KEPT = 0.80  # (b)
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


def measure(conversation: dict[str, Any], embedder: Any, ratio: float | None) -> dict[str, Any]:
    """One fresh notebook of ``conversation``: recall before and after compaction (default
    policy, ``summary_ratio`` ``ratio`` when given), salient items kept, tokens, time."""
    with tempfile.TemporaryDirectory() as tmp:
        nb = Notebook(open_backend(str(Path(tmp) / "notebook.db")), embedder=embedder)
        if ratio is not None:
            settings = nb.config.compaction.model_copy(update={"summary_ratio": ratio})
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
        seconds = time.perf_counter() - t0
        if nb.semantic is not None:
            nb.semantic.wait_idle()
            nb.reindex()  # the rollups are new moments
        after = recall(nb, qa, credit)
        kept = [0, 0, 0]
        for m in nb.backend.iter_moments():
            if m.rollup is not None:
                kept = [a + b for a, b in zip(kept, salient_kept(m, texts), strict=True)]
        nb.close()
    return {
        "before": [{str(k): v for k, v in q.items()} for q in before],
        "after": [{str(k): v for k, v in q.items()} for q in after],
        "salient": kept,
        "tokens": [report.tokens_before, report.tokens_after],
        "active": [report.active_before, report.active_after],
        "rollups": report.rollups,
        "archived": report.archived,
        "seconds": seconds,
    }


def pooled(runs: list[dict[str, Any]]) -> dict[str, float]:
    """The figures of ``runs`` (one per conversation) pooled over their questions."""
    before = [q for r in runs for q in r["before"]]
    after = [q for r in runs for q in r["after"]]
    salient = [sum(r["salient"][i] for r in runs) for i in range(3)]
    tokens = [sum(r["tokens"][i] for r in runs) for i in range(2)]
    return {
        "before": mean(before, str(BUDGET)),
        "after": mean(after, str(BUDGET)),
        "strict": mean(after, STRICT),
        "share": mean(after, str(BUDGET)) / max(1e-9, mean(before, str(BUDGET))),
        "strict_share": mean(after, STRICT) / max(1e-9, mean(before, STRICT)),
        "salient": salient[1] / max(1, salient[0]),
        "body": salient[2] / max(1, salient[0]),
        "items": salient[0],
        "tokens_before": tokens[0],
        "tokens_after": tokens[1],
        "reduction": tokens[0] / max(1, tokens[1]),
        "questions": len(before),
    }


def choose(runs: dict[float, list[dict[str, Any]]]) -> float:
    """The ratio to use, judged on ``runs`` (ratio -> its runs): the smallest whose recall
    within the budget and strict recall are both at least 90% of before, else the one with
    the best sum of the two."""
    figures = {r: pooled(v) for r, v in runs.items()}
    good = [r for r, f in figures.items() if min(f["share"], f["strict_share"]) >= 0.9]
    if good:
        return min(good)
    return max(figures, key=lambda r: figures[r]["share"] + figures[r]["strict_share"])


def line(name: str, f: dict[str, float]) -> str:
    return (
        f"{name:<34} {f['before']:5.1f} -> {f['after']:5.1f} ({f['share']:6.1%})"
        f"   strict {f['strict']:5.1f} ({f['strict_share']:6.1%})"
        f"   salient {f['salient']:6.1%} / body {f['body']:6.1%}"
        f"   tokens {f['tokens_before']:6d} -> {f['tokens_after']:6d} ({f['reduction']:.1f}x)"
    )


def beside(rev: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """This bench run on the code of revision ``rev`` (its ``src`` from git, in a temporary
    directory), default policy: today's compaction beside the new one, in one run."""
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(root), "archive", rev, "src"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        out = Path(tmp) / "runs.json"
        command = [sys.executable, __file__, "--data", str(args.data), "--ratios", "default"]
        command += ["--embedder", args.embedder, "--json-out", str(out)]
        if args.conversations:
            command += ["--conversations", args.conversations]
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "src")}
        subprocess.run(command, check=True, env=env)
        runs: list[dict[str, Any]] = json.loads(out.read_text())["default"]
        return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", default="", help="sample ids, comma-separated")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--embedder", choices=["default", "none"], default="default")
    parser.add_argument(
        "--ratios",
        default="default,0.2,0.25,0.3,0.35",
        help="compaction.summary_ratio values to score ('default': the setting's default); "
        "with more than one, each conversation is scored with the ratio chosen on the others",
    )
    parser.add_argument("--beside", default="", help="also run the code of this git revision")
    parser.add_argument("--json-out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (see ../shared/data/locomo/README.md)")
        return 0
    data = json.loads(args.data.read_text(encoding="utf-8"))
    if args.conversations:
        wanted = args.conversations.split(",")
        data = [c for c in data if c["sample_id"] in wanted]
    data = data[: args.limit_conversations]
    embedder: Any = None
    if args.embedder == "default" and (inner := default_embedder("default")) is not None:
        embedder = CachedEmbedder(inner)
    ratios = [None if r == "default" else float(r) for r in args.ratios.split(",")]
    runs: dict[float | None, list[dict[str, Any]]] = {r: [] for r in ratios}
    for conversation in data:
        for ratio in ratios:
            runs[ratio].append(measure(conversation, embedder, ratio))
        print(f"{conversation['sample_id']} done", file=sys.stderr)
    if embedder is not None:
        embedder.save()
    if args.json_out is not None:
        args.json_out.write_text(json.dumps({str(r or "default"): v for r, v in runs.items()}))
        return 0
    old = beside(args.beside, args) if args.beside else None
    default = Notebook(MemoryBackend(), embedder=None).config.compaction.summary_ratio
    names = [c["sample_id"] for c in data]
    print(
        f"LoCoMo dev, {len(data)} conversations ({', '.join(names)}), "
        f"{sum(len(c['qa']) for c in data)} questions; compacted with --now = last session "
        f"+ 365 days; extractive summarizer; search: "
        + ("hybrid (lexical + MiniLM vectors + concepts)" if embedder else "lexical + concepts")
    )
    print(
        f"recall within {BUDGET} tokens of hits, before -> after (after / before); strict: a "
        "rollup credited only with the turns whose words it keeps; salient items kept in the "
        "rollups' text / in their body (index line left out); active tokens"
    )
    print("per conversation:")
    for n, name in enumerate(names):
        if old is not None:
            print(line(f"  {name} today ({args.beside[:8]})", pooled([old[n]])))
        for ratio in ratios:
            label = f"ratio {ratio if ratio is not None else f'{default} (default)'}"
            print(line(f"  {name} {label}", pooled([runs[ratio][n]])))
    print("pooled, in sample:")
    if old is not None:
        print(line(f"  today ({args.beside[:8]})", pooled(old)))
    for ratio in ratios:
        label = f"ratio {ratio if ratio is not None else f'{default} (default)'}"
        print(line(f"  {label}", pooled(runs[ratio])))
    if len(ratios) > 1 and len(data) > 1:
        held, chosen = [], []
        for n in range(len(data)):
            others = {r: [v for i, v in enumerate(runs[r]) if i != n] for r in ratios}
            pick = choose(others)
            chosen.append(f"{names[n]}: {pick if pick is not None else default}")
            held.append(runs[pick][n])
        f = pooled(held)
        print(f"leave one conversation out (ratio chosen on the other four: {'; '.join(chosen)}):")
        print(line("  held out, pooled", f))
        share, strict = f["share"], f["strict_share"]
        print(
            f"(a) recall within {BUDGET} tokens after / before {share:.1%} "
            f"(target >= {TARGET_BUDGET_SHARE:.0%}: {verdict(share >= TARGET_BUDGET_SHARE)}); "
            f"strict {strict:.1%} ({verdict(strict >= TARGET_BUDGET_SHARE)})"
        )
        print(
            f"(b) salient items kept in the rollups' body: {f['body']:.1%} "
            f"(target >= {TARGET_SALIENT_KEPT:.0%}: {verdict(f['body'] >= TARGET_SALIENT_KEPT)})"
        )
    seconds = sum(r["seconds"] for v in runs.values() for r in v)
    print(
        f"compaction took {seconds:.1f} s in all ({len(ratios)} ratios x {len(data)} conversations)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
