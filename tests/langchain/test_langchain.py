"""The LangChain building blocks on a real SQLite notebook with the real offline embedder:
LangChain's own standard suites for the embeddings and the retriever, then what they do
not cover (provenance, filters, the tools and their errors)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langchain_tests.integration_tests import (
    EmbeddingsIntegrationTests,
    RetrieversIntegrationTests,
)
from langchain_tests.unit_tests import EmbeddingsUnitTests
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from mcp.server.fastmcp.exceptions import ToolError

from agent_notebook import InvalidInput, Notebook
from agent_notebook.embed import LangChainEmbedder, default_embedder
from agent_notebook.langchain import NotebookEmbeddings, NotebookRetriever, notebook_tools
from agent_notebook.server.mcp_tools import build_mcp
from agent_notebook.storage import SqliteBackend

# The standard suites' async tests are plain ``async def``: anyio's plugin runs them.
pytestmark = pytest.mark.anyio

TRIP = [
    ("Ana", "Ana booked the 09:04 TGV to Lyon for 7 June, seat 42"),
    ("Ana", "The hotel in Lyon is two streets from Part-Dieu station"),
    ("Bob", "Bob will pick Ana up from the station by car"),
    ("Bob", "Receipt EXP-2291 is the Lyon hotel, to file with expenses"),
    ("Ana", "I forgot my login credentials for the expenses portal"),
]


def trip_notebook(root: Path) -> Notebook:
    """A SQLite notebook with the trip recorded and every moment embedded."""
    nb = Notebook(SqliteBackend(root / "notebook.db"), background_embedding=False)
    session = nb.start_session("Lyon trip")
    for speaker, text in TRIP:
        nb.record(session.id, text, speaker=speaker)
    assert nb.reindex() == len(TRIP)
    return nb


@pytest.fixture
def nb(tmp_path: Path) -> Iterator[Notebook]:
    notebook = trip_notebook(tmp_path)
    yield notebook
    notebook.close()


# -- LangChain's standard suites ------------------------------------------------------------


class TestEmbeddingsStandardUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[NotebookEmbeddings]:
        return NotebookEmbeddings


class TestEmbeddingsStandardIntegration(EmbeddingsIntegrationTests):
    @property
    def embeddings_class(self) -> type[NotebookEmbeddings]:
        return NotebookEmbeddings


class TestRetrieverStandardIntegration(RetrieversIntegrationTests):
    notebook: Notebook

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def trip(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
        cls.notebook = trip_notebook(tmp_path_factory.mktemp("retriever"))
        yield
        cls.notebook.close()

    @property
    def retriever_constructor(self) -> type[NotebookRetriever]:
        return NotebookRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"notebook": self.notebook}

    @property
    def retriever_query_example(self) -> str:
        return "train to Lyon"


# -- the embeddings --------------------------------------------------------------------------


def test_embeddings_are_the_notebooks_vectors_as_floats(nb: Notebook) -> None:
    assert nb.semantic is not None
    embedder = nb.semantic.embedder
    embeddings = NotebookEmbeddings(embedder)
    assert (embeddings.model_id, embeddings.dim) == (embedder.model_id, embedder.dim)
    texts = [text for _, text in TRIP[:2]]
    rows = embeddings.embed_documents(texts)
    assert rows == embedder.embed_documents(texts).tolist()
    assert all(type(x) is float for row in rows for x in row)
    assert embeddings.embed_query("Lyon") == embedder.embed_query("Lyon").tolist()
    assert asyncio.run(embeddings.aembed_documents(texts)) == rows
    assert embeddings.embed_documents([]) == []
    # Back through the other adapter: any notebook can take it as its embedder.
    again = LangChainEmbedder(embeddings, embeddings.model_id)
    assert again.dim == embedder.dim
    assert again.embed_query("Lyon").tolist() == embedder.embed_query("Lyon").tolist()


def test_embeddings_reject_one_string_for_many() -> None:
    with pytest.raises(InvalidInput, match="list of texts, not one string"):
        NotebookEmbeddings().embed_documents("Lyon")


def test_default_embeddings_are_the_offline_model() -> None:
    default = default_embedder()
    assert default is not None
    assert NotebookEmbeddings().model_id == default.model_id


# -- the retriever ---------------------------------------------------------------------------


def test_documents_carry_ids_and_provenance(nb: Notebook) -> None:
    # min_score=0: the second hit is a weak match, which the default cut-off leaves out
    docs = NotebookRetriever(notebook=nb, k=2, min_score=0).invoke("TGV seat 42")
    assert len(docs) == 2 and all(isinstance(d, Document) for d in docs)
    hits = nb.search("TGV seat 42", limit=2, min_score=0)
    for doc, hit in zip(docs, hits, strict=True):
        moment = hit.moment
        assert doc.id == moment.id and doc.page_content == moment.content.text
        assert doc.metadata == {
            "moment_id": moment.id,
            "session_id": moment.session,
            "speaker": moment.speaker,
            "role": "user",
            "timestamp": moment.timestamp.isoformat(),
            "score": pytest.approx(hit.score),
            "source_id": None,
            "tier": "active",
            "citation": f"[moment:{moment.id}]",
        }
    assert "TGV" in docs[0].page_content


def test_filters_are_fields_and_can_be_given_per_call(nb: Notebook) -> None:
    bobs = NotebookRetriever(notebook=nb, k=10, speaker="bob").invoke("Lyon")
    # Bob's other moment (the station, by car) is no match for "Lyon": the cut-off drops it
    assert [d.metadata["speaker"] for d in bobs] == ["Bob"] and "Lyon" in bobs[0].page_content
    retriever = NotebookRetriever(notebook=nb, k=10)
    assert {d.metadata["speaker"] for d in retriever.invoke("Lyon", speaker="ana")} == {"Ana"}
    other = nb.start_session("Elsewhere")
    nb.record(other.id, "Lyon is also a town in another story")
    only = retriever.invoke("Lyon", session=other.id)
    assert [d.metadata["session_id"] for d in only] == [other.id]
    future = datetime.now(UTC) + timedelta(days=1)
    assert retriever.invoke("Lyon", since=future.isoformat()) == []  # text, validated
    first = nb.moments()[0]
    assert first.id not in {d.id for d in retriever.invoke("Lyon", exclude={first.id})}
    lexical = retriever.invoke("EXP-2291", mode="lexical")
    assert [d.page_content for d in lexical] == [TRIP[3][1]]
    assert retriever.k == 10 and retriever.speaker is None  # a call's filters stay its own


def test_bad_filters_are_named(nb: Notebook) -> None:
    retriever = NotebookRetriever(notebook=nb)
    with pytest.raises(InvalidInput, match="colour"):
        retriever.invoke("Lyon", colour="red")
    with pytest.raises(InvalidInput, match="limit must be between 1 and"):
        retriever.invoke("Lyon", k=0)
    with pytest.raises(InvalidInput, match=r"since .* must be before until"):
        now = datetime.now(UTC)
        NotebookRetriever(notebook=nb, since=now, until=now - timedelta(hours=1)).invoke("x")
    with pytest.raises(InvalidInput, match="invalid session id"):
        retriever.invoke("Lyon", session="s_bad")


class _ThreadNotingNotebook(Notebook):
    """The real notebook, noting which thread each search runs on."""

    threads: list[int]

    def search(self, *args: Any, **kwargs: Any) -> Any:
        self.threads.append(threading.get_ident())
        return super().search(*args, **kwargs)


def test_ainvoke_searches_off_the_event_loop(tmp_path: Path) -> None:
    nb = _ThreadNotingNotebook(SqliteBackend(tmp_path / "notebook.db"), embedder=None)
    nb.threads = []
    session = nb.start_session("Lyon trip")
    nb.record(session.id, TRIP[0][1])
    retriever = NotebookRetriever(notebook=nb, k=1)

    async def main() -> tuple[list[Document], int]:
        docs = await retriever.ainvoke("TGV", speaker="user")
        return docs, threading.get_ident()

    try:
        docs, loop_thread = asyncio.run(main())
    finally:
        nb.close()
    assert [d.page_content for d in docs] == [TRIP[0][1]]
    assert len(nb.threads) == 1 and nb.threads[0] != loop_thread


# -- the tools -------------------------------------------------------------------------------


def _state(nb: Notebook) -> list[Any]:
    """Everything a tool could change."""
    return [
        [s.model_dump() for s in nb.sessions()],
        [m.model_dump() for m in nb.moments()],
        nb.backend.counters(),
    ]


def _call(tool: Any, args: dict[str, Any]) -> ToolMessage:
    message = tool.invoke(ToolCall(name=tool.name, args=args, id="call-1", type="tool_call"))
    assert isinstance(message, ToolMessage)
    return message


def test_each_tool_through_langchains_tool_api(nb: Notebook) -> None:
    tools = {t.name: t for t in notebook_tools(nb)}
    assert set(tools) == {"search", "slice", "read_session", "record", "write_back"}
    for tool in tools.values():  # described for a model, each argument too
        assert len(tool.description) > 60
        schema = tool.tool_call_schema.model_json_schema()  # type: ignore[union-attr]
        assert all(len(p.get("description", "")) > 10 for p in schema["properties"].values())

    recorded = json.loads(
        tools["record"].invoke({"text": "Carla joins the Lyon trip on 8 June", "task": "Carla"})
    )
    moment = nb.get_moment(recorded["id"])
    assert moment.session == recorded["session"] and "Carla" in moment.content.text
    assert nb.get_session(recorded["session"]).task == "Carla"

    found = json.loads(_call(tools["search"], {"query": "TGV seat", "limit": 3}).content)  # type: ignore[arg-type]
    assert len(found) == 1 and "TGV" in found[0]["text"]  # the others are weak matches
    assert found[0].keys() == {"id", "session", "when", "speaker", "text", "score"}

    briefing = _call(tools["slice"], {"query": "Lyon hotel", "budget_tokens": 400}).content
    assert isinstance(briefing, str) and "[moment:" in briefing

    session_id = found[0]["session"]
    back = _call(
        tools["write_back"],
        {"guest": "planner", "session_id": session_id, "kind": "pending", "text": "Book a car"},
    )
    assert back.status == "success"
    assert json.loads(back.content)["who"] == "guest:planner"  # type: ignore[arg-type]
    read = json.loads(_call(tools["read_session"], {"session_id": session_id}).content)  # type: ignore[arg-type]
    assert [p["what"] for p in read["pending"]] == ["Book a car"]


def test_tools_run_in_an_agents_tool_node(nb: Notebook) -> None:
    """As an agent calls them: ToolNode runs the model's tool calls, async too."""
    calls = [
        ToolCall(name="search", args={"query": "expenses portal"}, id="a", type="tool_call"),
        ToolCall(name="read_session", args={"session_id": "s_bad"}, id="b", type="tool_call"),
    ]
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(notebook_tools(nb)))
    graph.add_edge(START, "tools")
    app = graph.compile()
    state: MessagesState = {"messages": [AIMessage(content="", tool_calls=calls)]}
    for result in (app.invoke(state), asyncio.run(app.ainvoke(state))):
        _, found, failed = result["messages"]
        assert found.status == "success" and "expenses portal" in found.content
        assert failed.status == "error" and "To recover:" in failed.content


BAD_CALLS = [
    ("search", {"query": "Lyon", "limit": 0}, "limit must be between 1 and 100"),
    ("search", {"query": "Lyon", "limit": "many"}, "search: limit: Input should be"),
    ("search", {"query": "Lyon", "colour": "red"}, "colour"),
    ("slice", {"query": "Lyon", "budget_tokens": 0}, "budget_tokens must be between"),
    ("read_session", {"session_id": "s_2026-01-01_009"}, "no session s_2026-01-01_009"),
    ("record", {"text": "bad \ud800 text", "task": "New"}, "lone surrogate"),
    ("record", {"text": "x", "session_id": "s_2026-01-01_009"}, "no session"),
    ("write_back", {"guest": "g", "session_id": "SESSION", "kind": "oops", "text": "x"}, "kind"),
    (
        "write_back",
        {"guest": "g", "session_id": "SESSION", "kind": "escalation_outcome", "text": "x"},
        "needs escalation_id",
    ),
    (
        "write_back",
        {"guest": "g", "session_id": "SESSION", "kind": "escalation_outcome", "text": "x"}
        | {"escalation_id": "e_9"},
        "e_9",
    ),
    (
        "write_back",
        {"guest": " ", "session_id": "SESSION", "kind": "decision", "text": "x"},
        "guest",
    ),
]


@pytest.mark.parametrize(("name", "args", "says"), BAD_CALLS, ids=lambda v: str(v)[:30])
def test_bad_input_is_a_tool_error_and_changes_nothing(
    nb: Notebook, name: str, args: dict[str, Any], says: str
) -> None:
    tool = {t.name: t for t in notebook_tools(nb)}[name]
    session_id = nb.sessions()[0].id
    args = {k: session_id if v == "SESSION" else v for k, v in args.items()}
    before = _state(nb)
    message = _call(tool, args)
    assert message.status == "error"
    assert says in str(message.content) and "To recover:" in str(message.content)
    assert _state(nb) == before
    assert says in tool.invoke(args)  # without a tool call: the same message, not a raise


def test_mcp_record_whose_moment_fails_starts_no_session(tmp_path: Path) -> None:
    """The record tool starts the session and records the moment in one transaction."""
    nb = Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=None)
    server = build_mcp(nb)

    too_long = "x" * (nb.config.moments.max_text_bytes + 1)  # passes the schema, not the check

    async def call() -> None:
        await server.call_tool("record", {"text": too_long, "task": "New"})

    try:
        with pytest.raises(ToolError, match="over the limit of"):
            anyio.run(call)
        assert nb.sessions() == []
    finally:
        nb.close()
