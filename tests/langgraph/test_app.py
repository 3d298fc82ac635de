"""The notebook as a drop-in for a LangGraph / LangChain app: langchain's ``create_agent``
with ``nb.store`` (semantic search) and ``nb.checkpointer``, run with ``invoke`` and
``ainvoke``; history, forks, ``interrupt`` and ``Command(resume=...)``; the chat graph async;
a pruning checkpointer's clear error. Real SQLite files, langchain_core's fake chat models,
the notebook's own embedder (whatever model it is). The semantic store's tests run on a
PostgreSQL notebook's store too (its vectors in the schema, see ``pg``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.config import get_store
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from agent_notebook import Notebook
from agent_notebook.chat import build_chat_graph
from agent_notebook.config import ChatSettings
from agent_notebook.langgraph.checkpoint.sqlite import CheckpointPruned
from tests.support import pg

NOTES = ("notes",)
FACTS = {
    "cat": "Our cat Miso sleeps on the radiator all winter and chases moths.",
    "rent": "The flat's rent of 900 euros is due on the first of each month.",
    "train": "The night train to Vienna leaves Munich at 23:15 from platform 11.",
}


class ToolCallingFake(GenericFakeChatModel):
    """GenericFakeChatModel that accepts tools (it answers from its script regardless)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingFake:
        return self


BACKENDS = pytest.mark.parametrize("nb", ["sqlite", "postgres"], indirect=True)


@pytest.fixture
def nb(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Notebook]:
    """A notebook with notes in its store: SQLite, or (``nb`` parametrised) PostgreSQL."""
    backend = pg.url_with_schema(tmp_path) if getattr(request, "param", "") == "postgres" else None
    notebook = Notebook.open(tmp_path / "home", backend=backend, background_embedding=False)
    for key, text in FACTS.items():
        notebook.store.put(NOTES, key, {"text": text})
    yield notebook
    notebook.close()


@tool
def recall(query: str) -> str:
    """Search the notes by meaning."""
    hits = get_store().search(NOTES, query=query, limit=1)
    return hits[0].key if hits else "nothing"


def script(query: str) -> ToolCallingFake:
    return ToolCallingFake(
        messages=iter(
            [
                AIMessage(
                    "", tool_calls=[{"name": "recall", "args": {"query": query}, "id": "c1"}]
                ),
                AIMessage("Found it."),
            ]
        )
    )


def agent(nb: Notebook, query: str) -> Any:
    return create_agent(script(query), [recall], checkpointer=nb.checkpointer, store=nb.store)


def store_vectors(nb: Notebook, key: str) -> list[bytes]:
    """The stored vectors of the item ``key``, read from its store's table."""
    if nb.backend.capabilities.name == "postgres":
        import psycopg

        from agent_notebook.langgraph.store.postgres import VECTOR_TABLE

        with psycopg.connect(nb.backend.url, **nb.backend.connect_kwargs) as conn:  # type: ignore[attr-defined]
            statement = f"SELECT embedding FROM {VECTOR_TABLE} WHERE key = %s"
            return [bytes(v) for (v,) in conn.execute(statement, (key,)).fetchall()]
    conn = nb.store.conn  # type: ignore[attr-defined]
    return [v for (v,) in conn.execute("SELECT embedding FROM store_vectors WHERE key = ?", (key,))]


@BACKENDS
def test_the_store_ranks_by_meaning_with_scores(nb: Notebook) -> None:
    hits = nb.store.search(NOTES, query="pets and animals at home")
    assert hits[0].key == "cat"
    assert all(hit.score is not None for hit in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    nb.store.put(NOTES, "shopping", {"title": "groceries", "body": "cat food"}, index=["title"])
    found = asyncio.run(nb.store.asearch(NOTES, query="buying food at the supermarket"))
    assert found[0].key == "shopping"  # only its title was embedded, and it matches


@BACKENDS
def test_an_agent_on_the_notebook_works_sync_and_async(nb: Notebook) -> None:
    config = {"configurable": {"thread_id": "sync"}}
    result = agent(nb, "monthly housing payment").invoke(
        {"messages": [HumanMessage("when is the rent due?")]}, config
    )
    assert [m.type for m in result["messages"]] == ["human", "ai", "tool", "ai"]
    assert result["messages"][2].content == "rent"  # the store's semantic search answered

    config = {"configurable": {"thread_id": "async"}}
    result = asyncio.run(
        agent(nb, "travelling overnight by rail").ainvoke(
            {"messages": [HumanMessage("which train?")]}, config
        )
    )
    assert result["messages"][2].content == "train"
    history = list(agent(nb, "x").get_state_history(config))
    assert len(history) >= 4  # every checkpoint kept: input, model, tools, model
    async_history = asyncio.run(_collect(agent(nb, "x").aget_state_history(config)))
    assert [s.config for s in async_history] == [s.config for s in history]


async def _collect(found: Any) -> list[Any]:
    return [item async for item in found]


class Counter(TypedDict):
    count: int
    approved: str


def counter_app(nb: Notebook) -> Any:
    def add(state: Counter) -> dict[str, int]:
        return {"count": state["count"] + 1}

    def ask(state: Counter) -> dict[str, str]:
        return {"approved": interrupt(f"approve {state['count']}?")}

    graph = StateGraph(Counter)
    graph.add_node("add", add)
    graph.add_node("ask", ask)
    graph.add_edge(START, "add")
    graph.add_edge("add", "ask")
    return graph.compile(checkpointer=nb.checkpointer, store=nb.store)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_history_forks_and_interrupts_work_as_with_sqlite_saver(nb: Notebook, mode: str) -> None:
    app, config = counter_app(nb), {"configurable": {"thread_id": f"counter-{mode}"}}
    if mode == "sync":
        paused = app.invoke({"count": 0, "approved": ""}, config)
        done = app.invoke(Command(resume="yes"), config)
    else:
        paused = asyncio.run(app.ainvoke({"count": 0, "approved": ""}, config))
        done = asyncio.run(app.ainvoke(Command(resume="yes"), config))
    assert paused["__interrupt__"][0].value == "approve 1?"
    assert done == {"count": 1, "approved": "yes"}

    history = list(app.get_state_history(config))
    assert len(history) == 4  # input, add, ask (paused), ask (resumed)
    first = history[-2]  # after the input, before "add"
    assert first.values == {"count": 0, "approved": ""}
    fork = app.update_state(first.config, {"count": 10})
    assert app.get_state(fork).values == {"count": 10, "approved": ""}
    assert app.get_state(fork).parent_config == first.config
    resumed = app.invoke(None, fork)  # time travel: goes on from the fork
    assert resumed["__interrupt__"][0].value == "approve 11?"


def test_a_pruned_checkpoint_is_a_clear_error_not_an_empty_state(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text("chat:\n  keep_checkpoints: 2\n")
    with Notebook.open(home, background_embedding=False) as nb:
        app, config = counter_app(nb), {"configurable": {"thread_id": "t"}}
        app.invoke({"count": 0, "approved": ""}, config)
        app.invoke(Command(resume="ok"), config)
        kept = list(app.get_state_history(config))
        assert len(kept) == 2
        pruned = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "0"}}
        with pytest.raises(CheckpointPruned, match=r"was pruned.*keep_checkpoints"):
            app.get_state(pruned)
        with pytest.raises(CheckpointPruned):
            app.update_state(pruned, {"count": 5})


def test_the_chat_graph_runs_async(nb: Notebook) -> None:
    graph = build_chat_graph(nb, model=FakeListChatModel(responses=["Noted, the 23:15."] * 9))
    config = {"configurable": {"thread_id": "chat-async"}}

    async def run() -> tuple[dict[str, Any], list[str], list[str]]:
        state = await graph.ainvoke({"messages": [HumanMessage("the Vienna train?")]}, config)
        chunks = [
            chunk.text
            async for chunk, _ in graph.astream(
                {"messages": [HumanMessage("and the platform?")]}, config, stream_mode="messages"
            )
        ]
        events = [
            event["event"]
            async for event in graph.astream_events(
                {"messages": [HumanMessage("thanks")]}, config, version="v2"
            )
        ]
        return state, chunks, events

    state, chunks, events = asyncio.run(run())
    assert state["messages"][-1].content == "Noted, the 23:15."
    assert "".join(chunks) == "Noted, the 23:15."
    assert "on_chat_model_start" in events and "on_chain_end" in events
    session = nb.thread_session("chat-async")
    texts = [m.content.text for m in nb.moments(session)]
    assert texts[-2:] == ["thanks", "Noted, the 23:15."]  # every turn recorded
    # every checkpoint kept: one a turn (chat.checkpoint_durability "exit") and the first
    # run's anchor (no values; the input is its write)
    history = list(graph.get_state_history(config))
    assert [len(s.values["messages"]) for s in history] == [6, 4, 2, 0]


@pytest.mark.parametrize("keep", [None, 2])
def test_async_turns_leave_the_state_sync_turns_do(tmp_path: Path, keep: int | None) -> None:
    """The same turns through ``invoke`` and ``ainvoke`` on two notebooks: the same
    messages in the state, the same moments, as many checkpoints (and with
    ``keep_checkpoints`` the async turn's end still prunes)."""
    texts = ["the Vienna train?", "and the platform?", "thanks"]

    def turns(home: Path, run_async: bool) -> tuple[list[str], list[str], int]:
        home.mkdir(mode=0o700)
        if keep is not None:
            (home / "config.yaml").write_text(f"chat:\n  keep_checkpoints: {keep}\n")
        with Notebook.open(home, background_embedding=False) as nb:
            graph = build_chat_graph(nb, model=FakeListChatModel(responses=["Noted."] * 3))
            config = {"configurable": {"thread_id": "same"}}

            async def run_all() -> None:
                for text in texts:
                    await graph.ainvoke({"messages": [HumanMessage(text)]}, config)

            if run_async:
                asyncio.run(run_all())
            else:
                for text in texts:
                    graph.invoke({"messages": [HumanMessage(text)]}, config)
            state = graph.get_state(config).values
            moments = [m.content.text for m in nb.moments(nb.thread_session("same"))]
            return (
                [m.text for m in state["messages"]],
                moments,
                len(list(graph.get_state_history(config))),
            )

    sync, async_ = turns(tmp_path / "sync", False), turns(tmp_path / "async", True)
    assert async_ == sync
    assert sync[0] == [text for pair in zip(texts, ["Noted."] * 3, strict=True) for text in pair]
    assert sync[2] == (keep or 4)


def test_the_chat_graph_checkpoints_every_step_when_asked(nb: Notebook) -> None:
    chat = nb.config.chat.model_copy(update={"checkpoint_durability": "async"})
    model = FakeListChatModel(responses=["Noted."] * 4)
    config = {"configurable": {"thread_id": "per-step"}}
    graph = build_chat_graph(nb, model=model, settings=chat)
    for text in ("one", "two"):
        graph.invoke({"messages": [HumanMessage(text)]}, config)
    assert len(list(graph.get_state_history(config))) == 6  # input, start, answer a turn
    graph = build_chat_graph(nb, model=model)  # the default, on the same thread
    graph.invoke({"messages": [HumanMessage("three")]}, config)
    graph.invoke({"messages": [HumanMessage("four")]}, config, durability="sync")  # the run's
    history = list(graph.get_state_history(config))
    assert len(history) == 6 + 1 + 3
    assert [m.text for m in history[0].values["messages"]] == [
        "one",
        "Noted.",
        "two",
        "Noted.",
        "three",
        "Noted.",
        "four",
        "Noted.",
    ]


def test_chat_settings_keep_every_checkpoint_by_default() -> None:
    assert ChatSettings().keep_checkpoints is None


@pytest.mark.slow
@BACKENDS
def test_redaction_reaches_the_store_and_its_vectors(nb: Notebook) -> None:
    secret = "The safe's code is 4417, behind the Vermeer print in the hall."
    session = nb.start_session("House")
    moment = nb.record(session.id, secret)
    nb.store.put(NOTES, "safe", {"text": secret})
    before = store_vectors(nb, "safe")
    nb.redact(moment.id, "no codes in the notebook")
    item = nb.store.get(NOTES, "safe")
    assert item is not None and "4417" not in item.value["text"]
    after = store_vectors(nb, "safe")
    assert len(after) == 1 and after != before  # embedded again from the scrubbed value
    assert nb.store.search(NOTES, query="the code of the safe")[0].key == "safe"
    if nb.backend.capabilities.name == "sqlite":  # Postgres: test_postgres_privacy's files
        assert b"4417" not in Path(nb.backend.location).read_bytes()
