"""The fact rules on real conversation, labelled turn by turn (issue 39).

The labels (bench/data/facts_labels/*.yaml, rules in its README.md) cover whole stretches
of LoCoMo development conversations and BEAM 100K chats, every turn: most turns carry no
label, so precision is measured over everything the rules find, not over chosen examples.
The conversations' text is not in the repository: it is read from ``../shared/data``
(``locomo/locomo-dev.json``, ``beam/100K/<n>/chat.json``); when that is absent the bench
says so and exits 0.

How each conversation is fed, as the product does: a real in-memory notebook
(``Notebook(MemoryBackend(), config=NotebookConfig(facts=FactSettings(enabled=True)),
embedder=None)``), one notebook session per conversation session (a LoCoMo session; a
BEAM time anchor starts a new one), every turn recorded in order with ``Notebook.record``
(its speaker and role, its time: the session's date plus a minute a turn). What was found
is read back from the notebook: the sessions' audit log (``decisions``, ``pending`` with
``source`` and ``closed_by``) and the moments (``relations.links``: ``superseded_by``,
``conflicts_with``, ``duplicate_of``; ``expires``). The same turns are recorded with facts
off too, for the record cost (p50/p95 ms per ``record``). A second reading, for comparison:
one bare ``FactEngine`` fed the whole conversation (all sessions), to show what a
cross-session engine could reach with today's rules; and the count of labels only a link
across sessions can meet (the notebook keeps one engine per session, ``FactKeeper``).

The matching rule (one unit per labelled turn and kind):
* decisions, opened: a found decision (pending item) matches when its ``source`` moment is
  the labelled turn. Several found on one turn count once.
* closed: a closure (a pending item's ``closed_by``) matches when it is on the labelled
  turn and the item it closes was read from one of the label's ``of`` turns.
* updates: a ``superseded_by`` link matches when the later (superseding) moment is the
  labelled turn and the earlier (superseded) one is among the label's ``of`` turns.
* duplicates: a ``duplicate_of`` link matches when its source is the labelled turn and its
  target among ``of``.
* conflicts: a ``conflicts_with`` pair (both directions are one pair) matches when one end
  is the labelled turn and the other among ``with``.
* expiry: an ``expires`` set on the labelled turn matches; when the label gives a ``day``
  (or a list of days a reader could take), the expiry's last day must be one of them.
Precision is the share of findings that match some label; recall the share of labels that
some finding matches. A finding on the right turn pointing at the wrong earlier turn is
both a false positive and (unless another finding matches) a miss.

No threshold is fitted on these labels (the rules' thresholds are set on
tests/facts/cases.yaml), so each conversation's figure is its leave-one-conversation-out
figure; the pooled line sums the counts over all conversations, and two more pool them over
the development conversations and over the held-out ones (``held_out: true`` in their labels'
file: labelled after the rules were frozen, never tuned on).

Run: ``PYTHONPATH=src .venv/bin/python bench/facts_chat.py [--data DIR] [--show] [--only NAME] [--dev]``
(``--show`` prints each miss and false positive with the turn's text, to read at the
terminal: the text is the data's, never store it in the repository. It never prints a
held-out conversation's turns. ``--only`` runs the conversations whose name holds NAME, ``--dev`` the development ones
only, for tuning without seeing the held-out figures.)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile

LABELS = Path(__file__).resolve().parent / "data" / "facts_labels"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
KINDS = ("decision", "opened", "closed", "update", "conflict", "duplicate", "expiry")
#: What a link-kind label lists its earlier turns under.
TARGETS = {"closed": "of", "update": "of", "duplicate": "of", "conflict": "with"}
_MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")


@dataclass(frozen=True)
class Turn:
    id: str  # a LoCoMo dia_id ("D3:12") or a BEAM message id ("64")
    session: int  # the conversation's session (LoCoMo) or time-anchor segment (BEAM)
    text: str
    when: datetime
    role: str
    speaker: str


@dataclass
class Conversation:
    name: str
    turns: list[Turn]
    labels: list[dict[str, Any]]
    #: Labelled after the rules were frozen: its figures are pooled apart, its turns never shown.
    held_out: bool = False


@dataclass
class Found:
    """What the rules found, in turn ids: per kind, the units of the matching rule."""

    decision: set[str] = field(default_factory=set)
    opened: set[str] = field(default_factory=set)
    closed: set[tuple[str, str]] = field(default_factory=set)  # (closing turn, opened turn)
    update: set[tuple[str, str]] = field(default_factory=set)  # (later turn, earlier turn)
    duplicate: set[tuple[str, str]] = field(default_factory=set)  # (repeat, first said)
    conflict: set[frozenset[str]] = field(default_factory=set)
    expiry: dict[str, date] = field(default_factory=dict)
    #: decisions marked as replacing an earlier one: (turn, replaced turn)
    replaced: set[tuple[str, str]] = field(default_factory=set)


@dataclass
class Counts:
    tp_found: int = 0  # findings that match a label
    found: int = 0
    tp_labels: int = 0  # labels some finding matches
    labels: int = 0

    def add(self, other: Counts) -> None:
        self.tp_found += other.tp_found
        self.found += other.found
        self.tp_labels += other.tp_labels
        self.labels += other.labels

    def cell(self) -> str:
        p = f"{self.tp_found / self.found:.2f}" if self.found else "  - "
        r = f"{self.tp_labels / self.labels:.2f}" if self.labels else "  - "
        return f"P {p} ({self.tp_found:>2}/{self.found:<3}) R {r} ({self.tp_labels:>2}/{self.labels:<2})"


# -- the data ---------------------------------------------------------------------------


def load(data: Path) -> Iterator[Conversation]:
    for path in sorted(LABELS.glob("*.yaml")):
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(spec, dict) or "labels" not in spec:
            continue  # not a conversation's labels (e.g. the minimal pairs)
        if spec["source"] == "locomo":
            source = data / spec["file"]
            name = f"locomo {spec['conversation']}"
        else:
            source = data / "beam" / spec["chat"] / "chat.json"
            name = f"beam {spec['chat']}"
        if not source.is_file():
            print(f"  {name}: {source} is absent; skipped")
            continue
        if spec["source"] == "locomo":
            turns = _locomo(source, spec["conversation"], spec["sessions"])
        else:
            turns = _beam(source, spec["messages"]["from"], spec["messages"]["to"])
        labels = [{**label, "turn": str(label["turn"])} for label in spec["labels"]]
        known = {t.id for t in turns}
        for label in labels:
            for other in (label["turn"], *map(str, label.get(TARGETS.get(label["kind"], ""), []))):
                if other not in known:
                    raise SystemExit(f"{path.name}: label on unknown turn {other!r}")
        yield Conversation(name, turns, labels, bool(spec.get("held_out", False)))


def _locomo(path: Path, conversation: str, sessions: list[int]) -> list[Turn]:
    conv = next(c for c in json.loads(path.read_text()) if c["sample_id"] == conversation)
    chat = conv["conversation"]
    turns = []
    for n in sessions:
        started = datetime.strptime(chat[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        started = started.replace(tzinfo=UTC)
        for i, t in enumerate(chat[f"session_{n}"]):
            turns.append(
                Turn(
                    t["dia_id"], n, t["text"], started + timedelta(minutes=i), "user", t["speaker"]
                )
            )
    return turns


def _beam(path: Path, first: int, last: int) -> list[Turn]:
    """Messages ``first``..``last`` (ids) in order; times as bench/facts_beam.py makes them
    (the time anchors, a minute apart between); a time anchor starts a new session."""
    said = datetime(2024, 1, 1, tzinfo=UTC)
    session = 0
    turns = []
    for batch in json.loads(path.read_text()):
        for turn in batch["turns"]:
            for m in turn:
                if anchor := m.get("time_anchor"):
                    anchored = datetime.strptime(anchor, "%B-%d-%Y").replace(tzinfo=UTC)
                    said = max(said, anchored)
                    if first <= int(m["id"]) <= last:
                        session += 1
                said += timedelta(minutes=1)
                if first <= int(m["id"]) <= last:
                    text = _MARKER.sub("", m["content"])
                    turns.append(Turn(str(m["id"]), max(session, 1), text, said, m["role"], ""))
    return turns


# -- feeding the notebook -----------------------------------------------------------------


def record(conv: Conversation, enabled: bool, costs: list[float]) -> Found:
    """Record every turn in a fresh in-memory notebook, one session per conversation
    session; with facts on, read back what was found."""
    from agent_notebook import Notebook
    from agent_notebook.config import FactSettings, NotebookConfig
    from agent_notebook.model import split_link
    from agent_notebook.storage import MemoryBackend

    config = NotebookConfig(facts=FactSettings(enabled=enabled))
    turn_of: dict[str, str] = {}
    sessions: dict[int, str] = {}
    with Notebook(MemoryBackend(), embedder=None, config=config) as nb:
        for t in conv.turns:
            if t.session not in sessions:
                sessions[t.session] = nb.start_session(
                    f"{conv.name} {t.session}", started=t.when
                ).id
            start = time.perf_counter()
            moment = nb.record(
                sessions[t.session], t.text, role=t.role, speaker=t.speaker, timestamp=t.when
            )
            costs.append(time.perf_counter() - start)
            turn_of[moment.id] = t.id
        found = Found()
        if not enabled:
            return found
        for sid in sessions.values():
            session = nb.get_session(sid)
            log = list(session.decisions)
            for d in log:
                if d.source in turn_of:
                    found.decision.add(turn_of[d.source])
                    replaced = _replaced(d, log)
                    if replaced is not None and replaced in turn_of:
                        found.replaced.add((turn_of[d.source], turn_of[replaced]))
                    if d.replaced_by in turn_of:  # marked on the replaced entry
                        found.replaced.add((turn_of[d.replaced_by], turn_of[d.source]))
            for p in session.pending:
                if p.source in turn_of:
                    found.opened.add(turn_of[p.source])
                    if p.closed_by in turn_of:
                        found.closed.add((turn_of[p.closed_by], turn_of[p.source]))
        for moment_id, turn in turn_of.items():
            stored = nb.backend.get_moment(moment_id)
            if stored is None:
                continue
            if stored.expires is not None:
                found.expiry[turn] = (stored.expires - timedelta(microseconds=1)).date()
            for link in stored.relations.links:
                relation, target = split_link(link)
                if target not in turn_of:
                    continue
                other = turn_of[target]
                if relation == "superseded_by":
                    found.update.add((other, turn))
                elif relation == "duplicate_of":
                    found.duplicate.add((turn, other))
                elif relation == "conflicts_with":
                    found.conflict.add(frozenset((turn, other)))
    return found


def _replaced(decision: Any, log: list[Any]) -> str | None:
    """The source moment of the decision ``decision`` is marked as replacing, if any
    (``edits: d_N`` today; a ``replaces`` field if one is added)."""
    mark = getattr(decision, "replaces", None) or getattr(decision, "edits", None)
    if isinstance(mark, str) and mark.startswith("d_") and mark[2:].isdigit():
        n = int(mark[2:]) - 1
        return log[n].source if 0 <= n < len(log) else None
    return None


def engine_whole(conv: Conversation) -> Found:
    """One bare engine fed every turn of the conversation, all sessions: what the rules
    could link across sessions."""
    from agent_notebook.facts import FactEngine, Statement

    engine = FactEngine()
    found = Found()
    for t in conv.turns:
        collect(found, t.id, engine.observe(Statement(t.id, t.text, t.when, t.role, t.speaker)))
    return found


def collect(found: Found, turn: str, f: Any) -> None:
    """Add what the engine found on ``turn`` (its ``Findings``, statement ids = turn ids)."""
    if f.decisions:
        found.decision.add(turn)
    if f.pending:
        found.opened.add(turn)
    for c in f.closures:
        found.closed.add((turn, c.item.source))
    for k in f.links:
        if k.relation == "superseded_by":
            found.update.add((k.target, k.source))
        elif k.relation == "duplicate_of":
            found.duplicate.add((k.source, k.target))
        elif k.relation == "conflicts_with":
            found.conflict.add(frozenset((k.source, k.target)))
    if f.expires is not None:
        found.expiry[turn] = (f.expires - timedelta(microseconds=1)).date()


# -- scoring ---------------------------------------------------------------------------


def score(conv: Conversation, found: Found) -> tuple[dict[str, Counts], list[tuple[str, str, str]]]:
    """Counts per kind, and the misses and false positives: (kind, 'miss'|'false', what)."""
    counts = {k: Counts() for k in KINDS}
    wrong: list[tuple[str, str, str]] = []
    by_kind: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    for label in conv.labels:
        by_kind[label["kind"]].append(label)
    for kind in ("decision", "opened"):
        wanted = {x["turn"] for x in by_kind[kind]}
        got: set[str] = getattr(found, kind)
        counts[kind] = Counts(len(got & wanted), len(got), len(got & wanted), len(wanted))
        wrong += [(kind, "miss", t) for t in sorted(wanted - got, key=_order)]
        wrong += [(kind, "false", t) for t in sorted(got - wanted, key=_order)]
    for kind, got_pairs in _pairs(found).items():
        wanted_pairs = [
            (x["turn"], {str(o) for o in x.get(TARGETS[kind], [])}) for x in by_kind[kind]
        ]
        hit = [p for p in got_pairs if any(_matches(kind, p, *w) for w in wanted_pairs)]
        met = [w for w in wanted_pairs if any(_matches(kind, p, *w) for p in got_pairs)]
        counts[kind] = Counts(len(hit), len(got_pairs), len(met), len(wanted_pairs))
        wrong += [
            (kind, "miss", f"{t} -> {','.join(sorted(o, key=_order))}")
            for t, o in wanted_pairs
            if (t, o) not in met
        ]
        wrong += [(kind, "false", f"{a} -> {b}") for a, b in sorted(set(got_pairs) - set(hit))]
    wanted_expiry = {x["turn"]: _days(x.get("day")) for x in by_kind["expiry"]}
    hit_expiry = {
        t
        for t, day in found.expiry.items()
        if t in wanted_expiry and (not wanted_expiry[t] or str(day) in wanted_expiry[t])
    }
    counts["expiry"] = Counts(
        len(hit_expiry), len(found.expiry), len(hit_expiry), len(wanted_expiry)
    )
    wrong += [("expiry", "miss", t) for t in wanted_expiry if t not in hit_expiry]
    wrong += [
        ("expiry", "false", f"{t} ({d})") for t, d in found.expiry.items() if t not in hit_expiry
    ]
    return counts, wrong


def _pairs(found: Found) -> dict[str, set[tuple[str, str]]]:
    """The link findings as (turn, earlier turn) pairs; a conflict's pair in turn order."""
    return {
        "closed": found.closed,
        "update": found.update,
        "duplicate": found.duplicate,
        "conflict": {(a, b) for a, b in (tuple(sorted(p, key=_order)) for p in found.conflict)},
    }


def _matches(kind: str, pair: tuple[str, str], turn: str, others: set[str]) -> bool:
    """Whether the found ``pair`` meets the label on ``turn`` naming ``others``."""
    if kind == "conflict":
        a, b = pair
        return (a == turn and b in others) or (b == turn and a in others)
    return pair[0] == turn and pair[1] in others


def across_sessions(conv: Conversation, found: Found) -> dict[str, tuple[int, int]]:
    """Per link kind: the labels only a link across sessions can meet (every earlier turn
    they name is in another session), and how many of them were met."""
    session = {t.id: t.session for t in conv.turns}
    pairs = _pairs(found)
    result: dict[str, tuple[int, int]] = {}
    for label in conv.labels:
        kind = label["kind"]
        if kind not in TARGETS:
            continue
        others = {str(o) for o in label[TARGETS[kind]]}
        if any(session[o] == session[label["turn"]] for o in others):
            continue
        met = any(_matches(kind, p, label["turn"], others) for p in pairs[kind])
        labels, hits = result.get(kind, (0, 0))
        result[kind] = (labels + 1, hits + met)
    return result


def _days(day: Any) -> set[str]:
    """A label's ``day``: none, one day or a list of days, as ISO strings."""
    if day is None:
        return set()
    return {str(d) for d in (day if isinstance(day, list) else [day])}


def _order(turn: str) -> tuple[int, int]:
    if turn.startswith("D"):
        s, _, n = turn[1:].partition(":")
        return int(s), int(n)
    return 0, int(turn)


def _table(title: str, rows: dict[str, dict[str, Counts]]) -> None:
    print(f"\n{title}")
    print(f"  {'kind':<10} " + "".join(f"{name:<38}" for name in rows))
    for kind in KINDS:
        print(f"  {kind:<10} " + "".join(f"{rows[name][kind].cell():<38}" for name in rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data directory")
    parser.add_argument(
        "--show",
        action="store_true",
        help="print misses and false positives (never of a held-out conversation)",
    )
    parser.add_argument("--only", default="", help="only the conversations whose name holds this")
    parser.add_argument(
        "--dev", action="store_true", help="only the development conversations (not held out)"
    )
    args = parser.parse_args()
    print("Facts on real conversation, labelled turn by turn (issue 39)")
    conversations = [
        c for c in load(args.data) if args.only in c.name and not (args.dev and c.held_out)
    ]
    if not conversations:
        print(f"  the shared data ({args.data}: LoCoMo dev, BEAM 100K) is absent; skipped")
        return
    print("  notebook: in memory, facts on, default settings, one session per conversation session")
    costs: dict[bool, list[float]] = {True: [], False: []}
    per_conv: dict[str, dict[str, Counts]] = {}
    held_out = {c.name for c in conversations if c.held_out}
    whole: dict[str, dict[str, Counts]] = {}
    shown: dict[str, list[tuple[str, str, str]]] = {}
    text: dict[str, dict[str, str]] = {}
    across: dict[str, tuple[int, int]] = {}
    labelled_reversals = found_reversals = marked_replacements = 0
    for conv in conversations:
        record(conv, False, costs[False])
        found = record(conv, True, costs[True])
        per_conv[conv.name], shown[conv.name] = score(conv, found)
        whole[conv.name], _ = score(conv, engine_whole(conv))
        for kind, (n, met) in across_sessions(conv, found).items():
            labels_across, met_across = across.get(kind, (0, 0))
            across[kind] = (labels_across + n, met_across + met)
        text[conv.name] = {t.id: t.text for t in conv.turns}
        reversals = {(x["turn"], str(x["replaces"])) for x in conv.labels if "replaces" in x}
        labelled_reversals += len(reversals)
        found_reversals += len(reversals & found.replaced)
        marked_replacements += len(found.replaced)
        sessions = len({t.session for t in conv.turns})
        kinds = {k: sum(x["kind"] == k for x in conv.labels) for k in KINDS}
        print(
            f"  {conv.name}: {len(conv.turns)} turns, {sessions} sessions, labels "
            + ", ".join(f"{k} {n}" for k, n in kinds.items())
        )
    pooled = {k: Counts() for k in KINDS}
    for counts in per_conv.values():
        for k in KINDS:
            pooled[k].add(counts[k])
    _table(
        "Per conversation (= leave-one-conversation-out: nothing is fitted on these labels)",
        per_conv,
    )
    _table("Pooled over all labelled conversations", {"all": pooled})
    for title, names in (
        ("development", [n for n in per_conv if n not in held_out]),
        ("held out", [n for n in per_conv if n in held_out]),
    ):
        part = {k: Counts() for k in KINDS}
        for name in names:
            for k in KINDS:
                part[k].add(per_conv[name][k])
        _table(
            f"Pooled over the {title} conversations ({', '.join(names) or 'none'})", {title: part}
        )
    print(
        f"  decision reversals labelled: {labelled_reversals}; "
        f"marked as replacing the earlier decision in the audit log: {found_reversals}; "
        f"replacements marked in all: {marked_replacements}"
    )
    print(
        "  labels only a link across sessions can meet (met / labelled): "
        + ", ".join(f"{k} {across[k][1]}/{across[k][0]}" for k in TARGETS if k in across)
    )
    if whole:
        pooled_whole = {k: Counts() for k in KINDS}
        for counts in whole.values():
            for k in KINDS:
                pooled_whole[k].add(counts[k])
        _table(
            "For comparison: one bare FactEngine over each whole conversation (all sessions)",
            {"all": pooled_whole},
        )
    print(f"\nRecord cost (Notebook.record, in memory, {len(costs[True])} turns each)")
    for enabled in (False, True):
        ms = [1000 * c for c in costs[enabled]]
        print(
            f"  facts {'on ' if enabled else 'off'}: p50 {percentile(ms, 0.5):.3f} ms, "
            f"p95 {percentile(ms, 0.95):.3f} ms"
        )
    if args.show:
        for name, wrong in shown.items():
            if name in held_out:
                print(f"\n{name}: held out, its misses are not shown")
                continue
            print(f"\n{name}: misses and false positives")
            for kind, what, where in sorted(wrong):
                turn = where.split(" ")[0]
                said = " ".join(text[name].get(turn, "").split())[:200]
                print(f"  [{what} {kind}] {where}: {said}")


if __name__ == "__main__":
    main()
