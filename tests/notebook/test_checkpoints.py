"""Open Notebook's chat graph (seed 001), built here as the seed describes it with LangGraph's
``SqliteSaver``, run for many turns, imported into the notebook and continued: the thread
comes back whole, a re-import takes what it gained since, the system prompt renders Open
Notebook's ``notebook``, and a turn that fails changes no checkpoint."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Optional, TypedDict

import jinja2
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel

from agent_notebook import Notebook
from agent_notebook.chat import build_chat_graph
from agent_notebook.chat.compaction import message_tokens
from agent_notebook.config import ChatSettings
from agent_notebook.notebook.checkpoints import NOTHING_NEW
from tests.support.chat_models import RecordingModel

TRIP = "on-trip"
BUDGET = 400  # live tokens: far less than the imported thread holds
TOPICS = ["the train to Lyon", "a hotel near Bellecour", "the Fourvière museum", "dinner"]


# -- Open Notebook's chat graph, as the seed describes it -----------------------------------


class OpenNotebook(BaseModel):
    """Open Notebook's domain notebook, as its ThreadState carries it."""

    id: str
    name: str
    description: str = ""


class ThreadState(TypedDict):
    messages: Annotated[list, add_messages]  # type: ignore[type-arg]
    notebook: Optional[OpenNotebook]  # noqa: UP045
    context: Optional[str]  # noqa: UP045
    context_config: Optional[dict]  # type: ignore[type-arg]  # noqa: UP045
    model_override: Optional[str]  # noqa: UP045


# Open Notebook's chat/system prompt, rendered with the state (Prompter(...).render(data=state)).
SYSTEM = jinja2.Template(
    "You are a research assistant for the notebook {{ data.notebook.name }}."
    "{% if data.context %}\n{{ data.context }}{% endif %}"
)


def build_open_notebook(conn: sqlite3.Connection, model: BaseChatModel) -> Any:
    memory = SqliteSaver(conn)

    def call_model_with_messages(state: ThreadState, config: RunnableConfig) -> dict[str, Any]:
        system_prompt = SYSTEM.render(data=state)
        payload = [SystemMessage(content=system_prompt)] + state.get("messages", [])  # noqa: RUF005 - the seed's line
        ai_message = model.invoke(payload)
        cleaned_content = re.sub(r"<think>.*?</think>", "", str(ai_message.content), flags=re.S)
        cleaned_message = ai_message.model_copy(update={"content": cleaned_content.strip()})
        return {"messages": cleaned_message}

    agent_state = StateGraph(ThreadState)
    agent_state.add_node("agent", call_model_with_messages)
    agent_state.add_edge(START, "agent")
    agent_state.add_edge("agent", END)
    return agent_state.compile(checkpointer=memory)


def open_notebook_turns(conn: sqlite3.Connection, thread: str, first: int, count: int) -> None:
    """``count`` turns of Open Notebook on ``thread``, numbered from ``first``."""
    answers = [
        f"<think>look it up</think>Answer {n}: for {TOPICS[n % len(TOPICS)]} we keep booking "
        f"B{n:03d}, which costs {40 + n} euros and is confirmed."
        for n in range(first, first + count)
    ]
    graph = build_open_notebook(conn, FakeListChatModel(responses=answers))
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    for n in range(first, first + count):
        turn: dict[str, Any] = {"messages": [HumanMessage(f"Question {n}: what about the plan?")]}
        if n == 0:
            turn |= {
                "notebook": OpenNotebook(id="notebook:lyon", name="Lyon weekend"),
                "context": "Sources: the SNCF timetable.",
            }
        graph.invoke(turn, config)


@pytest.fixture
def on_file(tmp_path: Path) -> Iterator[Path]:
    """Open Notebook's data/sqlite-db/checkpoints.sqlite after 30 turns on one thread and 2 on
    another."""
    path = tmp_path / "checkpoints.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    open_notebook_turns(conn, TRIP, 0, 30)
    open_notebook_turns(conn, "on-other", 0, 2)
    conn.close()
    yield path


@pytest.fixture
def nb(tmp_path: Path) -> Iterator[Notebook]:
    notebook = Notebook.open(tmp_path / "home", store_index=None)
    yield notebook
    notebook.close()


class Recording(FakeListChatModel):
    """A fake chat model that keeps what it was given."""

    seen: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field, copied per instance

    def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
        self.seen.append(list(messages))
        return super()._call(messages, *args, **kwargs)


def settings(**extra: Any) -> ChatSettings:
    return ChatSettings(live_budget_tokens=BUDGET, context_search="lexical", **extra)


def checkpoint_rows(path: Path, thread: str) -> tuple[int, str, int]:
    """(checkpoints, newest checkpoint id, writes) of ``thread`` in the file at ``path``."""
    with sqlite3.connect(path) as conn:
        count, newest = conn.execute(
            "SELECT COUNT(*), MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ?", (thread,)
        ).fetchone()
        (writes,) = conn.execute(
            "SELECT COUNT(*) FROM writes WHERE thread_id = ?", (thread,)
        ).fetchone()
    conn.close()
    return count, newest, writes


def config(thread: str = TRIP) -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


# -- the scenario ---------------------------------------------------------------------------


def test_an_imported_thread_comes_back_whole_and_a_reimport_takes_what_it_gained(
    nb: Notebook, on_file: Path
) -> None:
    assert checkpoint_rows(on_file, TRIP)[0] >= 60  # many checkpoints, as in the issue
    report = {r.thread: r for r in nb.transfer.import_checkpoints(on_file)}
    assert (report[TRIP].messages, report["on-other"].messages) == (60, 4)
    session_id = report[TRIP].session
    assert session_id is not None and nb.thread_session(TRIP) == session_id

    model = Recording(responses=["Yes, B029 is the hotel."])
    graph = build_chat_graph(nb, model=model, settings=settings())
    imported = graph.get_state(config()).values
    assert len(imported["messages"]) == 60  # the thread, ready to go on with

    state = graph.invoke({"messages": [HumanMessage("Which hotel did we keep?")]}, config())
    payload = model.seen[-1]
    sent = [m.text for m in payload[1:]]
    assert sent[-1] == "Which hotel did we keep?"
    assert "Answer 29: for a hotel near Bellecour we keep booking B029" in sent[-2]  # the newest
    assert not any(text.startswith("Question 0:") for text in sent)  # the oldest: condensed
    assert sum(message_tokens(m) for m in payload[1:]) <= BUDGET
    assert "[condensed_history]" in payload[0].text and "B000" in payload[0].text
    assert "Lyon weekend" in payload[0].text  # Open Notebook's notebook, described

    live = state["messages"]
    assert sum(message_tokens(m) for m in live) <= BUDGET
    assert live[-1].text == "Yes, B029 is the hotel." and state["condensed_history"]
    assert nb.get_session(session_id).context.condensed_history == state["condensed_history"]
    moments = nb.moments(session_id)
    assert len(moments) == 62  # each imported message once, then the turn
    assert len({m.source_id for m in moments}) == 62

    # Open Notebook goes on with the thread; a re-import takes only what it gained.
    conn = sqlite3.connect(on_file, check_same_thread=False)
    open_notebook_turns(conn, TRIP, 30, 5)
    conn.close()
    again = {r.thread: r for r in nb.transfer.import_checkpoints(on_file)}
    assert (again[TRIP].messages, again[TRIP].session, again[TRIP].skipped) == (
        10,
        session_id,
        None,
    )
    assert again["on-other"].skipped == NOTHING_NEW
    assert len(nb.moments(session_id)) == 72
    grown = graph.get_state(config()).values["messages"]
    assert grown[-1].text.startswith("Answer 34:") and grown[-11].text == "Yes, B029 is the hotel."

    graph.invoke({"messages": [HumanMessage("And the last booking?")]}, config())
    assert "Answer 34:" in model.seen[-1][-2].text  # what Open Notebook added, in the live state
    assert len(nb.moments(session_id)) == 74

    # Importing the unchanged file once more changes nothing.
    before = (checkpoint_rows(nb.backend.location, TRIP), len(nb.moments(session_id)))
    third = nb.transfer.import_checkpoints(on_file)
    assert all(r.skipped == NOTHING_NEW for r in third)
    assert (checkpoint_rows(nb.backend.location, TRIP), len(nb.moments(session_id))) == before


def test_a_turn_on_open_notebooks_own_file_renders_its_notebook(
    nb: Notebook, on_file: Path
) -> None:
    model = Recording(responses=["Noted."])
    graph = build_chat_graph(nb, model=model, settings=settings(checkpoints=on_file))
    count, _, _ = checkpoint_rows(on_file, TRIP)
    state = graph.invoke({"messages": [HumanMessage("Anything left to book?")]}, config())
    assert state["messages"][-1].text == "Noted."
    system = model.seen[-1][0].text
    assert "Lyon weekend" in system and "notebook:lyon" in system
    assert "Sources: the SNCF timetable." in system
    assert checkpoint_rows(on_file, TRIP)[0] > count  # every checkpoint kept, new ones added


@pytest.mark.parametrize("keep", [None, 2])
def test_a_failed_turn_changes_no_checkpoint(
    nb: Notebook, on_file: Path, tmp_path: Path, keep: int | None
) -> None:
    """The model fails, or the prompt does not render: the thread's checkpoints and writes
    are as before, sync and async, even with pruning configured."""
    broken = tmp_path / "prompts"
    (broken / "chat").mkdir(parents=True)
    (broken / "chat" / "system.jinja").write_text("Hello {{ no_such_variable }}")
    chat = settings(checkpoints=on_file, keep_checkpoints=keep)
    failing = [
        build_chat_graph(nb, model=RecordingModel(error="the provider is down"), settings=chat),
        build_chat_graph(nb, model=Recording(responses=["x"]), settings=chat, prompts_dir=broken),
    ]
    before = checkpoint_rows(on_file, TRIP)
    line = {"messages": [HumanMessage("Book the taxi")]}
    for graph in failing:
        with pytest.raises(Exception, match=r"provider is down|no_such_variable"):
            graph.invoke(line, config())
        assert checkpoint_rows(on_file, TRIP) == before
        with pytest.raises(Exception, match=r"provider is down|no_such_variable"):
            asyncio.run(graph.ainvoke(line, config()))
        assert checkpoint_rows(on_file, TRIP) == before
    assert nb.backend.count_moments() == 0  # nor did it record a moment

    good = build_chat_graph(nb, model=Recording(responses=["Done."]), settings=chat)
    assert good.invoke(line, config())["messages"][-1].text == "Done."
    count = checkpoint_rows(on_file, TRIP)[0]
    # one checkpoint a turn (chat.checkpoint_durability "exit"); pruning once it is done
    assert count == (before[0] + 1 if keep is None else keep)


def test_a_failed_turn_on_a_new_thread_leaves_no_checkpoint(nb: Notebook) -> None:
    graph = build_chat_graph(
        nb, model=RecordingModel(error="the provider is down"), settings=settings()
    )
    with pytest.raises(RuntimeError, match="provider is down"):
        graph.invoke({"messages": [HumanMessage("hello")]}, config("fresh"))
    assert graph.get_state(config("fresh")).values == {}
    assert list(graph.get_state_history(config("fresh"))) == []


def test_the_prompt_renders_any_notebook_shape(nb: Notebook) -> None:
    model = Recording(responses=["ok"])
    graph = build_chat_graph(nb, model=model, settings=settings())
    shapes: list[Any] = [
        {"id": "notebook:1", "name": "Plain dict"},  # Open Notebook's, read back as a dict
        OpenNotebook(id="notebook:2", name="A model"),
        "just a title",
        {"session_id": "s_elsewhere"},
    ]
    for n, shape in enumerate(shapes):
        graph.invoke({"messages": [HumanMessage("hi")], "notebook": shape}, config(f"t{n}"))
        system = model.seen[-1][0].text
        assert f"notebook session {nb.thread_session(f't{n}')}" in system
    assert "name: Plain dict" in model.seen[0][0].text
    assert "name: A model" in model.seen[1][0].text
    assert "just a title" in model.seen[2][0].text
