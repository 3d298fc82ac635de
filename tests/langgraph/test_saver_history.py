"""The checkpointers keep the messages they rebuilt at the checkpoint last read of a
thread, so the next turn replays only the writes since (issue 17), and never serve them
stale: after each way history can change (a write to an older checkpoint, delete_thread,
prune, copy_thread, rollback, a rewritten checkpoint, forget, another connection's
writes) a read equals what a fresh checkpointer with nothing kept reads from the database.
Each scenario runs on a SQLite file and on PostgreSQL (a schema of the real server, see
``pg``; each saver on a pool of its own, as another server's), with the chat graph's own
``ThreadState``."""

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
from agent_notebook.chat import build_chat_graph
from agent_notebook.chat.state import MESSAGES_SNAPSHOT_EVERY
from agent_notebook.langgraph.checkpoint.sqlite import NotebookSaver
from tests.support.chat_threads import (
    PostgresDb,
    SqliteDb,
    chat_graph,
    configs,
    expected,
    fresh_read,
    question,
    read,
    run,
    shape,
    thread,
)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    made = (SqliteDb if request.param == "sqlite" else PostgresDb)(tmp_path)
    yield made
    made.close()


@pytest.fixture
def saver(backend: Any) -> Any:
    return backend.saver()


@pytest.mark.slow
def test_turns_reuse_the_kept_value_and_read_exactly(
    saver: Any, backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = chat_graph(saver)
    run(graph, range(3))
    before = backend.epoch()
    full_reads: list[Any] = []  # LangGraph's own walk back to the snapshot
    full = saver.get_delta_channel_history
    monkeypatch.setattr(
        saver, "get_delta_channel_history", lambda **kw: full_reads.append(kw) or full(**kw)
    )
    # past a snapshot: one each MESSAGES_SNAPSHOT_EVERY updates of the list, two a turn
    for i in range(3, MESSAGES_SNAPSHOT_EVERY // 2 + 30):
        run(graph, range(i, i + 1))
        key = ("t", "")
        kept = saver._history.get(key, backend.epoch(), ["messages"])
        assert kept is not None  # the turn read through the value kept by the last one
        ids = [c["configurable"]["checkpoint_id"] for c in configs(saver)]
        assert kept.checkpoint_id in ids  # a snapshot's is not kept: it reads at once
    assert backend.epoch() == before  # a turn's own writes never mark history changed
    assert full_reads == []
    end = MESSAGES_SNAPSHOT_EVERY // 2 + 30
    assert read(saver) == expected(end) == fresh_read(backend)


def test_a_caller_changing_the_list_leaves_the_kept_value_alone(saver: Any) -> None:
    graph = chat_graph(saver)
    run(graph, range(3))
    found = saver.get_tuple(thread())
    assert found is not None
    found.checkpoint["channel_values"]["messages"].append(AIMessage("not stored"))
    assert read(saver) == expected(3)


def test_a_write_to_an_older_checkpoint_is_seen(saver: Any, backend: Any) -> None:
    graph = chat_graph(saver)
    run(graph, range(4))
    assert read(saver) == expected(4)
    older = configs(saver)[2]
    saver.put_writes(older, [("messages", [HumanMessage("late write")])], "late-task")
    assert read(saver) == fresh_read(backend)
    assert ("human", "late write") in read(saver)


def test_delete_thread_prune_and_copy_thread_are_seen(saver: Any, backend: Any) -> None:
    graph = chat_graph(saver)
    run(graph, range(4))
    run(graph, range(10, 12), name="other")
    assert read(saver) == expected(4)
    assert read(saver, "other") == expected(12, 10)
    saver.copy_thread("other", "t")  # the target's rows with the same ids are replaced
    assert read(saver) == fresh_read(backend)
    saver.delete_thread("t")
    assert read(saver) == [] == fresh_read(backend)
    run(graph, range(20, 22))
    assert read(saver) == expected(22, 20)
    if isinstance(backend, SqliteDb):
        saver.prune(["t"])
    else:  # LangGraph's PostgreSQL prune refuses delta threads: pruning to keep=1 instead
        backend.saver(keep=1)._prune_thread("t")
    assert read(saver) == expected(22, 20) == fresh_read(backend)
    run(graph, range(22, 23))
    assert read(saver) == expected(23, 20) == fresh_read(backend)


def test_keep_pruning_and_a_rollback_are_seen(backend: Any) -> None:
    saver = backend.saver(keep=2)
    graph = chat_graph(saver)
    run(graph, range(5))  # each put prunes (and materialises the oldest kept one)
    assert read(saver) == expected(5) == fresh_read(backend, keep=2)
    with pytest.raises(RuntimeError), saver.turn("t"):  # rolled back when it raises
        run(graph, range(5, 6))
        assert read(saver) == expected(6)
        raise RuntimeError("the turn failed")
    assert read(saver) == expected(5) == fresh_read(backend, keep=2)
    run(graph, range(5, 7))
    assert read(saver) == expected(7) == fresh_read(backend, keep=2)


def test_another_connection_writing_is_seen(saver: Any, backend: Any) -> None:
    graph = chat_graph(saver)
    run(graph, range(4))
    assert read(saver) == expected(4)
    other = backend.saver()  # another connection (on PostgreSQL another server's pool)
    older = configs(other)[1]
    other.put_writes(older, [("messages", [HumanMessage("from elsewhere")])], "x")
    assert ("human", "from elsewhere") in read(saver)
    before = backend.epoch()
    backend.execute("UPDATE checkpoint_writes SET blob = blob")  # a raw rewrite (a rotation's)
    assert backend.epoch() > before
    assert read(saver) == fresh_read(backend)
    run(chat_graph(other), range(4, 5))  # the other connection's turn
    assert read(saver) == fresh_read(backend)
    assert read(saver)[-2:] == expected(5)[-2:]
    run(graph, range(5, 7))  # and this one's again, through its kept value
    assert read(other) == read(saver) == fresh_read(backend)
    assert read(saver)[-4:] == expected(7)[-4:]


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


def test_a_fork_from_an_older_checkpoint_reads_its_own_history(saver: Any, backend: Any) -> None:
    graph = chat_graph(saver)
    run(graph, range(4))
    assert read(saver) == expected(4)
    fork_from = next(  # the checkpoint after two turns
        c
        for c in configs(saver)
        if shape(saver.get_tuple(c).checkpoint["channel_values"].get("messages", [])) == expected(2)
    )
    graph.invoke({"messages": [HumanMessage(question(9))]}, fork_from)
    assert read(saver) == [*expected(2), *expected(10, 9)] == fresh_read(backend)


def test_a_rewritten_checkpoint_is_seen(saver: Any, backend: Any) -> None:
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
    assert read(saver) == [("human", "rewritten"), *expected(8, 7)] == fresh_read(backend)


def test_a_database_without_the_counter_keeps_nothing_and_reads_exactly(tmp_path: Path) -> None:
    """A file LangGraph's own SqliteSaver wrote, opened read-only: no counter can be
    installed, so every read replays from the snapshot; opened writable, it gets one."""
    db = tmp_path / "checkpoints.db"
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
        assert read(saver) == expected(5) == read(NotebookSaver(conn))
        conn.execute("DROP TRIGGER checkpoint_history_w_update")  # then nothing is kept
        conn.commit()
        saver._history.clear()
        assert read(saver) == expected(5)
        assert not saver._history._entries
    finally:
        conn.close()
