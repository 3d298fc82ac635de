"""The chat graph (seed 001) with a fake model: checkpoints, restarts, models, moments, bounds."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent_notebook import Notebook
from agent_notebook.chat import ModelNotConfigured, build_chat_graph
from agent_notebook.chat.compaction import tool_pairs_intact
from agent_notebook.config import ChatSettings
from tests.support.waiting import HANG_GUARD_S

THREAD = {"configurable": {"thread_id": "t-1"}}
NO_EMBEDDER = {**os.environ, "AGENT_NOTEBOOK_EMBEDDER": "none"}


def fake(*answers: str) -> FakeListChatModel:
    return FakeListChatModel(responses=list(answers) * 50)


def turn(graph: Any, text: str, config: dict[str, Any] = THREAD, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = graph.invoke({"messages": [HumanMessage(text)], **extra}, config)
    return result


@pytest.fixture
def nb(tmp_path: Path) -> Notebook:
    # New moments stay queued for their vectors (what these tests check needs none), so
    # closing does not wait for the model to embed every turn.
    notebook = Notebook.open(tmp_path / "home", background_embedding=False)
    yield notebook
    notebook.close()


def test_a_turn_is_answered_recorded_and_checkpointed(nb: Notebook) -> None:
    graph = build_chat_graph(nb, model=fake("Booked the 09:04 TGV to Lyon."))
    state = turn(graph, "Book the train to Lyon for 7 June")
    assert [m.type for m in state["messages"]] == ["human", "ai"]
    assert state["messages"][-1].content == "Booked the 09:04 TGV to Lyon."
    session_id = nb.thread_session("t-1")
    moments = nb.moments(session_id)
    assert [(m.role, m.content.text) for m in moments] == [
        ("user", "Book the train to Lyon for 7 June"),
        ("assistant", "Booked the 09:04 TGV to Lyon."),
    ]
    assert [m.source_id for m in moments] == [m.id for m in state["messages"]]
    state = turn(graph, "And back on the 9th?")
    assert len(state["messages"]) == 4 and nb.backend.count_moments(session_id) == 4


def test_think_blocks_never_reach_the_stored_answer(nb: Notebook, tmp_path: Path) -> None:
    graph = build_chat_graph(nb, model=fake("<think>secret plan to upsell</think>Here you go."))
    state = turn(graph, "hello")
    assert state["messages"][-1].content == "Here you go."
    assert all("secret plan" not in m.content.text for m in nb.moments(nb.thread_session("t-1")))
    nb.close()
    for path in (tmp_path / "home").iterdir():
        assert b"secret plan" not in path.read_bytes(), path


def test_history_survives_a_restart_of_the_process(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from langchain_core.messages import HumanMessage
        from agent_notebook import Notebook
        from agent_notebook.chat import build_chat_graph

        with Notebook.open({str(tmp_path / "home")!r}) as nb:
            graph = build_chat_graph(nb, model=FakeListChatModel(responses=["ok"]))
            config = {{"configurable": {{"thread_id": "kept"}}}}
            state = graph.invoke({{"messages": [HumanMessage(sys.argv[1])]}}, config)
            print(len(state["messages"]), "|".join(m.content for m in state["messages"]))
        """
    )
    outputs = []
    for word in ("first", "second", "third"):
        run = subprocess.run(
            [sys.executable, "-c", script, word],
            capture_output=True,
            text=True,
            timeout=HANG_GUARD_S,
            env=NO_EMBEDDER,  # the history is the point; a model load per process is not
        )
        assert run.returncode == 0, run.stderr
        outputs.append(run.stdout.strip())
    assert outputs[-1] == "6 first|ok|second|ok|third|ok"


def test_a_deleted_checkpoint_database_is_recreated_with_an_empty_history(
    tmp_path: Path,
) -> None:
    checkpoints = tmp_path / "data" / "sqlite-db" / "checkpoints.sqlite"
    settings = ChatSettings(checkpoints=checkpoints)
    with Notebook.open(tmp_path / "home") as nb:
        state = turn(build_chat_graph(nb, model=fake("ok"), settings=settings), "one")
        assert len(state["messages"]) == 2
    assert checkpoints.exists()
    os.remove(checkpoints)
    with Notebook.open(tmp_path / "home") as nb:
        state = turn(build_chat_graph(nb, model=fake("ok"), settings=settings), "two")
        assert [m.content for m in state["messages"]] == ["two", "ok"]
        assert nb.backend.count_moments() == 4  # the moments of the first run remain


def test_model_override_picks_the_model_for_that_request_only(nb: Notebook) -> None:
    graph = build_chat_graph(nb, model=fake("from the default"), models={"fake:b": fake("from b")})
    assert turn(graph, "hi", model_override="fake:b")["messages"][-1].content == "from b"
    state = turn(graph, "again")
    assert state["messages"][-1].content == "from the default"
    assert state.get("model_override") is None


def test_no_model_configured_names_the_setting(
    nb: Notebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENT_NOTEBOOK_MODEL", raising=False)
    graph = build_chat_graph(nb)
    with pytest.raises(ModelNotConfigured, match="AGENT_NOTEBOOK_MODEL"):
        turn(graph, "hello")
    assert nb.backend.count_moments() == 0


def test_threads_stay_bounded_and_removed_messages_remain_as_moments(nb: Notebook) -> None:
    settings = ChatSettings(live_budget_tokens=400, condensed_history_tokens=120)
    graph = build_chat_graph(nb, model=fake("Answer " + "with detail " * 20), settings=settings)
    seen_ids: list[str] = []
    for i in range(40):
        state = turn(graph, f"Question {i} about auth/module_{i}.py " + "padding " * 20)
        seen_ids += [m.id for m in state["messages"] if m.id not in seen_ids]
        assert len(state["messages"]) <= 8
    assert state["condensed_history"]
    assert state["messages"][-2].content.startswith("Question 39")
    recorded = {m.source_id for m in nb.moments(nb.thread_session("t-1"))}
    assert set(seen_ids) <= recorded  # every message that ever lived in the thread is a moment
    session = nb.get_session(nb.thread_session("t-1"))
    assert session.context.condensed_history == state["condensed_history"]


def test_tool_calls_are_never_split_from_their_results(nb: Notebook) -> None:
    settings = ChatSettings(live_budget_tokens=300, condensed_history_tokens=100)
    graph = build_chat_graph(nb, model=fake("done " * 30), settings=settings)
    for i in range(15):
        call = {"name": "read_file", "args": {"path": f"src/m{i}.py"}, "id": f"call-{i}"}
        prior = [
            HumanMessage(f"read file {i} " + "x " * 30),
            AIMessage("", tool_calls=[call]),
            ToolMessage("contents " * 30, tool_call_id=f"call-{i}"),
        ]
        state = graph.invoke({"messages": prior}, THREAD)
        assert tool_pairs_intact(state["messages"])
    actions = [a for m in nb.moments(nb.thread_session("t-1")) for a in m.actions]
    assert len(actions) == 15 and all(a.tool == "read_file" and a.result for a in actions)


def test_the_session_notebook_is_updated_after_the_turn(nb: Notebook) -> None:
    graph = build_chat_graph(nb, model=fake("Edited auth/tokens.py and the tests pass."))
    for question in ("Fix tests/test_auth.py", "Use verify_token()", "Run the tests again"):
        turn(graph, question)  # 6 messages: the session notebook's threshold
    nb.drain()
    notes = nb.session_notebook("t-1").sync
    assert "tests/test_auth.py" in notes.get_section("Files and Functions")
    assert notes.should_update(turn(graph, "thanks")["messages"]) is False


def test_a_turn_that_compacts_commits_its_moments_and_condensed_history_once(
    nb: Notebook,
) -> None:
    import threading

    settings = ChatSettings(live_budget_tokens=400, condensed_history_tokens=120)
    graph = build_chat_graph(nb, model=fake("Answer " + "with detail " * 20), settings=settings)
    statements: list[tuple[str, str]] = []  # (thread, statement) on the notebook's writer

    def traced(statement: str) -> None:
        statements.append((threading.current_thread().name, statement.strip().upper()))

    nb.backend.connection.set_trace_callback(traced)
    try:
        condensed = ""
        for i in range(12):
            nb.drain()  # the pause before the next message (its upkeep commits too)
            statements.clear()
            condensed = turn(graph, f"Question {i} " + "padding " * 20)["condensed_history"]
            if condensed:
                break
    finally:
        nb.backend.connection.set_trace_callback(None)
    assert condensed  # this turn moved messages into the condensed history
    in_turn = [s for name, s in statements if not name.startswith("agent-notebook_")]
    assert in_turn.count("COMMIT") == 1  # its moments and the session's condensed history
    session = nb.get_session(nb.thread_session("t-1"))
    assert session.context.condensed_history == condensed


def test_the_messages_a_turn_folds_away_were_analysed_after_the_turns_that_brought_them(
    nb: Notebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import agent_notebook.compaction.summarize as summarize

    analysed: list[str] = []  # the thread of each sentence analysis
    units = summarize._units

    def counted(sentence: str) -> tuple[dict[str, float], float]:
        analysed.append(threading.current_thread().name)
        return units(sentence)

    monkeypatch.setattr(summarize, "_units", counted)
    settings = ChatSettings(live_budget_tokens=400, condensed_history_tokens=120)
    graph = build_chat_graph(nb, model=fake("Answer. " + "With detail. " * 20), settings=settings)
    condensed = ""
    for i in range(12):
        nb.drain()  # the pause before the next message
        analysed.clear()
        condensed = turn(graph, f"Question {i}. " + "Padding here. " * 20)["condensed_history"]
        if condensed:
            break
    assert condensed  # this turn folded messages into the condensed history…
    during_turn = [name for name in analysed if not name.startswith("agent-notebook_")]
    assert during_turn == []  # …whose sentences had been analysed in the pauses before it
