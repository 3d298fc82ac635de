"""Self-echo (issue 31): after two chat turns about a fact, the question just asked and the
model's answers match a search for it best, yet the model already has them in context.
A search from the conversation (``current_session_id``: the search tool of MCP and
LangChain) leaves that session's recent turns out, as the chat's own context search does,
so the fact comes first. A real notebook, a real chat graph, a fake chat model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage

from agent_notebook import Notebook
from agent_notebook.chat import build_chat_graph
from agent_notebook.notebook.agent_tools import search_hits

FACT = "The door code of the Elm Street flat is 4512."
THREAD = {"configurable": {"thread_id": "t-echo"}}


@pytest.fixture
def nb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Notebook]:
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
    notebook = Notebook.open(tmp_path / "home", background_embedding=False)
    yield notebook
    notebook.close()


def test_after_two_chat_turns_the_fact_outranks_the_echo(nb: Notebook) -> None:
    earlier = nb.start_session("moving in")
    fact = nb.record(earlier.id, FACT)
    nb.record(earlier.id, "The landlord is called Mr Okafor.")
    answers = ["The door code of the Elm Street flat is 4512.", "Yes: door code 4512, Elm Street."]
    graph = build_chat_graph(nb, model=FakeListChatModel(responses=answers))
    for asked in ("What is the door code of the Elm Street flat?", "Is the door code 4512?"):
        graph.invoke({"messages": [HumanMessage(asked)]}, THREAD)
    thread = nb.thread_session("t-echo")
    echo = {m.id for m in nb.moments(thread)}
    assert len(echo) == 4

    plain = search_hits(nb, "door code Elm Street flat", limit=5)
    assert plain[0]["id"] in echo  # the echo crowds out the fact without the session

    hits = search_hits(nb, "door code Elm Street flat", limit=5, current_session_id=thread)
    assert hits[0]["id"] == fact.id
    assert not {h["id"] for h in hits} & echo
    # the thread's own turns stay findable from elsewhere (another conversation)
    assert {h["id"] for h in search_hits(nb, "Is the door code 4512?", limit=5)} & echo
