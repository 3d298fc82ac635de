"""Chat turns: per-turn latency, total time and bytes on disk over a long thread.

One thread of ``--turns`` turns (a 300-character user message, a 400-character answer from a
fake chat model; the same seeded texts for every variant) through each variant, interleaved
turn by turn (turn i of every variant, in an order rotated each turn, then turn i + 1), so
the machine's load falls on every variant alike:

(a) the seed's graph as written: ``ThreadState`` with ``messages: Annotated[list,
    add_messages]``, ``START → agent → END``, compiled with ``SqliteSaver`` on its own file;
(b) the same graph with the messages channel as LangGraph's ``DeltaChannel`` (beta), which
    checkpoints only the writes of each step and a full snapshot every 100 updates;
(c) ours: ``build_chat_graph(Notebook.open(tmp), model=fake)`` with default settings;
(d) the floor: a one-node graph whose state is one short string (no history, no model) on
    ``SqliteSaver``, i.e. what LangGraph and its SQLite checkpointer cost per turn here;
(e) ours with ``chat.context_search: lexical``: the context does not embed the message;
(f) (e) with ``sqlite_synchronous: NORMAL``: no fsync when a turn's moments are committed
    (a crash of the process loses nothing; a power cut may lose the last turns);
(g) (c) through ``await graph.ainvoke(...)`` on one event loop (skipped, and said so, when
    the graph does not run async in this tree);
(q) not a graph: one query embedding of the turn's message by the notebook's embedder, the
    part of a hybrid context that a lexical one does not pay.

Each turn is one timed ``graph.invoke({"messages": [HumanMessage(text)]}, thread)``. After it,
untimed, the variant finishes the turn's background work (ours: indexing and embedding the
turn's moments), as in the pause before a user's next message, so it never lands on another
variant's turn; ``--back-to-back`` skips the pause (ours' report prints how long it took). Reported
per variant: p50/p95 over the last 10% of turns and over turns 100-200 (their p95 ratio says
whether latency stays flat), total seconds (of its own turns), bytes on disk in the
variant's directory (after embedding ours' backlog untimed, closing connections and a
``wal_checkpoint(TRUNCATE)``) against the raw UTF-8 text bytes; then the issue's targets for ours against (d) and (a) of this run.

With ``--processes`` each variant is built and run in a process of its own, still interleaved
turn by turn by this one (each turn timed in its own process, the pipe not counted): its
embedding worker and threads then compete for the machine's cores, not for the timed
process's interpreter lock, as in an app that runs one notebook. Without it all variants
share one process, and each notebook's background work lands on the other variants' turns.

    python bench/chat_turns.py [--turns 2000] [--only a,b,c,d,e,f,g,q] [--a-turns N]
        [--seed 0] [--keep-checkpoints N] [--processes] [--back-to-back] [--dir D --keep]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Optional, TypedDict, cast

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile
from agent_notebook import Notebook
from agent_notebook.chat import build_chat_graph
from agent_notebook.config import NotebookConfig, write_config

USER_CHARS = 300
ANSWER_CHARS = 400
THREAD: RunnableConfig = {"configurable": {"thread_id": "bench"}}
MIN_FREE_FOR_A = 10 * 1024**3  # (a) stores the whole history at every checkpoint

TARGET_LEXICAL_X_FLOOR = 3.0  # lexical context p95 <= 3x (d)'s p95
TARGET_HYBRID_SLACK_MS = 10.0  # hybrid p95 <= (d)'s p95 + one query embedding + 10 ms
TARGET_FLAT = 1.30
TARGET_STORAGE = 8.0
WINDOW = 100  # "ours below (a) at every turn count from 100 on", by windows of 100 turns
ALL_VARIANTS = "abcdefgq"
#: ``--back-to-back``: the next turn starts while a variant's background work still runs.
BACK_TO_BACK = False
KEEP = False  # --keep: leave the variants' directories (under --dir) for dbstat

# -- texts ------------------------------------------------------------------------------------

NAMES = ["Caroline", "Melanie", "Jonas", "Priya", "Tomás", "Aiko", "Olivier", "Fatima", "Sven"]
PLACES = [
    "Lyon Part-Dieu",
    "the Zürich office",
    "Brasserie Georges",
    "the library",
    "Gare du Nord",
    "the staging cluster",
    "Building C",
    "the Berlin warehouse",
    "room 4.12",
    "São Paulo",
]
NOUNS = [
    "invoice",
    "migration",
    "deploy",
    "budget",
    "contract",
    "schedule",
    "ticket",
    "report",
    "database",
    "dashboard",
    "release",
    "backup",
    "meeting",
    "itinerary",
    "receipt",
    "token",
    "review",
    "estimate",
    "roadmap",
    "outage",
    "benchmark",
    "checklist",
    "proposal",
    "draft",
    "cache",
    "index",
    "query",
    "payment",
    "shipment",
    "vendor",
    "workshop",
    "survey",
]
ADJECTIVES = [
    "quarterly",
    "urgent",
    "revised",
    "final",
    "broken",
    "shared",
    "encrypted",
    "pending",
    "vegetarian",
    "late",
    "missing",
    "new",
    "old",
    "internal",
    "public",
    "flaky",
    "signed",
]
VERBS = [
    "move",
    "check",
    "book",
    "cancel",
    "update",
    "send",
    "review",
    "merge",
    "rerun",
    "fix",
    "archive",
    "schedule",
    "approve",
    "split",
    "rename",
    "compare",
    "summarize",
    "confirm",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "14 June", "the 9th", "3 March"]
FILES = ["auth/middleware.py:42", "db/schema.sql", "config.yaml", "api/routes.ts:118", "Makefile"]
ERRORS = ["database is locked", "timeout after 30 s", "HTTP 502", "KeyError: 'user_id'", "OOM"]

USER_TEMPLATES = [
    "Can you {verb} the {adj} {noun} for {name} before {day}?",
    "{name} said the {noun} at {place} moved to {day}, please {verb} the plan.",
    "Actually no, keep the {adj} {noun} and {verb} the {noun2} instead.",
    "The {noun} failed again with {error}; {verb} it and tell {name}.",
    "Let's {verb} {file} and then {verb2} the {adj} {noun2}.",
    "Remember that {name} is at {place} until {day}, so {verb} the {noun} remotely.",
    "How much is left on the {adj} {noun} budget after {count} items?",
    "Booked seat {count} near {place}; receipt EXP-{code} is for the {noun}.",
]
ANSWER_TEMPLATES = [
    "Done: I {verbed} the {adj} {noun} and sent a note to {name}.",
    "The {noun} at {place} is now set for {day}; {name} has been told.",
    "I found {count} open items on the {noun}; the {adj} ones are listed first.",
    "{file} still raises {error}, so I rolled back the {noun2} and kept the logs.",
    "Summary: the {noun} is {adj}, the {noun2} waits for {name}, next check on {day}.",
    "I could not {verb} the {noun} yet because {name} has not approved EXP-{code}.",
    "Here is the plan: {verb} the {noun}, then {verb2} the {noun2} at {place} by {day}.",
]


def _fill(template: str, rng: random.Random) -> str:
    verb = rng.choice(VERBS)
    return template.format(
        verb=verb,
        verb2=rng.choice(VERBS),
        verbed=verb + ("d" if verb.endswith("e") else "ed"),
        adj=rng.choice(ADJECTIVES),
        noun=rng.choice(NOUNS),
        noun2=rng.choice(NOUNS),
        name=rng.choice(NAMES),
        place=rng.choice(PLACES),
        day=rng.choice(DAYS),
        file=rng.choice(FILES),
        error=rng.choice(ERRORS),
        count=rng.randint(2, 240),
        code=rng.randint(1000, 9999),
    )


def make_text(rng: random.Random, templates: Sequence[str], chars: int, turn: int) -> str:
    """Exactly ``chars`` characters of sentences from ``templates``, tagged with the turn."""
    parts = [f"(turn {turn})"]
    while sum(len(p) + 1 for p in parts) <= chars:
        parts.append(_fill(rng.choice(templates), rng))
    text = " ".join(parts)[: chars - 1].rstrip()
    return text + "." * (chars - len(text))


def make_texts(turns: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    users, answers = [], []
    for i in range(1, turns + 1):
        users.append(make_text(rng, USER_TEMPLATES, USER_CHARS, i))
        answers.append(make_text(rng, ANSWER_TEMPLATES, ANSWER_CHARS, i))
    return users, answers


def fake_model(answers: Sequence[str]) -> FakeListChatModel:
    return FakeListChatModel(responses=list(answers))


# -- (a) and (b): the seed's graph ------------------------------------------------------------

SEED_SYSTEM_PROMPT = (
    "You are a helpful research assistant for the user's notebook. Answer from the "
    "conversation and the context below; say so when you do not know.\n\n# Context\n{context}"
)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


def add_messages_batched(left: list[Any], writes: Sequence[Any]) -> list[Any]:
    """``add_messages`` as a ``DeltaChannel`` reducer: ``writes`` is a batch of updates, each
    one message or a list of them (``DeltaChannel(add_messages)`` itself fails on the list
    that ``invoke({"messages": [...]})`` writes)."""
    flat: list[Any] = []
    for write in writes:
        flat.extend(write if isinstance(write, list) else [write])
    return add_messages(left, flat)  # type: ignore[return-value]


class SeedThreadState(TypedDict):
    messages: Annotated[list, add_messages]  # type: ignore[type-arg]
    notebook: Optional[dict[str, Any]]  # noqa: UP045 - the seed's spelling
    context: Optional[str]  # noqa: UP045
    context_config: Optional[dict[str, Any]]  # noqa: UP045
    model_override: Optional[str]  # noqa: UP045


class DeltaThreadState(TypedDict):
    messages: Annotated[list, DeltaChannel(add_messages_batched)]  # type: ignore[type-arg]
    notebook: Optional[dict[str, Any]]  # noqa: UP045
    context: Optional[str]  # noqa: UP045
    context_config: Optional[dict[str, Any]]  # noqa: UP045
    model_override: Optional[str]  # noqa: UP045


def seed_graph(state_type: type, model: FakeListChatModel, db: Path) -> tuple[Any, Any]:
    def call_model_with_messages(state: Any, config: RunnableConfig) -> dict[str, Any]:
        system_prompt = SEED_SYSTEM_PROMPT.format(context=state.get("context") or "")
        payload = [SystemMessage(content=system_prompt)] + state.get("messages", [])  # noqa: RUF005
        ai_message = model.invoke(payload, config)
        cleaned_content = _THINK.sub("", str(ai_message.content)).strip()
        cleaned_message = ai_message.model_copy(update={"content": cleaned_content})
        return {"messages": cleaned_message}

    conn = sqlite3.connect(db, check_same_thread=False)
    memory = SqliteSaver(conn)
    agent_state: StateGraph[Any, Any, Any, Any] = StateGraph(state_type)
    agent_state.add_node("agent", call_model_with_messages)
    agent_state.add_edge(START, "agent")
    agent_state.add_edge("agent", END)
    return agent_state.compile(checkpointer=memory), conn


class FloorState(TypedDict):
    last: str


def floor_graph(db: Path) -> tuple[Any, Any]:
    """One node that answers with a fixed short string; the state never grows."""

    def agent(state: FloorState) -> dict[str, Any]:
        return {"last": "ok"}

    conn = sqlite3.connect(db, check_same_thread=False)
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(FloorState)
    graph.add_node("agent", agent)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    return graph.compile(checkpointer=SqliteSaver(conn)), conn


# -- running ----------------------------------------------------------------------------------


@dataclass
class Result:
    key: str
    name: str
    times: list[float]
    total: float
    disk_bytes: int
    raw_bytes: int
    tables: dict[str, int] = field(default_factory=dict)
    note: str = ""


class Variant:
    """One variant, run a turn at a time: :meth:`turn` times turn ``i`` (0-based)."""

    key: str
    name: str

    def __init__(self, base: Path, users: Sequence[str], answers: Sequence[str]) -> None:
        self.users, self.answers = users, answers
        self.tmp = Path(tempfile.mkdtemp(prefix=f"chat_turns_{self.key}_", dir=base))
        self.times: list[float] = []
        self.idle_times: list[float] = []

    def turns(self) -> int:
        return len(self.users)

    def turn(self, i: int) -> float:
        t0 = time.perf_counter()
        self.run(self.users[i])
        elapsed = time.perf_counter() - t0
        self.times.append(elapsed)
        if not BACK_TO_BACK:
            t1 = time.perf_counter()
            self.between_turns()
            self.idle_times.append(time.perf_counter() - t1)
        return elapsed

    def run(self, text: str) -> None:
        raise NotImplementedError

    def between_turns(self) -> None:
        """The user's think-time, untimed: the variant's background work of the turn
        finishes before any variant's next turn, so it never lands on another's."""

    def finish(self) -> Result:
        """Close everything, measure the bytes on disk, remove the files (not with --keep)."""
        try:
            disk, tables, note = self.close()
            return Result(
                self.key,
                self.name,
                self.times,
                sum(self.times),
                disk,
                raw_bytes(self.users, self.answers),
                tables,
                note,
            )
        finally:
            if KEEP:
                print(f"kept ({self.key}): {self.tmp}")
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)

    def close(self) -> tuple[int, dict[str, int], str]:
        raise NotImplementedError


class SeedVariant(Variant):
    def __init__(
        self, key: str, name: str, state_type: type, base: Path, users: Any, answers: Any
    ) -> None:
        self.key, self.name = key, name
        super().__init__(base, users, answers)
        self.graph, self.conn = seed_graph(
            state_type, fake_model(answers), self.tmp / "checkpoints.sqlite"
        )

    def run(self, text: str) -> None:
        self.graph.invoke({"messages": [HumanMessage(text)]}, THREAD)

    def close(self) -> tuple[int, dict[str, int], str]:
        kept = len(self.graph.get_state(THREAD).values["messages"])
        if kept != 2 * len(self.times):  # the seed keeps every message
            raise SystemExit(f"({self.key}) kept {kept} messages, expected {2 * len(self.times)}")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn.close()
        del self.graph
        return fold_wal_and_measure(self.tmp), {}, ""


class FloorVariant(Variant):
    key, name = "d", "floor: 1 node, no history, SqliteSaver"

    def __init__(self, base: Path, users: Any, answers: Any) -> None:
        super().__init__(base, users, answers)
        self.graph, self.conn = floor_graph(self.tmp / "checkpoints.sqlite")

    def run(self, text: str) -> None:
        self.graph.invoke({"last": text[:8]}, THREAD)

    def close(self) -> tuple[int, dict[str, int], str]:
        self.conn.close()
        del self.graph
        return fold_wal_and_measure(self.tmp), {}, ""


OURS_NAMES = {
    "c": "ours: build_chat_graph (defaults)",
    "e": "ours, lexical context search",
    "f": "ours, lexical, synchronous NORMAL",
    "g": "ours (c) through ainvoke",
}


class OursVariant(Variant):
    def __init__(
        self,
        key: str,
        base: Path,
        users: Any,
        answers: Any,
        *,
        context_search: str = "hybrid",
        synchronous: str = "FULL",
        keep_checkpoints: int | None = None,
        run_async: bool = False,
    ) -> None:
        self.key, self.name = key, OURS_NAMES[key]
        super().__init__(base, users, answers)
        self.home = self.tmp / "home"
        chat: dict[str, Any] = {"context_search": context_search}
        if keep_checkpoints is not None:
            chat["keep_checkpoints"] = keep_checkpoints
        config = NotebookConfig.model_validate({"sqlite_synchronous": synchronous, "chat": chat})
        self.home.mkdir(mode=0o700)
        write_config(self.home, config)
        self.nb = Notebook.open(self.home)
        self.graph = build_chat_graph(self.nb, model=fake_model(answers))
        self.loop = asyncio.new_event_loop() if run_async else None

    def run(self, text: str) -> None:
        turn = {"messages": [HumanMessage(text)]}
        if self.loop is None:
            self.graph.invoke(turn, THREAD)
        else:
            self.loop.run_until_complete(self.graph.ainvoke(turn, THREAD))

    def between_turns(self) -> None:
        # After a turn ours indexes its moments (after_turn work) and embeds them (the
        # worker waits while a turn runs): work for the pause before the next message.
        self.nb.drain()
        if (semantic := self.nb.semantic) is not None:
            semantic.wait_idle(timeout=10)

    def close(self) -> tuple[int, dict[str, int], str]:
        if self.loop is not None:
            self.loop.close()
        # The embedding worker's backlog (untimed): its vectors are on disk sooner or later,
        # so the bytes counted are those of a notebook whose every moment has its vector.
        backlog = self.nb.reindex() if self.nb.semantic is not None else 0
        self.nb.close()
        del self.graph
        disk = fold_wal_and_measure(self.home)
        chat = self.nb.config.chat
        vectors, moments, checkpoints = counts(self.home / "notebook.db")
        return (
            disk,
            table_bytes(self.home / "notebook.db"),
            f"checkpoints kept per thread: {chat.keep_checkpoints}; {checkpoints} checkpoints "
            f"(durability {chat.checkpoint_durability}); vectors stored for {vectors} of "
            f"{moments} moments ({backlog} of them embedded after the last turn, untimed)"
            + (
                ""
                if BACK_TO_BACK
                else f"; background work after a turn (untimed) p50 {ms(self.idle_times, 0.5):.1f}"
                f" / p95 {ms(self.idle_times, 0.95):.1f} ms"
            ),
        )


class EmbedVariant(Variant):
    """One query embedding of the message: what a hybrid context adds to a lexical one."""

    key, name = "q", "one query embedding (notebook's embedder)"

    def __init__(self, base: Path, users: Any, answers: Any) -> None:
        from agent_notebook.embed import default_embedder

        super().__init__(base, users, answers)
        embedder = default_embedder()
        if embedder is None:
            raise Unsupported("no embedder installed")
        self.embedder = embedder

    def run(self, text: str) -> None:
        self.embedder.embed_query(text)

    def close(self) -> tuple[int, dict[str, int], str]:
        return 0, {}, ""


class Unsupported(Exception):
    """A variant that cannot run in this tree or on this machine (said why, then skipped)."""


class OwnProcess:
    """A variant built and run in a process of its own (``--processes``), driven like an
    in-process one: :meth:`turn` returns the seconds the turn took there."""

    def __init__(self, key: str, args: argparse.Namespace) -> None:
        context = multiprocessing.get_context("spawn")  # nothing inherited: a fresh app
        self._pipe, theirs = context.Pipe()
        self._process = context.Process(target=_serve_variant, args=(key, args, theirs))
        self._process.start()
        self.key, self.name, self._turns = self._answer()
        self.times: list[float] = []

    def _answer(self) -> Any:
        reply = self._pipe.recv()
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def turns(self) -> int:
        return int(self._turns)

    def turn(self, i: int) -> float:
        self._pipe.send(("turn", i))
        elapsed = float(self._answer())
        self.times.append(elapsed)
        return elapsed

    def finish(self) -> Result:
        self._pipe.send(("finish", 0))
        try:
            return cast(Result, self._answer())
        finally:
            self._process.join()


def own_processes(only: set[str], args: argparse.Namespace) -> list[Any]:
    """The variants of ``only``, each in its own process (one that is skipped says so)."""
    started = []
    for key in ALL_VARIANTS:
        if key in only:
            try:
                started.append(OwnProcess(key, args))
            except Unsupported as err:
                print(f"SKIPPED ({key}): {err}")
    return started


def _serve_variant(key: str, args: argparse.Namespace, pipe: Any) -> None:
    """The child's side of :class:`OwnProcess`: build variant ``key`` as the bench would,
    then run what the parent asks, answering each with its result or its exception."""
    global BACK_TO_BACK, KEEP  # a spawned process inherits no module state
    BACK_TO_BACK, KEEP = args.back_to_back, args.keep
    try:
        found = build_variants({key}, *texts_and_base(args), args)
        if not found:
            raise Unsupported("skipped (said above)")
        [variant] = found
        pipe.send((variant.key, variant.name, variant.turns()))
    except BaseException as err:  # noqa: BLE001 (the parent raises it)
        pipe.send(err)
        return
    while True:
        what, i = pipe.recv()
        try:
            pipe.send(variant.turn(i) if what == "turn" else variant.finish())
        except BaseException as err:  # noqa: BLE001 (the parent raises it)
            pipe.send(err)
        if what == "finish":
            return


def texts_and_base(args: argparse.Namespace) -> tuple[Path, list[str], list[str]]:
    """Where the variants' directories go, and the run's user messages and answers."""
    a_turns = args.a_turns or args.turns
    users, answers = make_texts(max(args.turns, a_turns), args.seed)
    return args.dir or Path(tempfile.gettempdir()), users, answers


def run_interleaved(variants: Sequence[Any], turns: int) -> list[Result]:
    """Turn ``i`` of every variant, the order rotated by one each turn, then turn ``i + 1``.
    A variant whose first turn fails with ``NotImplementedError`` is dropped (said so)."""
    live = list(variants)
    start = time.perf_counter()
    for i in range(turns):
        shift = i % len(live) if live else 0
        for v in live[shift:] + live[:shift]:
            if i >= v.turns():
                continue
            try:
                v.turn(i)
            except NotImplementedError as err:
                if i:
                    raise
                reason = str(err).splitlines()[0] if str(err) else ""
                print(f"SKIPPED ({v.key}): {type(err).__name__}: {reason}", flush=True)
                v.finish()
                live.remove(v)
        if (i + 1) % 250 == 0 or i + 1 == turns:
            last = "  ".join(f"{v.key} {v.times[-1] * 1000:7.1f}" for v in live if v.times)
            print(
                f"  turn {i + 1:>5}/{turns}  elapsed {time.perf_counter() - start:8.1f} s  "
                f"this turn (ms): {last}",
                file=sys.stderr,
                flush=True,
            )
    results = []
    for v in live:
        results.append(v.finish())
        gc.collect()
    return results


def fold_wal_and_measure(root: Path) -> int:
    """Checkpoint every SQLite file's WAL into it (connections already closed), then sum
    the sizes of all files under ``root``."""
    for path in root.rglob("*"):
        if path.is_file() and not path.name.endswith(("-wal", "-shm", "-journal")):
            with open(path, "rb") as f:
                is_sqlite = f.read(16) == b"SQLite format 3\x00"
            if is_sqlite:
                conn = sqlite3.connect(path)
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.close()
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def raw_bytes(users: Sequence[str], answers: Sequence[str]) -> int:
    return sum(len(t.encode()) for t in users) + sum(len(t.encode()) for t in answers)


def counts(db: Path) -> tuple[int, int, int]:
    """Vectors, moments and checkpoints stored in a notebook's file."""
    conn = sqlite3.connect(db)
    try:
        return tuple(  # type: ignore[return-value]
            conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("moment_vectors", "moments", "checkpoints")
        )
    finally:
        conn.close()


def table_bytes(db: Path) -> dict[str, int]:
    """Bytes per table (and index) of an SQLite file, largest first (empty without dbstat)."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    except sqlite3.OperationalError:
        rows = []
    finally:
        conn.close()
    return dict(rows)


# -- reporting --------------------------------------------------------------------------------


def last_tenth(times: Sequence[float]) -> list[float]:
    return list(times[-max(1, len(times) // 10) :])


def early(times: Sequence[float]) -> list[float]:
    """Turns 100-200 (1-based), or what there is of them."""
    return list(times[99:200]) or list(times)


def ms(samples: Sequence[float], q: float) -> float:
    return percentile(samples, q) * 1000


def size(n: float) -> str:
    for unit in ("B", "KB", "MB"):
        if n < 1024:
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.2f} GB"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report(results: Sequence[Result], turns: int, a_turns: int) -> None:
    header = (
        f"{'variant':<44} {'turns':>5} | {'last 10%':>8} {'p95':>8} | {'t100-200':>8} "
        f"{'p95':>8} | {'flat':>5} | {'total':>8} | {'on disk':>12} {'raw text':>10} {'x raw':>7}"
    )
    sub = (
        f"{'':<44} {'':>5} | {'p50 ms':>8} {'ms':>8} | {'p50 ms':>8} {'ms':>8} | "
        f"{'ratio':>5} | {'s':>8} | {'':>12} {'':>10} {'':>7}"
    )
    print(header)
    print(sub)
    print("-" * len(header))
    for r in results:
        tail, head = last_tenth(r.times), early(r.times)
        flat = ms(tail, 0.95) / ms(head, 0.95)
        disk = f"{size(r.disk_bytes):>12} {size(r.raw_bytes):>10} {r.disk_bytes / r.raw_bytes:7.2f}"
        print(
            f"({r.key}) {r.name:<40} {len(r.times):>5} | {ms(tail, 0.5):8.2f} {ms(tail, 0.95):8.2f} "
            f"| {ms(head, 0.5):8.2f} {ms(head, 0.95):8.2f} | {flat:5.2f} | {r.total:8.1f} | "
            + (disk if r.key != "q" else f"{'-':>12} {'-':>10} {'-':>7}")
        )
    print(
        "last 10%: the last max(1, turns/10) turns; t100-200: turns 100-200; "
        "flat ratio: last-10% p95 / t100-200 p95; total: the sum of the variant's own turns; "
        "on disk: all files after close + wal_checkpoint(TRUNCATE); raw text: UTF-8 bytes of "
        "the user messages and answers. Variants ran interleaved turn by turn."
    )
    for r in results:
        if r.note:
            print(f"({r.key}) {r.note}")
    if a_turns != turns and any(r.key in "ab" for r in results):
        print(f"NOTE: (a) and (b) ran {a_turns} turns (--a-turns), the others {turns}.")
    by_key = {r.key: r for r in results}
    ours = by_key.get("c")
    if ours is not None and ours.tables:
        print(f"\n(c) bytes by table ({size(ours.disk_bytes)} on disk):")
        for name, n in list(ours.tables.items())[:12]:
            print(f"  {name:<32} {size(n):>10} {n / ours.raw_bytes:6.2f}x raw")
    report_targets(by_key, turns)


def report_targets(by_key: dict[str, Result], turns: int) -> None:
    """The issue's targets for ours, against (d), (q) and (a) of this same run."""
    print(f"\ntargets at turn {turns}" + ("" if turns == 2000 else " (the issue says 2,000)"))
    floor, seed, embed = by_key.get("d"), by_key.get("a"), by_key.get("q")
    if floor is None:
        print("  the context targets need (d)")
    else:
        d95 = ms(last_tenth(floor.times), 0.95)
        if (lexical := by_key.get("e")) is not None:
            e95, bound = ms(last_tenth(lexical.times), 0.95), TARGET_LEXICAL_X_FLOOR * d95
            print(
                f"  lexical (e) p95 <= {TARGET_LEXICAL_X_FLOOR:g}x (d) p95 = {bound:.2f} ms: "
                f"{e95:8.2f} ms  {verdict(e95 <= bound)}"
            )
        if (hybrid := by_key.get("c")) is not None and embed is not None:
            q95 = ms(last_tenth(embed.times), 0.95)
            c95, bound = ms(last_tenth(hybrid.times), 0.95), d95 + q95 + TARGET_HYBRID_SLACK_MS
            print(
                f"  hybrid (c) p95 <= (d) p95 {d95:.2f} + (q) p95 {q95:.2f} + "
                f"{TARGET_HYBRID_SLACK_MS:g} = {bound:.2f} ms: {c95:8.2f} ms  {verdict(c95 <= bound)}"
            )
    for key in "ceg":
        r = by_key.get(key)
        if r is None:
            continue
        if seed is not None and min(len(seed.times), len(r.times)) >= 2 * WINDOW - 1:
            print(f"  ({key}) p50 below (a) p50 in every window of {WINDOW} turns from turn 100:")
            worst = below_seed(r.times, seed.times)
            print(f"    {worst}")
        if len(r.times) >= 200:
            tail, head = last_tenth(r.times), early(r.times)
            flat = ms(tail, 0.95) / ms(head, 0.95)
            print(
                f"  ({key}) flat: last-10% p95 / t100-200 p95 <= {TARGET_FLAT:.2f}: {flat:8.2f}  "
                f"{verdict(flat <= TARGET_FLAT)}"
            )
        if key == "c":
            ratio = r.disk_bytes / r.raw_bytes
            print(
                f"  (c) bytes on disk <= {TARGET_STORAGE:g}x raw text: {ratio:8.2f}x  "
                f"{verdict(ratio <= TARGET_STORAGE)}"
            )


def below_seed(ours: Sequence[float], seed: Sequence[float]) -> str:
    """Per window of turns from 100 on: ours' p50 against (a)'s, and the verdict."""
    cells, ok = [], True
    for start in range(WINDOW - 1, min(len(ours), len(seed)) - WINDOW + 1, WINDOW):
        mine, theirs = ours[start : start + WINDOW], seed[start : start + WINDOW]
        m50, a50 = ms(mine, 0.5), ms(theirs, 0.5)
        ok &= m50 < a50
        cells.append(f"t{start + 1}-{start + WINDOW}: {m50:.1f}/{a50:.1f}")
    return "  ".join(cells) + f"  (ms, ours/(a))  {verdict(ok)}"


def build_variants(
    only: set[str], base: Path, users: Sequence[str], answers: Sequence[str], args: Any
) -> list[Variant]:
    a_turns = args.a_turns or args.turns
    mine = (users[: args.turns], answers[: args.turns])
    seeds = (users[:a_turns], answers[:a_turns])
    keep = args.keep_checkpoints
    makers: dict[str, Callable[[], Variant]] = {
        "a": lambda: SeedVariant(
            "a", "seed: add_messages + SqliteSaver", SeedThreadState, base, *seeds
        ),
        "b": lambda: SeedVariant(
            "b", "seed + DeltaChannel (snapshot every 100)", DeltaThreadState, base, *seeds
        ),
        "c": lambda: OursVariant("c", base, *mine, keep_checkpoints=keep),
        "d": lambda: FloorVariant(base, *mine),
        "e": lambda: OursVariant("e", base, *mine, context_search="lexical", keep_checkpoints=keep),
        "f": lambda: OursVariant(
            "f", base, *mine, context_search="lexical", synchronous="NORMAL", keep_checkpoints=keep
        ),
        "g": lambda: OursVariant("g", base, *mine, keep_checkpoints=keep, run_async=True),
        "q": lambda: EmbedVariant(base, *mine),
    }
    variants = []
    for key in ALL_VARIANTS:
        if key not in only:
            continue
        if key == "a" and (free := shutil.disk_usage(base).free) < MIN_FREE_FOR_A:
            print(f"SKIPPED (a): {size(free)} free under {base}, it needs at least 10 GB")
            continue
        try:
            variants.append(makers[key]())
        except Unsupported as err:
            print(f"SKIPPED ({key}): {err}")
    return variants


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000, help="turns in the thread")
    parser.add_argument(
        "--only", default=",".join(ALL_VARIANTS), help="variants to run, e.g. 'c,d'"
    )
    parser.add_argument(
        "--a-turns", type=int, default=None, help="turns for (a) and (b) (default: --turns)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed for the texts")
    parser.add_argument("--dir", type=Path, default=None, help="where the temp dirs go")
    parser.add_argument(
        "--keep", action="store_true", help="keep the variants' directories (printed)"
    )
    parser.add_argument(
        "--keep-checkpoints",
        type=int,
        default=None,
        help="chat.keep_checkpoints for ours (default: the notebook's default)",
    )
    parser.add_argument(
        "--processes",
        action="store_true",
        help="run each variant in a process of its own (see the module's docstring)",
    )
    parser.add_argument(
        "--back-to-back",
        action="store_true",
        help="no pause between turns: a variant's background work lands on the next turns",
    )
    args = parser.parse_args()
    global BACK_TO_BACK, KEEP
    BACK_TO_BACK, KEEP = args.back_to_back, args.keep
    only = {v.strip() for v in args.only.split(",") if v.strip()}
    if not only <= set(ALL_VARIANTS):
        parser.error(f"--only takes a comma-separated subset of {','.join(ALL_VARIANTS)}")
    a_turns = args.a_turns or args.turns
    print(
        f"chat turns: {args.turns} turns ({USER_CHARS}-char user message, {ANSWER_CHARS}-char "
        f"fake answer, seed {args.seed}), variants {','.join(sorted(only))}, interleaved"
        + (f"; (a)/(b) {a_turns} turns" if a_turns != args.turns and only & {"a", "b"} else "")
        + (", each in its own process" if args.processes else ", in one process")
        + (
            ", back to back"
            if args.back_to_back
            else ", each variant's background work done between turns"
        )
    )
    if args.processes:
        variants: Sequence[Any] = own_processes(only, args)
    else:
        variants = build_variants(only, *texts_and_base(args), args)
    results = run_interleaved(variants, max(args.turns, a_turns))
    if results:
        print()
        report(results, args.turns, a_turns)


if __name__ == "__main__":
    main()
