"""Per-turn ``get_tuple`` of the PostgreSQL checkpointer with and without the delta values
kept between reads (issue 17), interleaved turn by turn on one thread in one run.

A chat thread (the chat graph's ``ThreadState``: ``messages`` a ``DeltaChannel``, a snapshot
every ``MESSAGES_SNAPSHOT_EVERY`` updates) grows one turn at a time; before each turn from ``--from`` on, both
savers read the thread's newest checkpoint, in alternating order: ours (kept values on: its
value kept from the last turn's read, so it replays the writes since) and LangGraph's
full read (a second saver on the same schema with nothing kept, as before issue 17). The
turn then runs through ours, and the same turn through a saver on a second schema without
the triggers: the time of each turn's ``put`` and ``put_writes`` calls on both is what the
triggers cost the writes.

    python bench/pg_history.py [--url postgresql://postgres@127.0.0.1:5432/test]
        [--from 100] [--turns 200]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from typing import Any

import psycopg
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from agent_notebook.chat.state import ThreadState
from agent_notebook.langgraph.checkpoint.postgres import NotebookPostgresSaver
from agent_notebook.langgraph.checkpoint.postgres_history import EPOCH_TRIGGERS

THREAD = {"configurable": {"thread_id": "bench"}}


def answer(state: ThreadState) -> dict[str, Any]:
    return {"messages": [AIMessage("answer: " + "words " * 60)]}


def saver_on(url: str, *, keep_values: bool) -> NotebookPostgresSaver:
    kwargs = {"autocommit": True, "row_factory": dict_row, "prepare_threshold": 0}
    pool: ConnectionPool[Any] = ConnectionPool(
        url, min_size=1, max_size=2, kwargs=kwargs, open=True
    )
    saver = NotebookPostgresSaver(pool)
    saver.setup()
    saver._history.enabled = keep_values
    return saver


def timed_read(saver: NotebookPostgresSaver) -> float:
    start = time.perf_counter()
    found = saver.get_tuple(THREAD)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - start
    assert found is not None
    return elapsed


def timing_writes(saver: NotebookPostgresSaver, into: list[float]) -> None:
    """Add the time of each ``put`` and ``put_writes`` on ``saver`` to ``into[-1]``."""
    for name in ("put", "put_writes"):
        method = getattr(saver, name)

        def timed(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return _method(*args, **kwargs)
            finally:
                into[-1] += time.perf_counter() - start

        setattr(saver, name, timed)


def graph_on(saver: NotebookPostgresSaver) -> Any:
    graph = StateGraph(ThreadState)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph.compile(checkpointer=saver)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--from", dest="start", type=int, default=100)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    schemas = ["bench_history_" + uuid.uuid4().hex[:8] for _ in range(2)]
    with psycopg.connect(args.url, autocommit=True) as conn:
        for schema in schemas:
            conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    url, bare_url = (f"{args.url}?options=-csearch_path%3D{schema}" for schema in schemas)
    try:
        ours, full = saver_on(url, keep_values=True), saver_on(url, keep_values=False)
        bare = saver_on(bare_url, keep_values=False)
        with bare.pool.connection() as conn:
            for name, table, *_ in EPOCH_TRIGGERS:
                conn.execute(f"DROP TRIGGER {name} ON {table}")  # type: ignore[arg-type]
        writes: dict[str, list[float]] = {"ours": [], "bare": []}
        timing_writes(ours, writes["ours"])
        timing_writes(bare, writes["bare"])
        apps = {"ours": graph_on(ours), "bare": graph_on(bare)}
        times: dict[str, list[float]] = {"ours": [], "full": []}
        for i in range(args.turns):
            if i >= args.start:
                pair = [("ours", ours), ("full", full)]
                for name, saver in pair if i % 2 else reversed(pair):
                    times[name].append(timed_read(saver))
                a = ours.get_tuple(THREAD)  # type: ignore[arg-type]
                b = full.get_tuple(THREAD)  # type: ignore[arg-type]
                assert a is not None and b is not None
                assert a.checkpoint["channel_values"] == b.checkpoint["channel_values"]
            question = f"question {i}: " + "words " * 40
            for name in ("ours", "bare") if i % 2 else ("bare", "ours"):
                writes[name].append(0.0)
                apps[name].invoke({"messages": [HumanMessage(question)]}, THREAD)  # type: ignore[arg-type]
        ms = {name: statistics.median(found) * 1000 for name, found in times.items()}
        print(
            f"PostgreSQL get_tuple per turn, turns {args.start}-{args.turns} "
            f"({len(times['ours'])} reads each, interleaved): "
            f"kept values p50 {ms['ours']:.2f} ms, full read (nothing kept) p50 "
            f"{ms['full']:.2f} ms, {ms['full'] / ms['ours']:.1f}x"
        )
        put_ms = {
            name: statistics.median(found[args.start :]) * 1000 for name, found in writes.items()
        }
        print(
            f"the same turns' put + put_writes p50: with the triggers {put_ms['ours']:.2f} ms, "
            f"without {put_ms['bare']:.2f} ms"
        )
        for saver in (ours, full, bare):
            saver.pool.close()
    finally:
        with psycopg.connect(args.url, autocommit=True) as conn:
            for schema in schemas:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
