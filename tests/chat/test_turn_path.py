"""A chat turn's own costs: the message's query vector is made while the turn reads the
rest of its context (on a kept thread, once), not after the lexical search."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent_notebook.chat import build_chat_graph
from agent_notebook.chat.runs import ChatGraph
from agent_notebook.config import NotebookConfig
from agent_notebook.embed import MiniLmEmbedder, default_embedder
from agent_notebook.notebook.facade import Notebook
from agent_notebook.search import semantic as semantic_module
from agent_notebook.storage import SqliteBackend
from tests.support.embedders import QueryLog
from tests.support.waiting import HANG_GUARD_S

THREAD = {"configurable": {"thread_id": "turns"}}
LYON = "The train to Lyon leaves at 7:40 from platform 4."


@pytest.fixture(scope="module")
def minilm() -> MiniLmEmbedder:
    embedder = default_embedder()
    assert isinstance(embedder, MiniLmEmbedder)
    return embedder


@contextmanager
def hybrid_chat(
    tmp_path: Path, embedder: QueryLog, earlier: str, answers: int = 1
) -> Iterator[tuple[Notebook, ChatGraph]]:
    """A SQLite notebook whose chat context searches hybrid with ``embedder``, holding one
    earlier moment (embedded), and its chat graph answering "Noted." ``answers`` times."""
    config = NotebookConfig.model_validate({"chat": {"context_search": "hybrid"}})
    backend = SqliteBackend(tmp_path / "notebook.db")
    with Notebook(backend, config=config, embedder=embedder, background_embedding=False) as nb:
        sid = nb.start_session("earlier").id
        nb.record(sid, earlier)
        nb.reindex()
        yield nb, build_chat_graph(nb, model=FakeListChatModel(responses=["Noted."] * answers))


def test_a_turn_embeds_its_message_once_ahead_of_the_search(
    minilm: MiniLmEmbedder, tmp_path: Path
) -> None:
    log = QueryLog(minilm)
    with hybrid_chat(tmp_path, log, LYON, answers=4) as (nb, graph):
        messages = ["When does the Lyon train leave?", "And from which platform?"]
        for message in messages:
            graph.invoke({"messages": [HumanMessage(message)]}, THREAD)
        assert [text for text, _ in log.queries] == messages  # each embedded once
        assert {name for _, name in log.queries} == {"agent-notebook-query_0"}
        hits = nb.search(messages[0], mode="vector", limit=1)
        assert "Lyon" in hits[0].moment.content.text


def test_by_default_the_chat_graph_leaves_langgraphs_pool_alone(tmp_path: Path) -> None:
    """Without ``chat.kept_thread_pool`` no private LangGraph function is replaced: in a
    process of its own (a test before may have opted in), a turn runs on LangGraph's pool."""
    script = (
        "import sys\n"
        "from langchain_core.language_models.fake_chat_models import FakeListChatModel\n"
        "from langchain_core.messages import HumanMessage\n"
        "from agent_notebook.chat import build_chat_graph\n"
        "from agent_notebook.langgraph.private import executor_module\n"
        "from agent_notebook.notebook.facade import Notebook\n"
        "from agent_notebook.storage import SqliteBackend\n"
        "with Notebook(SqliteBackend(sys.argv[1]), embedder=None) as nb:\n"
        "    graph = build_chat_graph(nb, model=FakeListChatModel(responses=['Noted.']))\n"
        "    graph.invoke({'messages': [HumanMessage('hi')]}, "
        "{'configurable': {'thread_id': 't'}})\n"
        "factory = executor_module().get_executor_for_config\n"
        "print(getattr(factory, '_agent_notebook', False))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "notebook.db")],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        env={**os.environ, "AGENT_NOTEBOOK_EMBEDDER": "none"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_turns_start_no_threads_and_other_graphs_keep_their_own_pool(tmp_path: Path) -> None:
    """With ``chat.kept_thread_pool`` (opt-in), the chat graph's runs share one kept pool
    for their checkpoint saves instead of one LangGraph makes per run, so later turns start
    no thread. A graph of the app's own still gets LangGraph's pool, shut down at the end
    of its run."""
    from typing import TypedDict

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    backend = SqliteBackend(tmp_path / "notebook.db")
    config = NotebookConfig.model_validate({"chat": {"kept_thread_pool": True}})
    with Notebook(backend, embedder=None, background_embedding=False, config=config) as nb:
        graph = build_chat_graph(nb, model=FakeListChatModel(responses=["Noted."] * 8))
        for text in ["first", "second"]:  # the pool exists after these
            graph.invoke({"messages": [HumanMessage(text)]}, THREAD)
        started = threading.Thread.start
        names: list[str] = []

        def counting_start(self: threading.Thread) -> None:
            names.append(self.name)
            started(self)

        threading.Thread.start = counting_start  # type: ignore[method-assign]
        try:
            for text in ["third", "fourth", "fifth"]:
                graph.invoke({"messages": [HumanMessage(text)]}, THREAD)
            assert [n for n in names if not n.startswith("agent-notebook")] == []

            class Count(TypedDict):
                n: int

            other: StateGraph[Count, None, Count, Count] = StateGraph(Count)
            other.add_node("bump", lambda s: {"n": s["n"] + 1})
            other.add_edge(START, "bump")
            other.add_edge("bump", END)
            app = other.compile(checkpointer=InMemorySaver())
            assert app.invoke({"n": 1}, {"configurable": {"thread_id": "x"}}) == {"n": 2}
            assert [n for n in names if not n.startswith("agent-notebook")]  # its own pool
        finally:
            threading.Thread.start = started  # type: ignore[method-assign]
        state = graph.get_state(THREAD)
        assert [m.content for m in state.values["messages"]][-2:] == ["fifth", "Noted."]


class DocumentLog(QueryLog):
    """:class:`QueryLog` noting the documents embedded too."""

    def __init__(self, inner: MiniLmEmbedder) -> None:
        super().__init__(inner)
        self.documents: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.documents += texts
        return self.inner.embed_documents(texts)


def test_the_message_embedded_for_the_query_is_not_embedded_again_as_its_moment(
    minilm: MiniLmEmbedder, tmp_path: Path
) -> None:
    log = DocumentLog(minilm)
    with hybrid_chat(tmp_path, log, LYON) as (nb, graph):
        message = "When does the Lyon train leave?"
        graph.invoke({"messages": [HumanMessage(message)]}, THREAD)
        log.documents.clear()
        nb.reindex()  # the turn's two moments get their vectors
        assert log.documents == ["Noted."]  # the message took its query's vector
        assert nb.semantic is not None and nb.semantic.pending() == 0
        hits = nb.search(message, mode="vector", limit=3)
        assert message in [h.moment.content.text for h in hits]


def test_messages_keep_their_query_vectors_for_a_worker_many_turns_behind(
    minilm: MiniLmEmbedder, tmp_path: Path
) -> None:
    """A worker that lags 20 turns (more than the prepared queries kept) still takes each
    message's vector from its query: only the answers are embedded as documents."""
    log = DocumentLog(minilm)
    turns = 20
    with hybrid_chat(tmp_path, log, LYON, answers=turns) as (nb, graph):
        messages = [f"Question {i}: when does train {i} to Lyon leave?" for i in range(turns)]
        for message in messages:
            graph.invoke({"messages": [HumanMessage(message)]}, THREAD)
        log.documents.clear()
        assert nb.reindex() == 2 * turns
        assert log.documents == ["Noted."] * turns
        assert [text for text, _ in log.queries] == messages  # each message embedded once


def test_a_prepared_query_holds_the_worker_until_its_search_takes_it(
    minilm: MiniLmEmbedder, tmp_path: Path
) -> None:
    """From the moment a turn starts embedding its message to its search, the worker
    leaves the cores to the turn; the search lets it go, and so does a redaction that
    drops the prepared query."""
    with hybrid_chat(tmp_path, QueryLog(minilm), LYON) as (nb, _):
        semantic = nb.semantic
        assert semantic is not None
        semantic.prepare_query("Which platform for Lyon?")
        assert semantic._live == 1  # held while embedded and until searched
        semantic._prepared["Which platform for Lyon?"].result()
        assert semantic._live == 1
        nb.search("Which platform for Lyon?", mode="vector")
        assert semantic._live == 0
        semantic.prepare_query("And the return train?")
        semantic.forget([])
        assert semantic._live == 0 and not semantic._prepared


def test_a_turn_whose_search_takes_another_text_leaves_the_worker_free(
    minilm: MiniLmEmbedder, tmp_path: Path
) -> None:
    """A pasted dialogue is searched by what its user said lately, not by the message the
    turn prepared: the turn's end lets that vector go, so the worker does not wait on it."""
    pasted = "User: I booked the train to Lyon.\nAssistant: Which one?\nUser: The 7:04 from Paris."
    with hybrid_chat(tmp_path, QueryLog(minilm), LYON) as (nb, graph):
        semantic = nb.semantic
        assert semantic is not None
        graph.invoke({"messages": [HumanMessage(pasted)]}, THREAD)
        assert semantic._live == 0 and not semantic._prepared


def test_a_redaction_leaves_no_kept_query_text_or_vector(
    minilm: MiniLmEmbedder, tmp_path: Path
) -> None:
    log = DocumentLog(minilm)
    with hybrid_chat(tmp_path, log, "Nothing to see here.") as (nb, graph):
        secret = "My locker code is 4471, keep it."
        graph.invoke({"messages": [HumanMessage(secret)]}, THREAD)
        semantic = nb.semantic
        assert semantic is not None and semantic._recent(secret) is not None
        [moment] = [m for m in nb.moments() if m.content.text == secret]
        nb.redact(moment.id, "a code")
        assert semantic._recent(secret) is None and not semantic._prepared
        log.documents.clear()
        nb.reindex()
        assert secret not in log.documents


def test_a_copy_of_the_graph_starts_the_embedding_with_the_run_too(
    minilm: MiniLmEmbedder, tmp_path: Path
) -> None:
    """``with_config`` copies the graph: the copy still embeds the new message once, on
    the query thread, ahead of the node."""
    log = QueryLog(minilm)
    with hybrid_chat(tmp_path, log, LYON) as (nb, graph):
        copy = graph.with_config(recursion_limit=5)
        semantic = nb.semantic
        assert semantic is not None
        copy._announce({"messages": [HumanMessage("Which platform for Lyon?")]})
        assert "Which platform for Lyon?" in semantic._prepared  # before any checkpoint read
        copy.invoke({"messages": [HumanMessage("Which platform for Lyon?")]}, THREAD)
        assert log.queries == [("Which platform for Lyon?", "agent-notebook-query_0")]


class SlowSaver(InMemorySaver):
    """LangGraph's in-memory saver whose checkpoint writes take a while (the part of a
    turn after its moments are recorded), noting when the last one is done."""

    def __init__(self) -> None:
        super().__init__()
        self.written = threading.Event()

    def put(self, *args: Any, **kwargs: Any) -> Any:
        self.written.clear()
        time.sleep(0.3)
        try:
            return super().put(*args, **kwargs)
        finally:
            self.written.set()


class TurnWatch(QueryLog):
    """:class:`QueryLog` noting, for each document batch, whether the turn's checkpoint
    had been written when it started."""

    def __init__(self, inner: MiniLmEmbedder, saver: SlowSaver) -> None:
        super().__init__(inner)
        self.saver = saver
        self.batches: list[tuple[list[str], bool]] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append((list(texts), self.saver.written.is_set()))
        return self.inner.embed_documents(texts)


def test_the_worker_embeds_a_turns_moments_after_the_turn(
    minilm: MiniLmEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The moments a turn records are embedded after its checkpoint is written, not beside
    it (the worker waits for the turn); they all get their vectors then."""
    monkeypatch.setattr(semantic_module, "YIELD_S", 60)
    saver = SlowSaver()
    watch = TurnWatch(minilm, saver)
    config = NotebookConfig.model_validate({"chat": {"context_search": "lexical"}})
    backend = SqliteBackend(tmp_path / "notebook.db")
    with Notebook(backend, config=config, embedder=watch) as nb:
        index = nb.semantic
        assert index is not None
        graph = build_chat_graph(
            nb, saver, model=FakeListChatModel(responses=["Platform 4, at 7:40."])
        )
        graph.invoke({"messages": [HumanMessage("When does the Lyon train leave?")]}, THREAD)
        assert index.wait_idle(60)
        assert watch.batches and all(written for _, written in watch.batches)
        assert sorted(t for texts, _ in watch.batches for t in texts) == [
            "Platform 4, at 7:40.",
            "When does the Lyon train leave?",
        ]
        assert nb.unembedded() == 0


def test_a_turns_moments_are_indexed_after_it_without_a_read(tmp_path: Path) -> None:
    """The full-text upkeep of a turn's moments runs after the turn (not in the next
    turn's search); the next turn's context finds them by their words all the same."""
    backend = SqliteBackend(tmp_path / "notebook.db")
    config = NotebookConfig.model_validate({"chat": {"context_search": "lexical"}})
    with Notebook(backend, config=config, embedder=None, background_embedding=False) as nb:
        graph = build_chat_graph(nb, model=FakeListChatModel(responses=["Noted."]))
        graph.invoke({"messages": [HumanMessage("The locker code is 4471.")]}, THREAD)
        nb.drain()

        def marks() -> tuple[int, int]:
            upkeep = backend.connection.execute("SELECT indexed_through FROM upkeep")
            newest = backend.connection.execute("SELECT max(num) FROM moments")
            return upkeep.fetchone()[0], newest.fetchone()[0]

        indexed, newest = marks()
        assert indexed == newest == 2
        hits = nb.search("the locker code", mode="lexical")
        assert [h.moment.content.text for h in hits][:1] == ["The locker code is 4471."]


def test_work_handed_over_during_a_turn_starts_when_the_turn_ends(tmp_path: Path) -> None:
    backend = SqliteBackend(tmp_path / "notebook.db")
    with Notebook(backend, embedder=None, background_embedding=False) as nb:
        ran: list[str] = []
        with nb.turn_running():
            held = nb.after_turn(lambda: ran.append("held"))
            nb.drain()  # waits for what was submitted: the held work is not yet
            assert ran == [] and not held.done()
        nb.drain()
        assert ran == ["held"] and held.done()
        nb.after_turn(lambda: ran.append("between turns"))
        nb.drain()
        assert ran == ["held", "between turns"]


def test_closing_during_a_turn_runs_the_work_the_turn_holds(tmp_path: Path) -> None:
    """A notebook closed while a turn still runs (another thread's) does what that turn
    handed over before it closes, not after: the held work sees the notebook open."""
    backend = SqliteBackend(tmp_path / "notebook.db")
    nb = Notebook(backend, embedder=None, background_embedding=False)
    seen: list[int] = []
    with nb.turn_running():
        held = nb.after_turn(lambda: seen.append(len(nb.backend.list_sessions())))
        nb.close()
        assert held.done() and held.exception() is None
        assert seen == [0]
    assert nb._turns.executor is None  # the turn's end started nothing on the closed notebook


def test_a_chat_turns_after_turn_work_waits_for_its_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The work a turn hands over (here: the analysis of its messages for a later
    condensed history) does not run beside the turn's checkpoint write but after it."""
    import agent_notebook.compaction.summarize as summarize

    events: list[str] = []
    units = summarize._units

    def analysed(sentence: str) -> tuple[dict[str, float], float]:
        events.append("analysis")
        return units(sentence)

    monkeypatch.setattr(summarize, "_units", analysed)
    backend = SqliteBackend(tmp_path / "notebook.db")
    config = NotebookConfig.model_validate({"chat": {"context_search": "lexical"}})
    with Notebook(backend, config=config, embedder=None, background_embedding=False) as nb:

        class Watched(InMemorySaver):
            def put(self, *args: Any, **kwargs: Any) -> Any:
                nb.drain()  # runs whatever after-turn work was submitted by now
                events.append("checkpoint")
                return super().put(*args, **kwargs)

        graph = build_chat_graph(nb, Watched(), model=FakeListChatModel(responses=["Platform 4."]))
        graph.invoke({"messages": [HumanMessage("Which platform for Lyon?")]}, THREAD)
        nb.drain()
    assert "analysis" in events
    assert events.index("analysis") > max(i for i, e in enumerate(events) if e == "checkpoint")


def test_sqlites_log_is_checkpointed_between_turns_not_in_them(tmp_path: Path) -> None:
    """SQLite copies its write-ahead log into the file in the commit that takes it past
    1,000 pages: a turn's. The notebook does it after turns (every few), so no turn writes
    the database file itself."""
    import os
    import random

    backend = SqliteBackend(tmp_path / "notebook.db")
    config = NotebookConfig.model_validate({"chat": {"context_search": "lexical"}})
    rng = random.Random(0)
    words = [f"word{i}" for i in range(400)]

    def text(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    with Notebook(backend, config=config, embedder=None, background_embedding=False) as nb:
        model = FakeListChatModel(responses=[text(60) for _ in range(60)])
        graph = build_chat_graph(nb, model=model)
        written_in_turn, written_between = [], []
        for _ in range(60):
            before = os.stat(backend.path).st_mtime_ns
            graph.invoke({"messages": [HumanMessage(text(45))]}, THREAD)
            after = os.stat(backend.path).st_mtime_ns
            nb.drain()
            written_in_turn.append(after != before)
            written_between.append(os.stat(backend.path).st_mtime_ns != after)
    assert not any(written_in_turn)
    assert any(written_between)
