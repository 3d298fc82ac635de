"""The SQLite checkpointer keeps the messages it rebuilt at the checkpoint last read of a
thread, so the next turn replays only the writes since (issue 17), and never serves them
stale: after each way history can change (a write to an older checkpoint, delete_thread,
prune, copy_thread, rollback, a rewritten checkpoint, forget, another connection's
writes) a read equals what a fresh checkpointer with nothing kept reads from the file.
Real SQLite files, the chat graph's own ``ThreadState``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.checkpoint.sqlite import SqliteSaver

from agent_notebook import Notebook
from agent_notebook.graph import build_chat_graph
from agent_notebook.saver import NotebookSaver
from agent_notebook.saver_history import read_epoch
from test_saver_delta import chat_graph, expected, question, run, shape, thread


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "checkpoints.db"


@pytest.fixture
def saver(db: Path) -> Iterator[NotebookSaver]:
    conn = sqlite3.connect(db, check_same_thread=False)
    yield NotebookSaver(conn)
    conn.close()


def fresh_read(db: Path, name: str = "t", **kw: Any) -> list[tuple[str, str]]:
    """The messages of thread ``name`` as a new checkpointer (nothing kept) reads them."""
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        found = NotebookSaver(conn, **kw).get_tuple(thread(name))
        return [] if found is None else shape(found.checkpoint["channel_values"]["messages"])
    finally:
        conn.close()


def read(saver: NotebookSaver, name: str = "t") -> list[tuple[str, str]]:
    found = saver.get_tuple(thread(name))
    return [] if found is None else shape(found.checkpoint["channel_values"]["messages"])


def epoch(saver: NotebookSaver) -> int:
    with saver.cursor(transaction=False) as cur:
        found = read_epoch(cur)
    assert found is not None
    return found


def configs(saver: NotebookSaver, name: str = "t") -> list[Any]:
    """The thread's checkpoint configs, oldest first."""
    return [t.config for t in reversed(list(saver.list(thread(name))))]


def test_turns_reuse_the_kept_value_and_read_exactly(saver: NotebookSaver, db: Path) -> None:
    graph = chat_graph(saver)
    run(graph, range(3))
    before = epoch(saver)
    for i in range(3, 130):  # past a snapshot (every 100 updates)
        run(graph, range(i, i + 1))
        key = ("t", "")
        kept = saver._history.get(key, epoch(saver), ["messages"])
        assert kept is not None  # the turn read through the value kept by the last one
        ids = [c["configurable"]["checkpoint_id"] for c in configs(saver)]
        assert kept.checkpoint_id in ids  # a snapshot's is not kept: it reads at once
    assert epoch(saver) == before  # a turn's own writes never mark history changed
    assert read(saver) == expected(130) == fresh_read(db)


def test_a_caller_changing_the_list_leaves_the_kept_value_alone(saver: NotebookSaver) -> None:
    graph = chat_graph(saver)
    run(graph, range(3))
    found = saver.get_tuple(thread())
    assert found is not None
    found.checkpoint["channel_values"]["messages"].append(AIMessage("not stored"))
    assert read(saver) == expected(3)


def test_a_write_to_an_older_checkpoint_is_seen(saver: NotebookSaver, db: Path) -> None:
    graph = chat_graph(saver)
    run(graph, range(4))
    assert read(saver) == expected(4)
    older = configs(saver)[2]
    saver.put_writes(older, [("messages", [HumanMessage("late write")])], "late-task")
    assert read(saver) == fresh_read(db)
    assert ("human", "late write") in read(saver)


def test_delete_thread_prune_and_copy_thread_are_seen(saver: NotebookSaver, db: Path) -> None:
    graph = chat_graph(saver)
    run(graph, range(4))
    run(graph, range(10, 12), name="other")
    assert read(saver) == expected(4)
    assert read(saver, "other") == expected(12, 10)
    saver.copy_thread("other", "t")  # the target's rows with the same ids are replaced
    assert read(saver) == fresh_read(db)
    saver.delete_thread("t")
    assert read(saver) == [] == fresh_read(db)
    run(graph, range(20, 22))
    assert read(saver) == expected(22, 20)
    saver.prune(["t"])
    assert read(saver) == expected(22, 20) == fresh_read(db)
    run(graph, range(22, 23))
    assert read(saver) == expected(23, 20) == fresh_read(db)


def test_keep_pruning_and_a_rollback_are_seen(db: Path) -> None:
    conn = sqlite3.connect(db, check_same_thread=False)
    saver = NotebookSaver(conn, keep=2)
    graph = chat_graph(saver)
    run(graph, range(5))  # each put prunes (and materialises the oldest kept one)
    assert read(saver) == expected(5) == fresh_read(db, keep=2)
    with pytest.raises(RuntimeError), saver.turn("t"):  # rolled back when it raises
        run(graph, range(5, 6))
        assert read(saver) == expected(6)
        raise RuntimeError("the turn failed")
    assert read(saver) == expected(5) == fresh_read(db, keep=2)
    run(graph, range(5, 7))
    assert read(saver) == expected(7) == fresh_read(db, keep=2)
    conn.close()


def test_another_connection_writing_is_seen(saver: NotebookSaver, db: Path) -> None:
    graph = chat_graph(saver)
    run(graph, range(4))
    assert read(saver) == expected(4)
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        other = NotebookSaver(conn)
        older = configs(other)[1]
        other.put_writes(older, [("messages", [HumanMessage("from elsewhere")])], "x")
        assert ("human", "from elsewhere") in read(saver)
        conn.execute("UPDATE writes SET value = value")  # a raw rewrite, e.g. a key rotation
        conn.commit()
        assert read(saver) == fresh_read(db)
        run(chat_graph(other), range(4, 5))  # the other connection's turn
        assert read(saver) == fresh_read(db)
        assert read(saver)[-2:] == expected(5)[-2:]
    finally:
        conn.close()


def test_forget_scrubs_the_messages_a_thread_reads_next(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with Notebook.open(home, background_embedding=False) as nb:
        graph = build_chat_graph(nb, model=FakeListChatModel(responses=["Noted."] * 10))
        for text in ("The vault code is zebracactus.", "Anything else?", "Thanks."):
            graph.invoke({"messages": [HumanMessage(text)]}, thread("t-1"))
        assert "zebracactus" in str(graph.get_state(thread("t-1")).values["messages"])
        nb.forget("zebracactus", "history test")
        messages = graph.get_state(thread("t-1")).values["messages"]
        assert "zebracactus" not in str(messages)
        assert len(messages) == 6
        state = graph.invoke({"messages": [HumanMessage("Still there?")]}, thread("t-1"))
        assert "zebracactus" not in str(state["messages"])


def test_a_fork_from_an_older_checkpoint_reads_its_own_history(
    saver: NotebookSaver, db: Path
) -> None:
    graph = chat_graph(saver)
    run(graph, range(4))
    assert read(saver) == expected(4)
    fork_from = next(  # the checkpoint after two turns
        c
        for c in configs(saver)
        if shape(saver.get_tuple(c).checkpoint["channel_values"].get("messages", [])) == expected(2)
    )
    graph.invoke({"messages": [HumanMessage(question(9))]}, fork_from)
    assert read(saver) == [*expected(2), *expected(10, 9)] == fresh_read(db)


def test_a_rewritten_checkpoint_is_seen(saver: NotebookSaver, db: Path) -> None:
    graph = chat_graph(saver)
    run(graph, range(7))
    # The checkpoint kept from the last read stored again (as materialise does), under a
    # newer one: the newer one reads through the rewritten value.
    kept = saver.get_tuple(thread())
    assert kept is not None
    run(graph, range(7, 8))
    checkpoint = kept.checkpoint
    checkpoint["channel_values"]["messages"] = _DeltaSnapshot([HumanMessage("rewritten")])
    saver._rewrite_checkpoint(kept, checkpoint)
    assert read(saver) == [("human", "rewritten"), *expected(8, 7)] == fresh_read(db)


def test_a_database_without_the_counter_keeps_nothing_and_reads_exactly(db: Path) -> None:
    """A file LangGraph's own SqliteSaver wrote, opened read-only: no counter can be
    installed, so every read replays from the snapshot; opened writable, it gets one."""
    conn = sqlite3.connect(db, check_same_thread=False)
    run(chat_graph(SqliteSaver(conn)), range(3))
    conn.close()
    ro = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, check_same_thread=False)
    try:
        reader = NotebookSaver(ro)
        assert read(reader) == expected(3)
        assert read(reader) == expected(3)
        assert not reader._history._entries
    finally:
        ro.close()
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        saver = NotebookSaver(conn)
        run(chat_graph(saver), range(3, 5))
        assert saver._history._entries
        assert read(saver) == expected(5) == fresh_read(db)
        conn.execute("DROP TRIGGER checkpoint_history_w_update")  # then nothing is kept
        conn.commit()
        saver._history.clear()
        assert read(saver) == expected(5)
        assert not saver._history._entries
    finally:
        conn.close()
