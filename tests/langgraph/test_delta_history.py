"""Checkpoints store the chat graph's ``messages`` as deltas (LangGraph's ``DeltaChannel``,
issue 17): space grows about linearly with the thread, and history, time travel, forks,
pruning, ``delete_for_runs``, ``copy_thread`` and old full-blob databases still read the
exact message lists. Real SQLite files, the chat graph's own ``ThreadState``."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.checkpoint.sqlite import SqliteSaver

from agent_notebook.chat.state import MESSAGES_SNAPSHOT_EVERY
from agent_notebook.langgraph.checkpoint.sqlite import NotebookSaver
from tests.support.chat_threads import OldState, chat_graph, expected, question, run, shape, thread


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False)
    yield connection
    connection.close()


def stored_bytes(conn: sqlite3.Connection) -> int:
    (checkpoints,) = conn.execute(
        "SELECT SUM(LENGTH(checkpoint) + LENGTH(metadata)) FROM checkpoints"
    ).fetchone()
    (writes,) = conn.execute("SELECT SUM(LENGTH(value)) FROM writes").fetchone()
    return int(checkpoints) + int(writes)


def test_a_growing_message_list_takes_far_less_than_quadratic_space(
    conn: sqlite3.Connection,
) -> None:
    saver = NotebookSaver(conn)
    graph = chat_graph(saver)
    run(graph, range(70))
    (count,) = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()
    assert count >= 200
    messages = graph.get_state(thread()).values["messages"]
    assert shape(messages) == expected(70)
    once = len(JsonPlusSerializer().dumps_typed(messages)[1])  # the list, uncompressed
    # Whole lists in every checkpoint would take about count / 2 times ``once``.
    assert stored_bytes(conn) < 20 * once
    assert stored_bytes(conn) < count / 10 * once


def test_the_whole_list_is_stored_once_each_snapshot_interval(conn: sqlite3.Connection) -> None:
    """Issue 17: a whole message list every MESSAGES_SNAPSHOT_EVERY updates of it (two a
    turn), deltas between; the checkpoints on either side of a snapshot read exactly."""
    saver = NotebookSaver(conn)
    graph = chat_graph(saver)
    turns = MESSAGES_SNAPSHOT_EVERY // 2 + 5
    run(graph, range(turns))
    stored = list(saver.list(thread()))  # newest first, values as stored
    whole = [
        i
        for i, t in enumerate(stored)
        if isinstance(t.checkpoint["channel_values"].get("messages"), _DeltaSnapshot)
    ]
    assert len(whole) == 1
    fresh = chat_graph(NotebookSaver(conn))  # nothing kept: each read replays from disk
    lengths = []
    for at in (whole[0] + 1, whole[0], whole[0] - 1, 0):  # oldest first
        messages = shape(fresh.get_state(stored[at].config).values.get("messages", []))
        assert messages == expected(turns)[: len(messages)]
        lengths.append(len(messages))
    assert lengths[1] == MESSAGES_SNAPSHOT_EVERY
    assert lengths == sorted(lengths)
    assert lengths[-1] == 2 * turns


@pytest.mark.slow
def test_history_time_travel_and_forks_read_the_exact_lists(conn: sqlite3.Connection) -> None:
    graph = chat_graph(NotebookSaver(conn))
    run(graph, range(60))
    history = list(graph.get_state_history(thread()))
    ends = [s for s in history if not s.next]  # the state after each whole turn
    assert [shape(s.values["messages"]) for s in ends] == [expected(n) for n in range(60, 0, -1)]
    old = ends[-8]  # after turn 8
    assert shape(graph.get_state(old.config).values["messages"]) == expected(8)
    forked = graph.update_state(old.config, {"messages": [HumanMessage("a new branch")]})
    assert shape(graph.get_state(forked).values["messages"]) == [
        *expected(8),
        ("human", "a new branch"),
    ]
    graph.invoke(None, forked)  # nothing pending: the fork stays as it is
    again = graph.invoke({"messages": [HumanMessage(question(99))]}, forked)
    assert shape(again["messages"])[:17] == [*expected(8), ("human", "a new branch")]
    assert shape(again["messages"])[-2:] == expected(100, 99)
    # the main line is untouched by the fork's newer checkpoints only where it branched
    assert shape(graph.get_state(ends[0].config).values["messages"]) == expected(60)


@pytest.mark.slow
def test_prune_keep_latest_and_keep_n_keep_reads_correct(conn: sqlite3.Connection) -> None:
    saver = NotebookSaver(conn)
    graph = chat_graph(saver)
    run(graph, range(45), "a")
    run(graph, range(45), "b")
    saver.prune(["a"])
    (left,) = conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = 'a'").fetchone()
    assert left == 1
    assert shape(graph.get_state(thread("a")).values["messages"]) == expected(45)
    run(graph, range(45, 50), "a")
    assert shape(graph.get_state(thread("a")).values["messages"]) == expected(50)
    assert shape(graph.get_state(thread("b")).values["messages"]) == expected(45)

    keeping = NotebookSaver(conn, keep=4)
    kept = chat_graph(keeping)
    run(kept, range(70), "k")
    states = list(kept.get_state_history(thread("k")))
    assert len(states) == 4
    assert shape(states[0].values["messages"]) == expected(70)
    assert shape(states[-1].values["messages"])[: 2 * 69] == expected(69)


def test_delete_for_runs_and_copy_thread_keep_later_checkpoints_whole(
    conn: sqlite3.Connection,
) -> None:
    saver = NotebookSaver(conn)
    graph = chat_graph(saver)
    runs = [str(uuid4()) for _ in range(3)]
    for i, run_id in enumerate(runs):
        config: RunnableConfig = {**thread(), "metadata": {"run_id": run_id}}
        graph.invoke({"messages": [HumanMessage(question(i))]}, config)
    run(graph, range(3, 30))
    (count,) = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()
    saver.delete_for_runs(runs)
    marks = ", ".join("?" * len(runs))
    left = conn.execute(
        "SELECT COUNT(*) FROM checkpoints "
        f"WHERE json_extract(CAST(metadata AS TEXT), '$.run_id') IN ({marks})",
        runs,
    ).fetchone()
    assert left == (0,)
    assert count > conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    assert shape(graph.get_state(thread()).values["messages"]) == expected(30)
    saver.copy_thread("t", "copy")
    assert shape(graph.get_state(thread("copy")).values["messages"]) == expected(30)
    saver.delete_thread("t")
    assert shape(graph.get_state(thread("copy")).values["messages"]) == expected(30)


def test_an_old_full_blob_database_still_reads_and_goes_on(conn: sqlite3.Connection) -> None:
    old = chat_graph(SqliteSaver(conn), OldState)  # every checkpoint holds the whole list
    run(old, range(5))
    saver = NotebookSaver(conn)
    graph = chat_graph(saver)
    assert shape(graph.get_state(thread()).values["messages"]) == expected(5)
    run(graph, range(5, 40))
    assert shape(graph.get_state(thread()).values["messages"]) == expected(40)
    history = [s for s in graph.get_state_history(thread()) if not s.next]
    assert shape(history[-3].values["messages"]) == expected(3)  # an old-format checkpoint
    saver.prune(["t"])
    assert shape(graph.get_state(thread()).values["messages"]) == expected(40)


def test_async_runs_read_the_same(conn: sqlite3.Connection) -> None:
    graph = chat_graph(NotebookSaver(conn))

    async def go() -> list[list[tuple[str, str]]]:
        for i in range(30):
            await graph.ainvoke({"messages": [HumanMessage(question(i))]}, thread())
        states = [s async for s in graph.aget_state_history(thread()) if not s.next]
        return [shape(s.values["messages"]) for s in states]

    assert asyncio.run(go()) == [expected(n) for n in range(30, 0, -1)]
