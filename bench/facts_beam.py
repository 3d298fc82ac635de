"""What the fact rules find, measured (issue 30).

1. The labelled cases (tests/facts/cases.yaml): precision and recall per kind of finding
   (decisions, pending items, closures, repeats, supersession, contradictions, expiry).
2. BEAM's development chats (../shared/data/beam/100K, skipped when absent), every message
   fed to the engine in order, no vectors unless ``--vectors``:
   * ``knowledge_update``: the share of questions whose original message the engine marks
     ``superseded_by`` the updated one (and by any later message at all);
   * ``contradiction_resolution``: the share whose two statements it flags
     ``conflicts_with`` each other;
   * how much fires in all (links, decisions, pending items per 100 messages), so a rule
     that fires everywhere shows;
   * the engine's cost per moment (p50/p95 ms).
3. The same chats recorded in a notebook with facts on and off (``--record-chats``, all 20
   by default, in memory, lexical search) and every probing question searched, top 10:
   the record cost (p50/p95 ms) on and off, recall@5/10 of every ability on and off, and
   the issue's two measures read from the search results (the update above the original,
   both in the top 10; both contradicting statements in the top 10, flagged), per chat too.
No threshold is fitted on BEAM (they are set on tests/facts/cases.yaml), so a
leave-one-chat-out figure is the per-chat figure printed; ``--examples N`` prints N
findings of each kind to read.

Run: ``.venv/bin/python bench/facts_beam.py [--beam DIR] [--vectors] [--examples N]``
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile
from _facts_cases import KINDS, Embed, load_cases, score
from agent_notebook.facts import FactEngine, Findings, Statement

BEAM = Path(__file__).resolve().parents[2] / "shared" / "data" / "beam" / "100K"
_MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--beam", type=Path, default=BEAM)
    parser.add_argument("--vectors", action="store_true", help="embed BEAM messages (slow)")
    parser.add_argument("--examples", type=int, default=0)
    parser.add_argument(
        "--record-chats",
        type=int,
        default=20,
        help="chats recorded with facts on and off (search measures and record cost)",
    )
    args = parser.parse_args()
    embed = _embedder()
    labelled(embed)
    if not args.beam.is_dir():
        print(f"\nBEAM: {args.beam} is absent; skipped")
        return
    beam(args.beam, embed if args.vectors else None, args.examples)
    retrieval(args.beam, args.record_chats)


def _embedder() -> Embed | None:
    from agent_notebook.embed import default_embedder

    embedder = default_embedder()
    if embedder is None:
        return None
    return lambda texts: [[float(x) for x in row] for row in embedder.embed_documents(list(texts))]


def labelled(embed: Embed | None) -> None:
    result = score(load_cases(), embed)
    print(
        f"Labelled cases: {result.cases} (vectors: {'yes' if embed else 'no, paraphrase cases skipped'})"
    )
    print(f"  {'kind':<15} {'precision':>9} {'recall':>7}   tp  fp  fn")
    for kind in (*KINDS, "all"):
        c = result.total() if kind == "all" else result.counts[kind]
        print(f"  {kind:<15} {c.precision:9.2f} {c.recall:7.2f}  {c.tp:3d} {c.fp:3d} {c.fn:3d}")
    for line in result.wrong:
        print(f"  wrong: {line}")


def beam(root: Path, embed: Embed | None, examples: int) -> None:
    chats = sorted(
        (p for p in root.iterdir() if (p / "chat.json").is_file()), key=lambda p: int(p.name)
    )
    ku = Counter[str]()
    cr = Counter[str]()
    fired = Counter[str]()
    costs: list[float] = []
    shown = Counter[str]()
    messages = 0
    for chat in chats:
        statements = _statements(json.loads((chat / "chat.json").read_text()), embed)
        engine = FactEngine()
        findings: list[Findings] = []
        for s in statements:
            start = time.perf_counter()
            findings.append(engine.observe(s))
            costs.append(time.perf_counter() - start)
        messages += len(statements)
        links = {(k.source, k.relation, k.target) for f in findings for k in f.links}
        for f in findings:
            fired["decisions"] += len(f.decisions)
            fired["pending"] += len(f.pending)
            fired["closures"] += len(f.closures)
            fired["expiry"] += f.expires is not None
            for k in f.links:
                fired[k.relation] += 1
        text = {s.id: s.text for s in statements}
        if examples:
            _show(findings, text, examples, shown, chat.name)
        questions = json.loads((chat / "probing_questions.json").read_text())
        for q in questions.get("knowledge_update", []):
            ids = q.get("source_chat_ids") or {}
            old = [str(i) for i in ids.get("original_info", [])]
            new = [str(i) for i in ids.get("updated_info", [])]
            ku["questions"] += 1
            ku["linked"] += any((o, "superseded_by", n) in links for o in old for n in new)
            ku["original superseded"] += any(
                s == o and r == "superseded_by" for o in old for s, r, _ in links
            )
        for q in questions.get("contradiction_resolution", []):
            ids = q.get("source_chat_ids") or {}
            first = [str(i) for i in ids.get("first_statement", [])]
            second = [str(i) for i in ids.get("second_statement", [])]
            cr["questions"] += 1
            cr["flagged"] += any(
                (a, "conflicts_with", b) in links for a in first for b in second if a != b
            )
            cr["either flagged"] += any(
                s in (*first, *second) and r == "conflicts_with" for s, r, _ in links
            )
    print(
        f"\nBEAM 100K: {len(chats)} chats, {messages} messages (vectors: {'yes' if embed else 'no'})"
    )
    n = ku["questions"]
    print(
        f"  knowledge_update: {n} questions; original superseded_by the update: {ku['linked']}/{n} = {_share(ku['linked'], n)}; original superseded by anything: {ku['original superseded']}/{n} = {_share(ku['original superseded'], n)}"
    )
    n = cr["questions"]
    print(
        f"  contradiction_resolution: {n} questions; the two flagged conflicts_with: {cr['flagged']}/{n} = {_share(cr['flagged'], n)}; either in some conflict: {cr['either flagged']}/{n} = {_share(cr['either flagged'], n)}"
    )
    per100 = ", ".join(f"{k} {v} ({100 * v / messages:.1f})" for k, v in sorted(fired.items()))
    print(f"  fired in all (per 100 messages): {per100}")
    print(
        f"  engine cost per moment: p50 {1000 * percentile(costs, 0.5):.3f} ms, p95 {1000 * percentile(costs, 0.95):.3f} ms, max {1000 * max(costs):.1f} ms"
    )


def retrieval(root: Path, chats: int) -> None:
    """Each chat recorded (``Notebook.record`` per message, in memory, no embedder: lexical
    search) with facts on and off; each probing question searched (top 10). Printed: the
    record cost, recall@5/10 of every ability, and the issue's two measures read from the
    search results: ``knowledge_update``, the updated message above the original, both in
    the top 10; ``contradiction_resolution``, both statements in the top 10 and flagged
    ``conflicts_with`` each other. Per chat too, so one chat's weight shows."""
    if chats <= 0:
        return
    names = sorted((p.name for p in root.iterdir() if (p / "chat.json").is_file()), key=int)
    names = names[:chats]
    costs: dict[bool, list[float]] = {True: [], False: []}
    recall: dict[bool, dict[str, list[tuple[float, float]]]] = {True: {}, False: {}}
    per_chat: dict[bool, dict[str, Counter[str]]] = {True: {}, False: {}}
    for name in names:
        statements = _statements(json.loads((root / name / "chat.json").read_text()), None)
        questions = json.loads((root / name / "probing_questions.json").read_text())
        for enabled in (False, True):
            counts = per_chat[enabled].setdefault(name, Counter())
            _chat_search(statements, questions, enabled, costs[enabled], recall[enabled], counts)
    print(f"\nSearch over BEAM 100K, {len(names)} chats recorded, lexical (no embedder), top 10")
    for enabled in (False, True):
        ms = [1000 * c for c in costs[enabled]]
        print(
            f"  record, facts {'on ' if enabled else 'off'} ({len(ms)} messages, in memory): "
            f"p50 {percentile(ms, 0.5):.3f} ms, p95 {percentile(ms, 0.95):.3f} ms"
        )
    print(
        f"  {'ability':<26} {'n':>4}  {'R@5 off':>7} {'R@5 on':>7}  {'R@10 off':>8} {'R@10 on':>8}"
    )
    for ability in sorted(recall[False]):
        off, on = recall[False][ability], recall[True][ability]
        print(
            f"  {ability:<26} {len(off):4d}  {_mean(off, 0):7.3f} {_mean(on, 0):7.3f}  "
            f"{_mean(off, 1):8.3f} {_mean(on, 1):8.3f}"
        )
    for enabled in (False, True):
        total = sum(per_chat[enabled].values(), Counter())
        label = "on " if enabled else "off"
        print(
            f"  facts {label}: knowledge_update updated above original, both in top 10: "
            f"{total['ku_above']}/{total['ku']} = {_share(total['ku_above'], total['ku'])} "
            f"(both in top 10: {total['ku_both']}); contradiction both in top 10 and flagged: "
            f"{total['cr_flagged']}/{total['cr']} = {_share(total['cr_flagged'], total['cr'])} "
            f"(both in top 10: {total['cr_both']})"
        )
    on = per_chat[True]
    ku = [_share(on[n]["ku_above"], on[n]["ku"]) for n in names]
    cr = [_share(on[n]["cr_flagged"], on[n]["cr"]) for n in names]
    print(f"  per chat, facts on: knowledge_update {' '.join(ku)}; contradictions {' '.join(cr)}")


def _chat_search(
    statements: list[Statement],
    questions: dict[str, list[dict[str, Any]]],
    enabled: bool,
    costs: list[float],
    recall: dict[str, list[tuple[float, float]]],
    counts: Counter[str],
) -> None:
    from agent_notebook import Notebook
    from agent_notebook.config import FactSettings, NotebookConfig
    from agent_notebook.storage import MemoryBackend

    config = NotebookConfig(facts=FactSettings(enabled=enabled))
    with Notebook(MemoryBackend(), embedder=None, config=config) as nb:
        session = nb.start_session(started=statements[0].when).id
        moment_of: dict[str, str] = {}
        for s in statements:
            start = time.perf_counter()
            moment_of[s.id] = nb.record(session, s.text, role=s.role, timestamp=s.when).id
            costs.append(time.perf_counter() - start)
        for ability, items in questions.items():
            for q in items:
                ids = q.get("source_chat_ids")
                wanted = _evidence(ids, moment_of)
                if not wanted or not q.get("question"):
                    continue
                hits = nb.search(q["question"], mode="lexical", limit=10)
                found = [h.moment.id for h in hits]
                recall.setdefault(ability, []).append(
                    tuple(len(wanted & set(found[:k])) / len(wanted) for k in (5, 10))  # type: ignore[arg-type]
                )
                if ability == "knowledge_update" and isinstance(ids, dict):
                    old = [moment_of[str(i)] for i in ids.get("original_info", [])]
                    new = [moment_of[str(i)] for i in ids.get("updated_info", [])]
                    counts["ku"] += 1
                    place = {m: n for n, m in enumerate(found)}
                    both = [
                        (place[o], place[n]) for o in old for n in new if o in place and n in place
                    ]
                    counts["ku_both"] += bool(both)
                    counts["ku_above"] += any(n < o for o, n in both)
                if ability == "contradiction_resolution" and isinstance(ids, dict):
                    first = [moment_of[str(i)] for i in ids.get("first_statement", [])]
                    second = [moment_of[str(i)] for i in ids.get("second_statement", [])]
                    counts["cr"] += 1
                    by_id = {h.moment.id: h for h in hits}
                    pairs = [(a, b) for a in first for b in second if a in by_id and b in by_id]
                    counts["cr_both"] += bool(pairs)
                    counts["cr_flagged"] += any(b in by_id[a].conflicts_with for a, b in pairs)


def _evidence(ids: Any, moment_of: dict[str, str]) -> set[str]:
    if isinstance(ids, dict):
        ids = [i for v in ids.values() if isinstance(v, list) for i in v]
    if not isinstance(ids, list):
        return set()
    return {moment_of[str(i)] for i in ids if str(i) in moment_of}


def _mean(pairs: list[tuple[float, float]], k: int) -> float:
    return sum(p[k] for p in pairs) / len(pairs) if pairs else 0.0


def _statements(chat: list[dict[str, Any]], embed: Embed | None) -> list[Statement]:
    """The chat's messages in order; times from the time anchors, a minute apart between."""
    said = datetime(2024, 1, 1, tzinfo=UTC)
    rows = []
    for batch in chat:
        for turn in batch["turns"]:
            for m in turn:
                if anchor := m.get("time_anchor"):
                    anchored = datetime.strptime(anchor, "%B-%d-%Y").replace(tzinfo=UTC)
                    said = max(said, anchored)
                said += timedelta(minutes=1)
                rows.append((str(m["id"]), _MARKER.sub("", m["content"]), said, m["role"]))
    vectors: Sequence[Sequence[float] | None] = [None] * len(rows)
    if embed is not None:
        vectors = embed([r[1] for r in rows])
    return [Statement(i, t, w, r, "", v) for (i, t, w, r), v in zip(rows, vectors, strict=True)]


def _show(
    findings: list[Findings], text: dict[str, str], limit: int, shown: Counter[str], chat: str
) -> None:
    def line(i: str) -> str:
        return " ".join(text[i].split())[:160]

    for f in findings:
        for d in f.decisions:
            if shown["decision"] < limit:
                shown["decision"] += 1
                print(f"  [decision] chat {chat} m{f.statement}: {d.what!r} why {d.why!r}")
        for p in f.pending:
            if shown["pending"] < limit:
                shown["pending"] += 1
                print(f"  [pending {p.kind}] chat {chat} m{f.statement}: {p.what!r}")
        for k in f.links:
            if (shown[k.relation] < limit and k.relation != "conflicts_with") or (
                k.relation == "conflicts_with"
                and k.source == f.statement
                and shown[k.relation] < limit
            ):
                shown[k.relation] += 1
                print(
                    f"  [{k.relation}] chat {chat} m{k.source} -> m{k.target} ({k.because[:80]!r})\n      {line(k.source)}\n      {line(k.target)}"
                )


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


if __name__ == "__main__":
    main()
