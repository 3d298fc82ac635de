"""The notebook's checkpointer stores checkpoint and write values deflated (issue 17: bytes
on disk): tagged ``msgpack.z2`` (``.z1`` before, still read), read back exactly, plain rows
written before (by LangGraph's own ``SqliteSaver``) still read, and under encryption the
compressed bytes are sealed."""

from __future__ import annotations

import hashlib
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from agent_notebook.chat.state import ThreadState
from agent_notebook.core.crypto import CHECKPOINT_CIPHER, Cipher, generate_key
from agent_notebook.langgraph.checkpoint.codec import (
    DICTIONARY_V1,
    DICTIONARY_V2,
    TAG_V1,
    TAG_V2,
    CompressedSerializer,
    compress,
    decompress,
)
from agent_notebook.langgraph.checkpoint.sqlite import NotebookSaver

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}


def answer(state: ThreadState) -> dict[str, Any]:
    return {"messages": [AIMessage(f"noted: {state['messages'][-1].content}")]}


def graph_on(saver: Any) -> Any:
    graph = StateGraph(ThreadState)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph.compile(checkpointer=saver)


def texts(graph: Any) -> list[str]:
    return [m.text for m in graph.get_state(THREAD).values["messages"]]


def stored_types(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute(
        "SELECT type FROM checkpoints UNION SELECT type FROM writes WHERE type IS NOT NULL"
    )
    return {row[0] for row in rows}


def test_values_round_trip_smaller_and_tagged() -> None:
    serde = CompressedSerializer(JsonPlusSerializer())
    value = [HumanMessage("Book the 7:40 train to Lyon", id="h1"), AIMessage("Booked.", id="a1")]
    plain_type, plain = JsonPlusSerializer().dumps_typed(value)
    type_, data = serde.dumps_typed(value)
    assert type_ == plain_type + TAG_V2 and len(data) < len(plain)
    assert serde.loads_typed((type_, data)) == value
    assert serde.dumps_typed(None) == JsonPlusSerializer().dumps_typed(None)  # too small
    assert serde.loads_typed((plain_type, plain)) == value  # an uncompressed row


def test_a_truncated_value_is_an_error_not_a_wrong_value() -> None:
    _, data = CompressedSerializer(JsonPlusSerializer()).dumps_typed({"text": "x" * 300})
    with pytest.raises((ValueError, zlib.error)):
        decompress(data[: len(data) // 2], TAG_V2)
    with pytest.raises((ValueError, zlib.error)):
        decompress(compress(b"y" * 300, TAG_V1)[:5], TAG_V1)


def test_values_written_as_z1_still_read() -> None:
    value = [HumanMessage("Book the 7:40 train to Lyon", id="h1"), AIMessage("Booked.", id="a1")]
    plain_type, plain = JsonPlusSerializer().dumps_typed(value)
    old = (plain_type + TAG_V1, compress(plain, TAG_V1))
    assert CompressedSerializer(JsonPlusSerializer()).loads_typed(old) == value


def test_the_dictionaries_are_frozen_and_v2_packs_english_smaller() -> None:
    """Stored values name their dictionary by tag: editing one would misread its rows."""
    assert hashlib.sha256(DICTIONARY_V1).hexdigest() == (
        "e294ea44bd6fdec56ca7afbfdcd5d91ef2dc5d84e9d6b81e4de553509cbfdd46"
    )
    assert hashlib.sha256(DICTIONARY_V2).hexdigest() == (
        "fd6fea3a756a6270c438c4e6703b78a549d5277bd6f8b26d3b7bea104b2e15a3"
    )
    message = HumanMessage(
        "Oh I'm so glad you asked! We went there last summer and honestly it was the best "
        "trip we have ever had, the kids still talk about it.",
        id="5777b1bc-7520-4fa0-9f05-ae5abdb854c6",
    )
    _, plain = JsonPlusSerializer().dumps_typed([message])
    assert len(compress(plain, TAG_V2)) < len(compress(plain, TAG_V1)) < len(plain)
    assert decompress(compress(plain, TAG_V2), TAG_V2) == plain


def test_a_thread_written_by_sqlitesaver_reads_and_grows(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False)
    try:
        old = SqliteSaver(conn)
        old.setup()
        graph_on(old).invoke({"messages": [HumanMessage("one")]}, THREAD)
        assert stored_types(conn) <= {"msgpack", "null"}
        graph = graph_on(NotebookSaver(conn))
        assert texts(graph) == ["one", "noted: one"]
        graph.invoke({"messages": [HumanMessage("two " * 30)]}, THREAD)
        assert texts(graph) == ["one", "noted: one", "two " * 30, "noted: " + "two " * 30]
        assert "msgpack" + TAG_V2 in stored_types(conn)
        history = list(graph.get_state_history(THREAD))
        assert len(history) == 6  # every checkpoint, both kinds
        new, old = history[0].config, history[3].config
        new_versions = NotebookSaver(conn).get_tuple(new).checkpoint["channel_versions"]  # type: ignore[union-attr]
        old_versions = old_saver_versions(conn, old)
        assert all(
            "." not in str(v) for v in new_versions.values() if v not in old_versions.values()
        )
        assert max(new_versions.values()) > max(old_versions.values())  # newer sorts above
    finally:
        conn.close()


def old_saver_versions(conn: sqlite3.Connection, config: RunnableConfig) -> dict[str, Any]:
    found = SqliteSaver(conn).get_tuple(config)
    assert found is not None
    return dict(found.checkpoint["channel_versions"])


def test_encrypted_checkpoints_are_compressed_then_sealed(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False)
    try:
        saver = NotebookSaver(conn)
        saver.setup()
        cipher = Cipher(generate_key()).checkpoint_cipher()
        saver.serde = EncryptedSerializer(cipher, saver.serde)  # as Notebook.checkpointer does
        graph = graph_on(saver)
        secret = "the safe's code is 4417 " * 10
        graph.invoke({"messages": [HumanMessage(secret)]}, THREAD)
        assert texts(graph) == [secret, "noted: " + secret]
        assert f"msgpack{TAG_V2}+{CHECKPOINT_CIPHER}" in stored_types(conn)
        blobs = conn.execute("SELECT checkpoint FROM checkpoints").fetchall()
        values = conn.execute("SELECT value FROM writes").fetchall()
        assert not any(b"4417" in bytes(row[0] or b"") for row in blobs + values)
    finally:
        conn.close()
