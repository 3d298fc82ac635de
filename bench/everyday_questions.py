"""Everyday questions (issue 42): questions as people ask them, against chats as people write.

``bench/data/everyday/conversations.json`` holds the project's own conversations (a family
chat over five days, a couple moving, a team at work, friends on a trip, a person and their
assistant, a running club, flatmates), each with the questions a user would ask of it: time
words ("yesterday", "last week", "on 25 November", "in March", "two weeks ago", "before the
move", "the first time"), people named in the question, paraphrases, questions whose answer
spreads over several sessions, the current value after a change, and questions the chat
itself asked earlier ("echo": that earlier question turn is not the answer).

Each conversation goes into a fresh notebook (SQLite in a temporary directory): one notebook
session per session at its start, each turn a moment at its ``time`` (else the session start
+ i minutes) with its id as ``source_id`` and its ``role`` when given. Every question is asked
with ``nb.search(question, limit=10, mode=...)``, with ``asked_at=`` when the search takes it
(printed either way). Scores: right at 1 (the first hit is one of the answers), R@5 and R@10
(the share of the answers in the top k), per variant, per kind, and the 12 everyday questions
of the family chat. ``bm25`` and ``minilm`` are the plain signals (none of the ranking's
additions); ``--set name=key=value,...`` adds a variant from ``SearchSettings`` overrides
(``mode=lexical|vector|hybrid`` picks its mode; hybrid else), so a feature can be switched
off from the command line, e.g. ``--set no-time=time_question_bonus=0``.

    python bench/everyday_questions.py [--conversations fam,run] [--variants bm25,hybrid]
        [--set name=key=value,key=value ...] [--failures N] [--failure-variant hybrid]
        [--embedder default|none]

Skips cleanly (exit 0) when the data file is absent.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from agent_notebook import Notebook
from agent_notebook.config import NotebookConfig, SearchSettings
from agent_notebook.embed import default_embedder
from agent_notebook.storage import open_backend
from embed_cache import CachedEmbedder
from retrieval_locomo import PLAIN

DATA = Path(__file__).parent / "data" / "everyday" / "conversations.json"
KS = (5, 10)
LIMIT = 10
KINDS = (
    "everyday",
    "time-relative",
    "time-date-no-year",
    "time-month",
    "time-before-event",
    "time-first",
    "when",
    "how-long",
    "person",
    "paraphrase",
    "gathering",
    "update",
    "echo",
)
#: name -> (mode, settings, note)
VARIANTS: dict[str, tuple[str, dict[str, Any], str]] = {
    "bm25": ("lexical", PLAIN, "FTS5 BM25 alone, raw question"),
    "minilm": ("vector", PLAIN, "MiniLM alone, raw question"),
    "lexical": ("lexical", {}, "the defaults"),
    "vector": ("vector", {}, "the defaults"),
    "hybrid": ("hybrid", {}, "the defaults"),
    "hybrid-no-cutoff": ("hybrid", {"min_score": 0.0}, "every match, however weak"),
}
DEFAULT = ",".join(VARIANTS)
#: Whether the search knows when the question is asked (issue 42 adds ``asked_at``).
TAKES_ASKED_AT = "asked_at" in inspect.signature(Notebook.search).parameters


@dataclass
class Outcome:
    conversation: str
    question: dict[str, Any]
    found: list[str]
    at1: bool
    recall: dict[int, float]


@dataclass
class Scores:
    outcomes: list[Outcome] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)


def parse_set(spec: str) -> tuple[str, tuple[str, dict[str, Any], str]]:
    """``name=key=value,key=value`` -> (name, (mode, overrides, note)); a key is a flat
    setting (``speaker_bonus``) or one in its group (``priors.echo_weight``); each value
    read as JSON when it parses (numbers, true/false), else as a string."""
    name, sep, rest = spec.partition("=")
    if not sep or not name or not rest:
        raise ValueError(f"--set {spec!r}: expected name=key=value[,key=value]")
    mode = "hybrid"
    overrides: dict[str, Any] = {}
    for pair in rest.split(","):
        key, eq, raw = pair.partition("=")
        if not eq:
            raise ValueError(f"--set {spec!r}: {pair!r} is not key=value")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        key = key.strip()
        if key == "mode":
            mode = str(value)
        elif "." in key:  # a setting in its group: priors.time_window_bonus=0
            group, _, inner = key.partition(".")
            overrides.setdefault(group, {})[inner] = value
        else:
            overrides[key] = value
    if mode not in ("hybrid", "lexical", "vector"):
        raise ValueError(f"--set {spec!r}: mode must be hybrid, lexical or vector")
    SearchSettings(**overrides)  # fails here, not mid-run, on an unknown key or a bad value
    return name, (mode, overrides, f"--set {rest}")


def load(nb: Notebook, conversation: dict[str, Any]) -> dict[str, str]:
    """Records the conversation; returns turn id -> text."""
    texts: dict[str, str] = {}
    for session in conversation["sessions"]:
        started = datetime.fromisoformat(session["started"])
        s = nb.start_session(session["title"], started=started)
        drafts = []
        for i, turn in enumerate(session["turns"]):
            when = datetime.fromisoformat(turn["time"]) if "time" in turn else None
            draft: dict[str, Any] = {
                "text": turn["text"],
                "speaker": turn["speaker"],
                "timestamp": when or started + timedelta(minutes=i),
                "source_id": turn["id"],
            }
            if "role" in turn:
                draft["role"] = turn["role"]
            drafts.append(draft)
            texts[turn["id"]] = f"{turn['speaker']}: {turn['text']}"
        nb.record_many(s.id, drafts)
    return texts


def ask(nb: Notebook, mode: str, question: dict[str, Any]) -> list[str]:
    extra: dict[str, Any] = {}
    if TAKES_ASKED_AT:
        extra["asked_at"] = datetime.fromisoformat(question["asked_at"])
    hits = nb.search(question["question"], limit=LIMIT, mode=mode, **extra)  # type: ignore[arg-type]
    return [h.moment.source_id or "" for h in hits]


def score(conversation: str, question: dict[str, Any], found: list[str]) -> Outcome:
    answers = set(question["answers"])
    recall = {k: len(answers & set(found[:k])) / len(answers) for k in KS}
    return Outcome(conversation, question, found, bool(found) and found[0] in answers, recall)


def run(args: argparse.Namespace, data: dict[str, Any], variants: list[str]) -> None:
    embedder: Any = None
    if args.embedder != "none" and (inner := default_embedder(args.embedder)) is not None:
        embedder = CachedEmbedder(inner)
    wanted = set(args.conversations.split(",")) if args.conversations else None
    conversations = [c for c in data["conversations"] if wanted is None or c["id"] in wanted]
    scores = {name: Scores() for name in variants}
    all_texts: dict[str, dict[str, str]] = {}
    started = time.perf_counter()
    for conversation in conversations:
        with tempfile.TemporaryDirectory() as tmp:
            nb = Notebook(open_backend(str(Path(tmp) / "notebook.db")), embedder=embedder)
            t0 = time.perf_counter()
            all_texts[conversation["id"]] = load(nb, conversation)
            if nb.semantic is not None:  # let the worker finish, then catch up what is left
                nb.semantic.wait_idle()
                nb.reindex()
            index_s = time.perf_counter() - t0
            for name in variants:
                mode, settings, _ = VARIANTS[name]
                if mode == "vector" and nb.semantic is None:
                    continue
                nb.config = NotebookConfig(search=SearchSettings(**settings))
                for question in conversation["questions"]:
                    t1 = time.perf_counter()
                    found = ask(nb, mode, question)
                    scores[name].latencies.append(time.perf_counter() - t1)
                    scores[name].outcomes.append(score(conversation["id"], question, found))
            nb.close()
            print(
                f"{conversation['id']}: {len(all_texts[conversation['id']])} turns, "
                f"{len(conversation['questions'])} questions, indexed in {index_s:.1f} s",
                file=sys.stderr,
            )
        if embedder is not None:
            embedder.save()
    n_questions = sum(len(c["questions"]) for c in conversations)
    print(
        f"\nEveryday questions (issue 42): {len(conversations)} conversations, {n_questions} "
        f"questions, {time.perf_counter() - started:.0f} s; embedder: {args.embedder}; "
        f"asked_at: {'passed to nb.search' if TAKES_ASKED_AT else 'NOT passed (nb.search has no asked_at parameter)'}"
    )
    report(scores, variants)
    misses(scores.get(args.failure_variant), args.failure_variant)
    show_failures(scores.get(args.failure_variant), all_texts, args.failures, args.failure_variant)


def cells(rows: list[Outcome]) -> str:
    if not rows:
        return f"{'-':>5} {'-':>5} {'-':>5}"
    at1 = 100 * sum(o.at1 for o in rows) / len(rows)
    return f"{at1:5.1f} " + " ".join(
        f"{100 * statistics.fmean(o.recall[k] for o in rows):5.1f}" for k in KS
    )


def report(scores: dict[str, Scores], variants: list[str]) -> None:
    shown = [n for n in variants if scores[n].outcomes]
    print(
        f"\n{'variant':<18} {'n':>4}  {'@1':>5} {'R@5':>5} {'R@10':>5}  {'p50 ms':>7}  everyday  note"
    )
    for name in variants:
        result = scores[name]
        if not result.outcomes:
            print(f"{name:<18} skipped (no embedder)")
            continue
        everyday = [o for o in result.outcomes if "everyday" in o.question["kinds"]]
        right = sum(o.at1 for o in everyday)
        p50 = statistics.median(result.latencies) * 1000
        print(
            f"{name:<18} {len(result.outcomes):>4}  {cells(result.outcomes)}  {p50:7.1f}  "
            f"{right:>2} of {len(everyday):<2}  {VARIANTS[name][2]}"
        )
    for name in shown:
        everyday = [o for o in scores[name].outcomes if "everyday" in o.question["kinds"]]
        print(f"everyday: {name}: right at 1 in {sum(o.at1 for o in everyday)} of {len(everyday)}")
    print("\nper kind, @1 / R@5 / R@10")
    print(f"{'kind':<18} {'n':>3}  " + "  ".join(f"{n:^17}" for n in shown))
    first = scores[shown[0]].outcomes if shown else []
    for kind in (*KINDS, "all"):
        n = sum(1 for o in first if kind == "all" or kind in o.question["kinds"])
        row = [
            cells(
                [o for o in scores[name].outcomes if kind == "all" or kind in o.question["kinds"]]
            )
            for name in shown
        ]
        print(f"{kind:<18} {n:>3}  " + "  ".join(row))
    print("\nper conversation, @1 / R@5 / R@10")
    convs = list(dict.fromkeys(o.conversation for o in first))
    print(f"{'conversation':<18} {'n':>3}  " + "  ".join(f"{n:^17}" for n in shown))
    for conv in convs:
        n = sum(1 for o in first if o.conversation == conv)
        row = [
            cells([o for o in scores[name].outcomes if o.conversation == conv]) for name in shown
        ]
        print(f"{conv:<18} {n:>3}  " + "  ".join(row))


def misses(result: Scores | None, name: str) -> None:
    """Per kind: the questions whose first hit is not an answer, and those with no answer in
    the top 10; for echo questions, how often the chat's own earlier question came first."""
    if result is None or not result.outcomes:
        return
    wrong1: Counter[str] = Counter()
    none10: Counter[str] = Counter()
    total: Counter[str] = Counter()
    echo_first = echo_above = 0
    for o in result.outcomes:
        for kind in o.question["kinds"]:
            total[kind] += 1
            wrong1[kind] += not o.at1
            none10[kind] += o.recall[10] == 0
        echoes = o.question.get("echo_turns", [])
        if echoes:
            echo_first += bool(o.found) and o.found[0] in echoes
            best = min(
                (o.found.index(a) for a in o.question["answers"] if a in o.found), default=99
            )
            echo_above += any(e in o.found and o.found.index(e) < best for e in echoes)
    print(f"\nmisses of {name} per kind: first hit not an answer / no answer in the top {LIMIT}")
    for kind in KINDS:
        if total[kind]:
            print(f"  {kind:<18} {wrong1[kind]:>3} / {none10[kind]:>3}  of {total[kind]:>3}")
    n_echo = total["echo"]
    if n_echo:
        print(
            f"  echo: the chat's own earlier question ranked first in {echo_first} of {n_echo}, "
            f"above every answer in {echo_above} of {n_echo}"
        )


def show_failures(
    result: Scores | None, texts: dict[str, dict[str, str]], n: int, name: str
) -> None:
    if not n or result is None:
        return
    failed = [o for o in result.outcomes if not o.at1]
    shown = failed[:: max(1, len(failed) // n)][:n]  # evenly spaced over the conversations
    print(
        f"\n{len(failed)} questions of {name} whose first hit is not an answer; "
        f"{len(shown)} of them, evenly spaced:"
    )
    for o in shown:
        q = o.question
        conv = texts[o.conversation]
        print(
            f"\nQ [{o.conversation}] {q['question']}  (asked {q['asked_at']}; {', '.join(q['kinds'])})"
        )
        for answer in q["answers"]:
            rank = o.found.index(answer) + 1 if answer in o.found else None
            print(f"  answer {answer} (rank {rank}): {conv.get(answer, '?')[:140]}")
        for echo in q.get("echo_turns", []):
            rank = o.found.index(echo) + 1 if echo in o.found else None
            print(f"  echo   {echo} (rank {rank}): {conv.get(echo, '?')[:140]}")
        for i, hit in enumerate(o.found[:3], start=1):
            print(f"  top {i} {hit}: {conv.get(hit, '?')[:140]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", default="", help="ids, comma-separated (all else)")
    parser.add_argument("--variants", default=DEFAULT)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=KEY=VALUE,...",
        help="a variant from SearchSettings overrides (repeatable; mode=... picks its mode)",
    )
    parser.add_argument("--embedder", choices=["default", "none"], default="default")
    parser.add_argument("--failures", type=int, default=0, help="show N missed questions")
    parser.add_argument("--failure-variant", default="hybrid")
    args = parser.parse_args()
    if not args.data.exists():
        print(f"skipped: {args.data} is absent")
        return
    variants = [n for n in args.variants.split(",") if n]
    for spec in args.set:
        try:
            name, variant = parse_set(spec)
        except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            parser.error(str(exc))
        VARIANTS[name] = variant
        if name not in variants:
            variants.append(name)
    unknown = [n for n in variants if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    data = json.loads(args.data.read_text(encoding="utf-8"))
    run(args, data, variants)


if __name__ == "__main__":
    main()
