"""``agent-notebook chat`` and ``agent-notebook import-checkpoints``, run as real processes."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from tests.support.clirun import cli, counts, data

# -- chat ---------------------------------------------------------------------------------


def test_chat_answers_each_line_and_a_second_run_resumes_the_thread(tmp_path: Path) -> None:
    home = tmp_path / "nb"
    first = cli(home, "chat", "--thread", "demo", "--model", "fake:echo", stdin=b"hello\nsecond\n")
    assert first.returncode == 0, first.stderr.decode()
    assert first.stdout.decode().splitlines() == [
        "echo: hello (messages: 1)",
        "echo: second (messages: 3)",
    ]
    assert "new thread demo" in first.stderr.decode()
    again = cli(home, "chat", "--thread", "demo", "--model", "fake:echo", stdin=b"third\n")
    assert again.returncode == 0, again.stderr.decode()
    assert "resuming thread demo: 4 message(s)" in again.stderr.decode()
    assert again.stdout.decode().splitlines() == ["echo: third (messages: 5)"]  # saw the history
    sessions = data(cli(home, "sessions", "-f", "json"))
    assert len(sessions) == 1 and sessions[0]["id"] in again.stderr.decode()
    moments = data(cli(home, "moments", sessions[0]["id"], "-f", "json"))
    assert [(m["role"], m["content"]["text"]) for m in moments] == [
        ("user", "hello"),
        ("assistant", "echo: hello (messages: 1)"),
        ("user", "second"),
        ("assistant", "echo: second (messages: 3)"),
        ("user", "third"),
        ("assistant", "echo: third (messages: 5)"),
    ]


def test_chat_starts_a_named_new_thread_and_stops_at_exit(tmp_path: Path) -> None:
    result = cli(
        tmp_path / "nb", "chat", "--model", "fake:echo", stdin=b"one\n\n/exit\nnever sent\n"
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().splitlines() == ["echo: one (messages: 1)"]
    err = result.stderr.decode()
    assert "new chat on thread chat-" in err and "--thread chat-" in err
    assert "you>" not in err  # no prompt when stdin is not a terminal


def test_chat_without_a_model_names_the_setting_and_the_variable(tmp_path: Path) -> None:
    result = cli(tmp_path / "nb", "chat", "--thread", "t", stdin=b"hello\n")
    assert result.returncode == 1
    assert "AGENT_NOTEBOOK_MODEL" in result.stderr.decode() and "model" in result.stderr.decode()
    assert "--model offline:notes" in result.stderr.decode()  # the offline choice
    assert result.stdout == b""


def test_the_offline_notes_model_answers_from_what_the_notebook_recalls(tmp_path: Path) -> None:
    home = tmp_path / "nb"
    fact = b'{"text": "The door code of the Lyon flat is 4512"}'
    assert cli(home, "record", "--task", "flat", stdin=fact).returncode == 0
    lines = b"what is the door code of the flat?\nhow ripe are the bananas?\n"
    result = cli(home, "chat", "--model", "offline:notes", "--show-context", stdin=lines)
    assert result.returncode == 0, result.stderr.decode()
    first, _, second = result.stdout.decode().partition("\nMy notebook")
    assert first.startswith("From my notebook:")
    assert "[moment:m_1]" in first and "4512" in first  # cited by its tag
    assert "recalls nothing on that" in second
    # --show-context printed what the model was given, before each answer
    err = result.stderr.decode()
    assert err.count("--- context ---") == 2
    assert "[moment:m_1]" in err.split("--- context ---")[1]


def test_offline_notes_answers_from_the_turns_its_context_holds(tmp_path: Path) -> None:
    """Issue 43, item 7: the first answer printed the empty session-notebook block (the
    thread's name matched the question), and a fact said a turn earlier in the chat, held
    by the model's messages rather than recalled, was left out of the answer."""
    home = tmp_path / "nb"
    fact = b'{"text": "The door code of the Lyon flat is 4512"}'
    assert cli(home, "record", "--task", "flat", stdin=fact).returncode == 0
    lines = (
        b"what is the door code of the flat?\nMy locker number is 381.\nwhat is my locker number?\n"
    )
    result = cli(
        home, "chat", "--thread", "flat", "--model", "offline:notes", "--show-context", stdin=lines
    )
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert "session_notebook" not in out and "session_notebook" not in result.stderr.decode()
    assert "4512" in out.split("My notebook")[0]
    last = out.rsplit("From my notebook:", 1)[-1]
    assert "locker number is 381" in last, out


def test_chat_uses_the_model_of_the_environment(tmp_path: Path) -> None:
    result = cli(tmp_path / "nb", "chat", stdin=b"hi\n", env={"AGENT_NOTEBOOK_MODEL": "fake:echo"})
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode() == "echo: hi (messages: 1)\n"


def test_chat_with_a_missing_provider_package_gives_the_install_hint(tmp_path: Path) -> None:
    if importlib.util.find_spec("langchain_openai") is not None:
        pytest.skip("langchain-openai is installed")
    result = cli(tmp_path / "nb", "chat", "--model", "openai:gpt-4o-mini", stdin=b"hi\n")
    assert result.returncode == 1
    assert "pip install 'langchain-openai'" in result.stderr.decode()


# -- import-checkpoints -------------------------------------------------------------------


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class Counter(TypedDict):
    count: int


def answer(state: State) -> dict[str, Any]:
    last = state["messages"][-1]
    if "weather" in last.text:
        call = {"name": "weather", "args": {"city": "Lyon"}, "id": "call-1"}
        return {
            "messages": [
                AIMessage("", tool_calls=[call], id="ai-call"),
                ToolMessage("sunny", tool_call_id="call-1", id="tool-1"),
                AIMessage("Sunny in Lyon.", id="ai-weather"),
            ]
        }
    return {"messages": AIMessage(f"Noted: {last.text}", id=f"ai-{last.id}")}


def build_checkpoints(path: Path) -> None:
    """A SqliteSaver database like Open Notebook's: two chat threads and one without
    messages, written by real LangGraph graphs."""
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        chat = StateGraph(State)
        chat.add_node("agent", answer)
        chat.add_edge(START, "agent")
        chat.add_edge("agent", END)
        app = chat.compile(checkpointer=saver)
        for thread, lines in {
            "t-1": [("h1", "Book the train to Lyon"), ("h2", "Window seat please")],
            "t-2": [("h3", "What is the weather in Lyon?")],
        }.items():
            for message_id, text in lines:
                config: RunnableConfig = {"configurable": {"thread_id": thread}}
                app.invoke(State(messages=[HumanMessage(text, id=message_id)]), config)
        counter = StateGraph(Counter)
        counter.add_node("bump", lambda s: {"count": s["count"] + 1})
        counter.add_edge(START, "bump")
        counter.add_edge("bump", END)
        counter.compile(checkpointer=saver).invoke(
            Counter(count=0), {"configurable": {"thread_id": "t-3"}}
        )
    finally:
        conn.close()


@pytest.fixture
def checkpoints(tmp_path: Path) -> Path:
    path = tmp_path / "checkpoints.sqlite"
    build_checkpoints(path)
    return path


def test_import_checkpoints_makes_a_session_per_thread_once(
    tmp_path: Path, checkpoints: Path
) -> None:
    home = tmp_path / "nb"
    report = data(cli(home, "import-checkpoints", str(checkpoints), "-f", "json"))
    assert [(r["thread"], r["messages"], r["skipped"]) for r in report] == [
        ("t-1", 4, None),
        ("t-2", 4, None),
        ("t-3", 0, "no 'messages' channel"),
    ]
    sessions = {s["id"]: s for s in data(cli(home, "sessions", "-f", "json"))}
    assert len(sessions) == 2
    for row in report[:2]:
        session = sessions[row["session"]]
        assert session["task"] == f"Imported thread {row['thread']}"
        assert {"target": f"thread:{row['thread']}", "relation": "imported-from"}.items() <= (
            session["links"][0].items()
        )
    first = data(cli(home, "moments", report[0]["session"], "-f", "json"))
    assert [(m["role"], m["content"]["text"], m["source_id"]) for m in first] == [
        ("user", "Book the train to Lyon", "h1"),
        ("assistant", "Noted: Book the train to Lyon", "ai-h1"),
        ("user", "Window seat please", "h2"),
        ("assistant", "Noted: Window seat please", "ai-h2"),
    ]
    times = [m["timestamp"] for m in first]
    assert times == sorted(times) and times[0] >= sessions[report[0]["session"]]["started"]
    second = data(cli(home, "moments", report[1]["session"], "-f", "json"))
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "assistant"]
    assert second[1]["actions"][0]["tool"] == "weather"
    assert second[1]["actions"][0]["result"] == "sunny"

    before = counts(home)
    again = cli(home, "import-checkpoints", str(checkpoints), "-f", "json")
    assert all(r["skipped"] for r in data(again)) and counts(home) == before
    assert "imported 0 thread(s)" in again.stderr.decode()


def test_a_chat_on_an_imported_thread_goes_on_in_its_session(
    tmp_path: Path, checkpoints: Path
) -> None:
    home = tmp_path / "nb"
    report = data(cli(home, "import-checkpoints", str(checkpoints), "-f", "json"))
    result = cli(home, "chat", "--thread", "t-1", "--model", "fake:echo", stdin=b"and back?\n")
    assert result.returncode == 0, result.stderr.decode()
    assert "resuming thread t-1: 4 message(s)" in result.stderr.decode()
    assert f"is session {report[0]['session']}" in result.stderr.decode()
    moments = data(cli(home, "moments", report[0]["session"], "-f", "json"))
    assert [m["content"]["text"] for m in moments[2:]] == [  # the thread came back whole
        "Window seat please",
        "Noted: Window seat please",
        "and back?",
        "echo: and back? (messages: 5)",
    ]


def test_import_checkpoints_prints_a_table_by_default(tmp_path: Path, checkpoints: Path) -> None:
    result = cli(tmp_path / "nb", "import-checkpoints", str(checkpoints))
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert "t-1" in out and "no 'messages' channel" in out
    assert "imported 2 thread(s) with 8 message(s)" in result.stderr.decode()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"not a database at all, just text\n" * 10, "not a SQLite database"),
        (None, "not a LangGraph checkpoint database"),
        (b"missing", "no such file"),
    ],
)
def test_a_file_that_is_not_a_checkpoint_database_is_named_and_nothing_changes(
    tmp_path: Path, content: bytes | None, expected: str
) -> None:
    home = tmp_path / "nb"
    bad = tmp_path / "bad.sqlite"
    if content is None:
        with sqlite3.connect(bad) as conn:
            conn.execute("CREATE TABLE notes (text TEXT)")
        conn.close()
    elif content != b"missing":
        bad.write_bytes(content)
    result = cli(home, "import-checkpoints", str(bad))
    assert result.returncode == 1
    err = result.stderr.decode()
    assert str(bad) in err and expected in err, err
    assert result.stdout == b""
    assert counts(home) == (0, 0)
