"""The chat graph's context search and the time a question is asked (issue 42): a user's
turn that carries its own time (a replayed conversation's ``timestamp``) has its
"yesterday" read from then; and a question asked again in a later session is not its own
best context: the answer recorded in between ranks above the first asking (an echo). A real
notebook, the real chat graph, a model that records what it was given."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from agent_notebook import Notebook
from agent_notebook.chat import build_chat_graph
from agent_notebook.chat.context import INSTRUCTION
from agent_notebook.langgraph.messages import message_time
from agent_notebook.notebook.finding import SearchResults
from tests.support.chat_models import RecordingModel

LAKE = "We decided to book the lake house."
CITY = "We decided on the city flat."


@pytest.fixture
def nb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Notebook]:
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
    notebook = Notebook.open(tmp_path / "home", background_embedding=False)
    yield notebook
    notebook.close()


def _context_moments(model: RecordingModel) -> list[str]:
    """The moment ids of the last prompt's context, in the order the graph put them."""
    system = str(model.seen[-1][0].content)
    return re.findall(r"^\[moment:(m_\d+)\]", system.split(INSTRUCTION, 1)[-1], re.M)


def test_a_replayed_turn_reads_yesterday_from_its_own_time(
    nb: Notebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    said = {}
    for year, decision in ((2026, LAKE), (2027, CITY)):
        start = datetime(year, 11, 20, 10, tzinfo=UTC)
        drafts = [
            {
                "text": decision if day == 5 else f"Filler about groceries, day {day}.",
                "timestamp": start + timedelta(days=day),
            }
            for day in range(10)
        ]
        _, moments = nb.record_in_new_session(f"Holidays {year}", drafts)
        said[decision] = moments[5].id
    asked: list[datetime | None] = []
    search = nb.search

    def searched(query: str, **options: Any) -> SearchResults:
        asked.append(options.get("asked_at"))
        return search(query, **options)

    monkeypatch.setattr(nb, "search", searched)
    model = RecordingModel(reply="Noted.")
    graph = build_chat_graph(nb, model=model)
    for thread, when, decision in (
        ("t-2026", "2026-11-26T09:00:00Z", LAKE),
        ("t-2027", "2027-11-26T09:00:00+00:00", CITY),
    ):
        turn = HumanMessage("What did we decide yesterday?", additional_kwargs={"timestamp": when})
        graph.invoke({"messages": [turn]}, {"configurable": {"thread_id": thread}})
        assert _context_moments(model)[0] == said[decision]
        assert asked[-1] == datetime.fromisoformat(when)
    # a turn without a time of its own is asked now (the search's default)
    graph.invoke(
        {"messages": [HumanMessage("What did we decide yesterday?")]},
        {"configurable": {"thread_id": "t-now"}},
    )
    assert asked[-1] is None


def test_the_time_of_a_message() -> None:
    def at(**where: object) -> datetime | None:
        return message_time(HumanMessage("hi", **where))  # type: ignore[arg-type]

    noon = datetime(2026, 11, 26, 12, tzinfo=UTC)
    assert at(additional_kwargs={"timestamp": "2026-11-26T12:00:00"}) == noon  # no zone: UTC
    assert at(additional_kwargs={"timestamp": "2026-11-26T13:00:00+01:00"}) == noon
    assert at(response_metadata={"timestamp": noon.timestamp()}) == noon
    assert at(additional_kwargs={"timestamp": noon}) == noon
    assert at(additional_kwargs={"timestamp": "yesterday"}) is None
    assert at(additional_kwargs={"timestamp": True}) is None
    assert at() is None


def test_a_question_asked_again_finds_its_answer_above_its_first_asking(nb: Notebook) -> None:
    model = RecordingModel(reply="I do not know yet.")
    graph = build_chat_graph(nb, model=model)
    first = {"configurable": {"thread_id": "t-first"}}
    graph.invoke({"messages": [HumanMessage("Where is Tom moving?")]}, first)
    # later in that conversation, someone knows
    said = HumanMessage("Tom is moving to Rotterdam in January.", name="sam")
    graph.invoke({"messages": [said]}, first)
    thread = nb.thread_session("t-first")
    by_text = {m.content.text: m.id for m in nb.moments(thread)}
    question, answer = by_text["Where is Tom moving?"], by_text[said.text]

    # another session, the same question: its context comes from the first conversation
    graph.invoke(
        {"messages": [HumanMessage("Where is Tom moving?")]},
        {"configurable": {"thread_id": "t-second"}},
    )
    given = _context_moments(model)
    assert given and given[0] == answer, given
    assert question not in given[:1]
    # the search the graph ran, asked directly: the answer first, the echo after it
    hits = [h.moment.id for h in nb.search("Where is Tom moving?", limit=5)]
    assert hits.index(answer) < hits.index(question), hits
