"""Chat threads on a checkpointer, for the checkpoint tests: a one-node graph answering each
question, the threads' expected messages, and the databases (a SQLite file, a PostgreSQL
schema) whose savers they run on."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from agent_notebook.chat.state import ThreadState
from agent_notebook.langgraph.checkpoint.sqlite import NotebookSaver
from agent_notebook.langgraph.checkpoint.sqlite_history import read_epoch
from tests.support import pg


class OldState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def answer(state: ThreadState) -> dict[str, Any]:
    return {"messages": [AIMessage(f"answer to {state['messages'][-1].content}")]}


def old_answer(state: OldState) -> dict[str, Any]:
    return {"messages": [AIMessage(f"answer to {state['messages'][-1].content}")]}


def chat_graph(saver: Any, state: type = ThreadState) -> Any:
    graph = StateGraph(state)
    graph.add_node("answer", answer if state is ThreadState else old_answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph.compile(checkpointer=saver)


def thread(name: str = "t") -> RunnableConfig:
    return {"configurable": {"thread_id": name}}


def question(i: int) -> str:
    return f"question {i}: " + "words " * 40


def expected(turns: int, start: int = 0) -> list[tuple[str, str]]:
    pairs = []
    for i in range(start, turns):
        pairs += [("human", question(i)), ("ai", f"answer to {question(i)}")]
    return pairs


def shape(messages: list[AnyMessage]) -> list[tuple[str, str]]:
    return [(m.type, str(m.content)) for m in messages]


def run(graph: Any, turns: range, name: str = "t") -> None:
    for i in turns:
        graph.invoke({"messages": [HumanMessage(question(i))]}, thread(name))


class SqliteDb:
    """A checkpoint file; each saver on a connection of its own."""

    def __init__(self, root: Path) -> None:
        self.db = root / "checkpoints.db"
        self.conns: list[sqlite3.Connection] = []

    def saver(self, **kw: Any) -> NotebookSaver:
        self.conns.append(sqlite3.connect(self.db, check_same_thread=False))
        return NotebookSaver(self.conns[-1], **kw)

    def epoch(self) -> int:
        conn = sqlite3.connect(self.db)
        try:
            found = read_epoch(conn.cursor())
        finally:
            conn.close()
        assert found is not None
        return found

    def execute(self, statement: str) -> None:
        """A raw statement from another connection (written for PostgreSQL's tables)."""
        conn = sqlite3.connect(self.db)
        conn.execute(statement.replace("checkpoint_writes", "writes").replace("blob", "value"))
        conn.commit()
        conn.close()

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


class PostgresDb:
    """A schema of the test database; each saver on a pool of its own (a server)."""

    def __init__(self, root: Path) -> None:
        self.url = pg.url_with_schema(root)
        self.pools: list[Any] = []

    def saver(self, **kw: Any) -> Any:
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        from agent_notebook.langgraph.checkpoint.postgres import NotebookPostgresSaver

        kwargs = {"autocommit": True, "row_factory": dict_row, "prepare_threshold": 0}
        self.pools.append(
            ConnectionPool(self.url, min_size=1, max_size=4, kwargs=kwargs, open=True)
        )
        saver = NotebookPostgresSaver(self.pools[-1], **kw)
        saver.setup()
        return saver

    def epoch(self) -> int:
        import psycopg

        with psycopg.connect(self.url) as conn:
            row = conn.execute("SELECT n FROM checkpoint_history_epoch").fetchone()
        assert row is not None
        return int(row[0])

    def execute(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(statement)  # type: ignore[call-overload]

    def close(self) -> None:
        for pool in self.pools:
            pool.close()


def fresh_read(backend: Any, name: str = "t", **kw: Any) -> list[tuple[str, str]]:
    """The messages of thread ``name`` as a new checkpointer (nothing kept) reads them."""
    return read(backend.saver(**kw), name)


def read(saver: Any, name: str = "t") -> list[tuple[str, str]]:
    found = saver.get_tuple(thread(name))
    return [] if found is None else shape(found.checkpoint["channel_values"]["messages"])


def configs(saver: Any, name: str = "t") -> list[Any]:
    """The thread's checkpoint configs, oldest first."""
    return [t.config for t in reversed(list(saver.list(thread(name))))]
