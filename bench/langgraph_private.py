"""What each private LangGraph name that ``agent_notebook/langgraph/private.py`` keeps gains,
measured with it and without it on the same data, interleaved, medians (the machine's load
printed before and after: wall times on a loaded machine are noisy, compare within a run).

- executor: chat turns on the chat graph (a fake model, a SQLite notebook, with
  ``chat.kept_thread_pool: true``), each turn on the kept pool or on LangGraph's own pool
  per ``invoke``, alternating (the order swapped
  every pair), the notebook's after-turn work done between turns, untimed.
- delta channel: a LangGraph graph adding a user and an assistant message a turn, on
  LangGraph's ``SqliteSaver``, ``messages`` as ``DeltaChannel(messages_delta_reducer)``
  (a snapshot every 100 updates, as the chat graph) against ``add_messages``: the
  checkpoint file's bytes and the median turn, both graphs turn by turn.
- history walk: on the thread the executor part made, a turn's read of ``messages`` at
  the newest checkpoint, the walk stopping at the previous checkpoint's value (ours, on
  LangGraph's private SQLite walk) against LangGraph's public
  ``get_delta_channel_history`` (from the last snapshot), alternating; same values.

    python bench/langgraph_private.py [--turns 120] [--repeats 200]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from agent_notebook import Notebook
from agent_notebook.chat import build_chat_graph
from agent_notebook.chat.executor import KEPT_POOL
from agent_notebook.chat.state import MESSAGES_SNAPSHOT_EVERY
from agent_notebook.config import NotebookConfig, write_config
from agent_notebook.langgraph.checkpoint.delta_history import CachedValues
from agent_notebook.langgraph.private import messages_delta_reducer
from chat_turns import fake_model, make_texts


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} (1 min) {five:.2f} (5 min) on {os.cpu_count()} cores"


def ms(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1000:7.2f} ms (n={len(samples)})"


def interleaved(runs: dict[str, Callable[[int], Any]], count: int) -> dict[str, list[float]]:
    """Each of ``runs`` ``count`` times, alternating, the order swapped every round."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for i in range(count):
        for name in list(runs) if i % 2 == 0 else list(runs)[::-1]:
            started = time.perf_counter()
            runs[name](i)
            times[name].append(time.perf_counter() - started)
    return times


def report(title: str, times: dict[str, list[float]], skip: int = 0) -> None:
    print(title)
    medians = {name: statistics.median(samples[skip:]) for name, samples in times.items()}
    for name, samples in times.items():
        print(f"  {name:32} {ms(samples[skip:])}")
    (kept, with_), (other, without) = list(medians.items())
    print(
        f"  gain: {(without - with_) * 1000:+.2f} ms a run ({without / with_:.2f}x) "
        f"for {kept} against {other}"
    )


def bench_executor(home: Path, turns: int) -> tuple[Any, RunnableConfig]:
    users, answers = make_texts(2 * turns, 0)
    # lexical context search, as chat_turns.py's variant e: no embedding model to load; the
    # kept pool opted in (chat.kept_thread_pool), each turn's config choosing it or not
    chat = {"context_search": "lexical", "kept_thread_pool": True}
    write_config(home, NotebookConfig.model_validate({"chat": chat}))
    nb = Notebook.open(home)
    graph = build_chat_graph(nb, model=fake_model(answers))
    thread: RunnableConfig = {"configurable": {"thread_id": "bench"}}
    own_pool: RunnableConfig = {"configurable": {"thread_id": "bench", KEPT_POOL: False}}
    turn = iter(range(2 * turns))

    def run(config: RunnableConfig) -> Callable[[int], None]:
        def one(_: int) -> None:
            graph.invoke({"messages": [HumanMessage(users[next(turn)])]}, config)

        return one

    def between() -> None:  # the after-turn work (indexing, embedding): untimed
        nb.drain()
        if (semantic := nb.semantic) is not None:
            semantic.wait_idle(timeout=10)

    times: dict[str, list[float]] = {"kept pool (patched executor)": [], "LangGraph's pool": []}
    runs = {"kept pool (patched executor)": run(thread), "LangGraph's pool": run(own_pool)}
    for i in range(turns):
        for name in list(runs) if i % 2 == 0 else list(runs)[::-1]:
            started = time.perf_counter()
            runs[name](i)
            times[name].append(time.perf_counter() - started)
            between()
    report(f"executor: chat turns, {turns} each, the first 10 of each left out", times, skip=10)
    return graph, thread


class DeltaState(TypedDict):
    messages: Annotated[
        list[AnyMessage],
        DeltaChannel(messages_delta_reducer, snapshot_frequency=MESSAGES_SNAPSHOT_EVERY),
    ]


class FullState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def answering(answers: Iterator[str]) -> Callable[[Any], dict[str, Any]]:
    def agent(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(next(answers))]}

    return agent


def bench_delta_channel(base: Path, turns: int) -> None:
    users, answers = make_texts(turns, 1)
    graphs, files = {}, {}
    for name, state in (
        ("DeltaChannel (private reducer)", DeltaState),
        ("add_messages", FullState),
    ):
        files[name] = base / f"{name.split()[0]}.db"
        saver = SqliteSaver(sqlite3.connect(files[name], check_same_thread=False))
        graph = StateGraph(state)
        graph.add_node("agent", answering(iter(answers)))
        graph.add_edge(START, "agent")
        graph.add_edge("agent", END)
        graphs[name] = graph.compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}

    def run(name: str) -> Callable[[int], None]:
        return lambda i: graphs[name].invoke({"messages": [HumanMessage(users[i])]}, config)

    times = interleaved({name: run(name) for name in graphs}, turns)
    report(f"delta channel: {turns} turns on LangGraph's SqliteSaver", times)
    for name, path in files.items():
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
        print(f"  {name:32} checkpoint file {size / 1e6:8.2f} MB")


def bench_history_walk(graph: Any, thread: RunnableConfig, repeats: int) -> None:
    saver = graph.checkpointer
    newest, previous = list(saver.list(thread, limit=2))
    names = ["messages"]
    public = saver.get_delta_channel_history(config=previous.config, channels=names)
    before = saver._replayed(public, names)  # what the last turn's read kept
    key = ("bench", "")

    def cached(_: int) -> Any:
        with saver._history_snapshot() as (epoch, walk):
            kept = CachedValues(epoch, previous.config["configurable"]["checkpoint_id"], before)
            checkpoint_id = newest.config["configurable"]["checkpoint_id"]
            return saver._replayed(walk(key, checkpoint_id, names, kept), names)

    def whole(_: int) -> Any:
        found = saver.get_delta_channel_history(config=newest.config, channels=names)
        return saver._replayed(found, names)

    assert cached(0) == whole(0), "the two reads differ"
    size = len(whole(0)["messages"])
    times = interleaved({"walk to the kept value (private)": cached, "public walk": whole}, repeats)
    report(f"history walk: a turn's read of {size} messages, {repeats} reads each", times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=120, help="chat turns per condition")
    parser.add_argument("--repeats", type=int, default=200, help="history reads per condition")
    args = parser.parse_args()
    print(
        f"langgraph {version('langgraph')}, langgraph-checkpoint-sqlite "
        f"{version('langgraph-checkpoint-sqlite')}; {load()}"
    )
    with tempfile.TemporaryDirectory() as base:
        home = Path(base) / "home"
        home.mkdir(mode=0o700)
        graph, thread = bench_executor(home, args.turns)
        bench_history_walk(graph, thread, args.repeats)
        bench_delta_channel(Path(base), 2 * args.turns)
    print(f"after: {load()}")


if __name__ == "__main__":
    main()
