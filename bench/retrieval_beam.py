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
from retrieval_locomo import ISSUE42_OFF, PLAIN, asked_after, merged

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
#: Per-query fusion weights (issue 31 item 2): the lexical weight scaled by its margin
#: (``m``: fusion_margin_full) and by its agreement with the vector signal (``a``).
for _m in (0.0, 0.3, 0.5, 0.8):
    for _a in (0.0, 0.5, 1.0):
        if _m or _a:
            VARIANTS[f"hybrid-m{_m}a{_a}"] = (
                "hybrid",
                {"fusion_margin_full": _m, "fusion_agreement": _a},
            )
#: What else in hybrid moves it off its vector signal: each of its additions left out.
VARIANTS |= {
    "hybrid-nolex": ("hybrid", {"lexical_weight": 0.0}),
    "hybrid-noconcept": ("hybrid", {"concept_weight": 0.0}),
    "hybrid-nolex-noconcept": ("hybrid", {"lexical_weight": 0.0, "concept_weight": 0.0}),
    "hybrid-plain": ("hybrid", PLAIN),
    "hybrid-noreply": ("hybrid", {"reply_share": 0.0}),
    "hybrid-nospread": ("hybrid", {"session_decay": 1.0}),
    "hybrid-nosession": ("hybrid", {"session_share": 0.0}),
    "hybrid-nocover": ("hybrid", {"coverage_gain": 0.0}),
    "hybrid-nolatest": ("hybrid", {"latest_turn_weight": 0.0}),
    "hybrid-nodate": ("hybrid", {"date_weight": 0.0}),
    "hybrid-noreply-a0.5": ("hybrid", {"reply_share": 0.0, "fusion_agreement": 0.5}),
    "hybrid-noreply-a1.0": ("hybrid", {"reply_share": 0.0, "fusion_agreement": 1.0}),
    "hybrid-noreply-nolex": ("hybrid", {"reply_share": 0.0, "lexical_weight": 0.0}),
    **{
        f"hybrid-a{a}-vm{vm}": ("hybrid", {"fusion_agreement": a, "fusion_vector_margin": vm})
        for a in (0.5, 1.0)
        for vm in (0.15, 0.2, 0.25, 0.3)
    },
    **{f"hybrid-ar{ar}": ("hybrid", {"assistant_reply_share": ar}) for ar in (0.0, 0.1, 0.25)},
    **{
        f"hybrid-ar0-n{n}": ("hybrid", {"assistant_reply_share": 0.0, "neighbour_share": n})
        for n in (0.1, 0.2, 0.3)
    },
    **{f"hybrid-n{n}": ("hybrid", {"neighbour_share": n}) for n in (0.1, 0.2, 0.3)},
    "hybrid-ar0-a1.0": ("hybrid", {"assistant_reply_share": 0.0, "fusion_agreement": 1.0}),
    "hybrid-ar0-a1.0-vm0.2": (
        "hybrid",
        {"assistant_reply_share": 0.0, "fusion_agreement": 1.0, "fusion_vector_margin": 0.2},
    ),
    **{
        f"hybrid-ar0-aw{w}{'-n0.2' if n else ''}": (
            "hybrid",
            {"assistant_reply_share": 0.0, "assistant_weight": w, "neighbour_share": n},
        )
        for w in (0.9, 0.8, 0.7, 0.5)
        for n in (0.0, 0.2)
    },
    **{f"vector-aw{w}": ("vector", {"assistant_weight": w}) for w in (0.8, 0.5)},
    "hybrid-noneighbour": ("hybrid", {"neighbour_share": 0.0}),
    "hybrid-aw1": ("hybrid", {"assistant_weight": 1.0}),
    "hybrid-before": (  # the defaults before issue 31's role-aware settings
        "hybrid",
        {"assistant_weight": 1.0, "assistant_reply_share": 0.5, "neighbour_share": 0.0},
    ),
    "hybrid-a0.5": ("hybrid", {"fusion_agreement": 0.5}),
    "hybrid-a1.0": ("hybrid", {"fusion_agreement": 1.0}),
    "vector-plain-hybrid": ("hybrid", {**PLAIN, "lexical_weight": 0.0, "concept_weight": 0.0}),
}
#: Issue 42's readings of a question, each off, all off, and the settings its grids try.
VARIANTS |= {f"hybrid-no-{name}": ("hybrid", off) for name, off in ISSUE42_OFF.items()}
VARIANTS["hybrid-no-42"] = ("hybrid", merged(*ISSUE42_OFF.values()))
VARIANTS |= {
    f"hybrid-window{b}": ("hybrid", {"priors": {"time_window_bonus": b}}) for b in (0.25, 1.0)
}
VARIANTS |= {
    f"hybrid-other{w}": ("hybrid", {"priors": {"other_person_weight": w}}) for w in (0.85, 0.5)
}
VARIANTS |= {
    f"hybrid-gather{d}-{f}": ("hybrid", {"coverage": {"gather_decay": d, "gather_free": f}})
    for d in (0.85, 0.7, 0.5)
    for f in (1, 2, 3)
}
VARIANTS |= {
    f"hybrid-floor{f}": ("hybrid", {"fusion": {"first_floor": f}}) for f in (0.3, 0.25, 0.15)
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
    parser.add_argument("--skip-chats", type=int, default=0, help="start after N chats")
    args = parser.parse_args()
    if not BEAM.exists():
        print("skipped: ../shared/data/beam is absent (see its README.md)")
        return
    names = args.variants.split(",")
    inner = default_embedder()
    embedder = CachedEmbedder(inner) if inner is not None else None
    paths = sorted(
        (p for p in BEAM.iterdir() if (p / "chat.json").is_file()), key=lambda p: int(p.name)
    )[args.skip_chats : args.skip_chats + args.chats]
    # variant -> ability -> per question, k -> recall
    table: dict[str, dict[str, list[dict[int, float]]]] = {n: {} for n in names}
    # variant -> per chat, its questions' R@10
    per_chat: dict[str, list[list[float]]] = {n: [] for n in names}
    started = time.perf_counter()
    questions = 0
    for path in paths:
        with tempfile.TemporaryDirectory() as tmp:
            nb = Notebook(open_backend(str(Path(tmp) / "nb.db")), embedder=embedder)
            load(nb, json.loads((path / "chat.json").read_text(encoding="utf-8")))
            nb.reindex()
            asked = asked_after(nb)
            probing = json.loads((path / "probing_questions.json").read_text(encoding="utf-8"))
            for name in names:
                per_chat[name].append([])
            for ability, items in probing.items():
                for q in items:
                    evidence = evidence_of(q)
                    if not evidence or not q.get("question"):
                        continue
                    questions += 1
                    for name in names:
                        mode, settings = VARIANTS[name]
                        nb.config = NotebookConfig(search=SearchSettings(**settings))
                        hits = nb.search(
                            q["question"][:9000],
                            limit=max(KS),
                            mode=mode,  # type: ignore[arg-type]
                            asked_at=asked,
                        )
                        found = [h.moment.source_id for h in hits]
                        recall = {
                            k: len(set(evidence) & set(found[:k])) / len(evidence) for k in KS
                        }
                        table[name].setdefault(ability, []).append(recall)
                        per_chat[name][-1].append(recall[10])
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
    by_chat(per_chat)


def by_chat(per_chat: dict[str, list[list[float]]]) -> None:
    """Each variant's R@10 over chats (mean, stdev, worst), its chats won and lost against
    ``hybrid``, and the per-query fusion chosen leave-one-chat-out among the hybrids."""
    means = {n: [statistics.fmean(c) if c else 0.0 for c in v] for n, v in per_chat.items()}
    base = means.get("hybrid")
    print(f"\nR@10 per chat\n{'variant':<22}{'mean':>7}{'stdev':>7}{'worst':>7}{'won/lost':>10}")
    for name, values in means.items():
        spread = statistics.pstdev(values) if len(values) > 1 else 0.0
        duel = "-"
        if base is not None and name != "hybrid":
            won = sum(v > b + 1e-9 for v, b in zip(values, base, strict=True))
            lost = sum(v < b - 1e-9 for v, b in zip(values, base, strict=True))
            duel = f"{won}/{lost}"
        print(
            f"{name:<22}{100 * statistics.fmean(values):>7.1f}{100 * spread:>7.1f}"
            f"{100 * min(values):>7.1f}{duel:>10}"
        )
    hybrids = [n for n in means if n.startswith("hybrid")]
    n_chats = len(next(iter(means.values()), []))
    if len(hybrids) < 2 or n_chats < 2:
        return
    held: list[float] = []
    chosen: list[str] = []
    for chat in range(n_chats):
        # weighted by questions, like the pooled figures
        def other(name: str, chat: int = chat) -> float:
            rows = [r for i, c in enumerate(per_chat[name]) if i != chat for r in c]
            return statistics.fmean(rows) if rows else 0.0

        best = max(hybrids, key=other)
        chosen.append(best)
        held += per_chat[best][chat]
    print(f"LOCO among {len(hybrids)} hybrids: R@10 {100 * statistics.fmean(held):.1f}, chosen")
    print("  " + ", ".join(f"{n} x{chosen.count(n)}" for n in dict.fromkeys(chosen)))


if __name__ == "__main__":
    main()
