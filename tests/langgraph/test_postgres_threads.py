"""Threads and session notebooks of a PostgreSQL notebook on LangGraph's ``PostgresSaver``
and ``PostgresStore``, on a real server (see ``pg``): LangGraph's conformance suite sync and
async, plain and encrypted; a thread kept across two servers; a failed turn changes no
checkpoint; redaction reaches the checkpoint and store rows."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage

from agent_notebook import Notebook
from agent_notebook.chat import build_chat_graph
from agent_notebook.core.crypto import generate_key, write_key_file
from agent_notebook.langgraph.checkpoint.base import CheckpointPruned
from agent_notebook.langgraph.checkpoint.postgres import NotebookPostgresSaver
from agent_notebook.langgraph.store.postgres import NotebookPostgresStore, SealedPostgresStore
from tests.support import pg
from tests.support.chat_models import RecordingModel
from tests.support.checkpoint_conformance import KEY_ENV, notebook_supply, passes_conformance

THREAD = {"configurable": {"thread_id": "t-pg"}}


def open_notebook(
    home: Path, url: str, *, encrypted: bool = False, keep: int | None = None
) -> Notebook:
    """A Postgres notebook whose config lives in ``home`` (made once)."""
    if not home.exists():
        home.mkdir(parents=True, mode=0o700)
        lines = []
        if encrypted:
            key = write_key_file(home.parent / "keys" / home.name, generate_key())
            lines.append(f"privacy:\n  encryption:\n    enabled: true\n    key_file: {key}\n")
        if keep is not None:
            lines.append(f"chat:\n  keep_checkpoints: {keep}\n")
        config = home / "config.yaml"
        config.write_text("".join(lines))
        config.chmod(0o600)
    return Notebook.open(home, backend=url, background_embedding=False)


def rows(url: str, statement: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return list(conn.execute(statement).fetchall())


def everything(url: str) -> str:
    """Every checkpoint, blob, write and store value of the schema, as text."""
    found = rows(
        url,
        "SELECT blob FROM checkpoint_blobs UNION ALL SELECT blob FROM checkpoint_writes "
        "UNION ALL SELECT convert_to(checkpoint::text || metadata::text, 'UTF8') "
        "FROM checkpoints UNION ALL SELECT convert_to(value::text, 'UTF8') FROM store",
    )
    return b"".join(bytes(blob) for (blob,) in found if blob is not None).decode("utf-8", "replace")


@pytest.fixture(params=["plain", "encrypted"])
def notebooks(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Iterator[Notebook]]:
    """Fresh Postgres notebooks, each in a schema of its own, closed after the test."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    encrypted = request.param == "encrypted"
    yield from notebook_supply(
        tmp_path, lambda home: open_notebook(home, pg.url_with_schema(home), encrypted=encrypted)
    )


@pytest.mark.slow
@pytest.mark.parametrize("api", ["async", "sync"])
def test_the_postgres_checkpointer_passes_langgraph_conformance_in_full(
    notebooks: Iterator[Notebook], api: str, request: pytest.FixtureRequest
) -> None:
    passes_conformance(
        notebooks, api, request, NotebookPostgresSaver, "Postgres Notebook.checkpointer"
    )


def test_a_thread_goes_on_through_another_server(tmp_path: Path) -> None:
    url = pg.url_with_schema(tmp_path)
    first, second = (open_notebook(tmp_path / name, url) for name in ("a", "b"))
    try:
        assert isinstance(first.store, NotebookPostgresStore)
        one = build_chat_graph(first, model=FakeListChatModel(responses=["Booked Lyon."]))
        one.invoke({"messages": [HumanMessage("Book the train to Lyon")]}, THREAD)
        two = build_chat_graph(second, model=FakeListChatModel(responses=["And back."]))
        state = two.invoke({"messages": [HumanMessage("And back on the 9th?")]}, THREAD)
        assert [m.text for m in state["messages"]] == [
            "Book the train to Lyon",
            "Booked Lyon.",
            "And back on the 9th?",
            "And back.",
        ]
        assert first.thread_session("t-pg") == second.thread_session("t-pg")
        state = asyncio.run(two.aget_state(THREAD))
        assert len(state.values["messages"]) == 4
        # every checkpoint kept: one a turn (chat.checkpoint_durability) and the anchor
        assert len(list(one.get_state_history(THREAD))) == 3
    finally:
        first.close()
        second.close()
    assert rows(url, "SELECT count(*) FROM checkpoints")[0][0] == 3  # in the database


@pytest.mark.parametrize("keep", [None, 2])
def test_a_failed_turn_changes_no_checkpoint(tmp_path: Path, keep: int | None) -> None:
    url = pg.url_with_schema(tmp_path)
    nb = open_notebook(tmp_path / "home", url, keep=keep)
    table = (
        "SELECT 'c', thread_id, checkpoint_ns, checkpoint_id FROM checkpoints UNION ALL "
        "SELECT 'w', thread_id, checkpoint_id, task_id || idx FROM checkpoint_writes UNION ALL "
        "SELECT 'b', thread_id, channel, version FROM checkpoint_blobs ORDER BY 1, 2, 3, 4"
    )
    try:
        good = build_chat_graph(nb, model=FakeListChatModel(responses=["Done."] * 3))
        for text in ("one", "two"):
            good.invoke({"messages": [HumanMessage(text)]}, THREAD)
        before = rows(url, table)
        failing = build_chat_graph(nb, model=RecordingModel(error="the provider is down"))
        line = {"messages": [HumanMessage("Book the taxi")]}
        with pytest.raises(RuntimeError, match="provider is down"):
            failing.invoke(line, THREAD)
        assert rows(url, table) == before
        with pytest.raises(RuntimeError, match="provider is down"):
            asyncio.run(failing.ainvoke(line, THREAD))
        assert rows(url, table) == before
        good.invoke(line, THREAD)
        # the whole conversation still reads, pruned or not (messages are a delta channel)
        texts = [m.text for m in good.get_state(THREAD).values["messages"]]
        assert texts == ["one", "Done.", "two", "Done.", "Book the taxi", "Done."]
        history = list(good.get_state_history(THREAD))
        if keep is None:
            assert len(history) == 4  # one a turn, and the first run's anchor
        else:
            assert len(history) == keep
            oldest = {"configurable": {**THREAD["configurable"], "checkpoint_id": "0"}}
            with pytest.raises(CheckpointPruned, match="keep_checkpoints"):
                good.get_state(oldest)
            assert rows(url, "SELECT count(*) FROM checkpoints")[0][0] == keep
    finally:
        nb.close()


@pytest.mark.parametrize("encrypted", [False, True])
def test_redact_removes_the_text_from_checkpoint_and_store_rows(
    tmp_path: Path, encrypted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    url = pg.url_with_schema(tmp_path)
    nb = open_notebook(tmp_path / "home", url, encrypted=encrypted)
    secret = "my passport is X1234567"
    try:
        assert isinstance(nb.store, SealedPostgresStore) is encrypted
        graph = build_chat_graph(nb, model=FakeListChatModel(responses=[f"Noted: {secret}."]))
        graph.invoke({"messages": [HumanMessage(f"Remember {secret}")]}, THREAD)
        nb.store.put(("app",), "note", {"text": f"Remember {secret}"}, index=False)
        session = nb.thread_session("t-pg")
        assert (secret in everything(url)) is not encrypted  # sealed when encrypted
        for moment in nb.moments(session):
            if secret in (moment.content.text or ""):
                nb.redact(moment.id, "a passport number")
        assert "X1234567" not in everything(url)
        state = graph.get_state(THREAD).values
        assert all("X1234567" not in m.text for m in state["messages"])
        assert "X1234567" not in str(nb.store.get(("app",), "note").value)
    finally:
        nb.close()


def test_a_store_index_config_is_honoured(tmp_path: Path) -> None:
    """No pgvector needed: an app's own ``index`` config (LangGraph's) embeds and ranks
    (the rest of the semantic store: test_store_index.py)."""
    url = pg.url_with_schema(tmp_path)
    (tmp_path / "home").mkdir(mode=0o700)

    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] if "hello" in t else [0.0, 1.0] for t in texts]

    index = {"dims": 2, "embed": embed}
    nb = Notebook.open(tmp_path / "home", backend=url, store_index=index)  # type: ignore[arg-type]
    try:
        nb.store.put(("app",), "x", {"text": "hello"})
        nb.store.put(("app",), "y", {"text": "bye"})
        assert nb.store.get(("app",), "x").value == {"text": "hello"}  # type: ignore[union-attr]
        assert asyncio.run(nb.store.aget(("app",), "x")).value == {"text": "hello"}  # type: ignore[union-attr]
        hits = nb.store.search(("app",), query="hello there")
        assert [(h.key, h.score) for h in hits] == [("x", 1.0), ("y", 0.0)]
    finally:
        nb.close()
