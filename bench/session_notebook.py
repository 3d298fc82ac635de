"""Session notebook latency: p50 and p95 on a notebook's SQLite store and on InMemoryStore.

(a) One agent turn: ``should_update`` on the conversation so far, then ``update_section``
    (read, revision check, write of the whole notebook item). The SQLite store is
    ``Notebook.store`` (LangGraph's ``SqliteStore`` on ``notebook.db``, WAL); the alternative
    is LangGraph's ``InMemoryStore``. Rounds alternate between the two stores.
(b) ``enforce_budget`` on a notebook filled to twice its total budget (a fresh copy, in a new
    thread, for every run): with a notebook the cut text becomes moments in ``notebook.db``;
    on InMemoryStore it becomes store items.

    python bench/session_notebook.py [--n 300] [--runs 20]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

sys.path.insert(0, str(Path(__file__).parent))
from _common import SAMPLE_TEXTS, summary_ms
from agent_notebook import Notebook
from agent_notebook.session import SECTION_NAMES, SessionNotebookSync
from agent_notebook.session.sections import render


def message(i: int) -> BaseMessage:
    text = f"{SAMPLE_TEXTS[i % len(SAMPLE_TEXTS)]} (#{i})"
    if i % 2:
        return AIMessage(text, id=f"m{i}")
    return HumanMessage(text, id=f"m{i}")


def bench_turns(
    notebooks: dict[str, SessionNotebookSync], n: int
) -> dict[str, tuple[list[float], list[float]]]:
    """(should_update times, update_section times) per store, rounds interleaved."""
    times: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in notebooks}
    history: list[BaseMessage] = []
    for i in range(n):
        history.append(message(i))
        section = SECTION_NAMES[i % len(SECTION_NAMES)]
        text = f"{SAMPLE_TEXTS[i % len(SAMPLE_TEXTS)]}\nupdated at turn {i}"
        order = list(notebooks.items())
        if i % 2:
            order.reverse()  # neither store always runs first
        for name, nb in order:
            t0 = time.perf_counter()
            due = nb.should_update(history)
            t1 = time.perf_counter()
            nb.update_section(section, text)
            t2 = time.perf_counter()
            if due:
                nb.mark_updated(history)
            times[name][0].append(t1 - t0)
            times[name][1].append(t2 - t1)
    return times


def twice_the_budget(max_total_tokens: int) -> str:
    """A notebook of about ``2 * max_total_tokens`` tokens: sections of varied sizes, one of
    them a single long line."""
    target_chars = 2 * max_total_tokens * 4
    shares = [0.07, 0.04, 0.15, 0.25, 0.08, 0.18, 0.23]
    body = {}
    for k, (name, share) in enumerate(zip(SECTION_NAMES, shares, strict=True)):
        size = int(target_chars * share)
        if name == "Workflow":
            body[name] = " ".join(f"step{j}" for j in range(size // 7))[:size]
            continue
        lines, used, j = [], 0, 0
        while used < size:
            line = f"{name} {j}: {SAMPLE_TEXTS[(j + k) % len(SAMPLE_TEXTS)]}"
            lines.append(line)
            used += len(line) + 1
            j += 1
        body[name] = "\n".join(lines)
    return render(body)


def bench_enforce(
    make: dict[str, Callable[[str], SessionNotebookSync]], runs: int, content: str
) -> tuple[dict[str, list[float]], dict[str, int]]:
    """enforce_budget times per store, and the largest notebook (tokens) it left."""
    times: dict[str, list[float]] = {k: [] for k in make}
    after: dict[str, int] = dict.fromkeys(make, 0)
    for run in range(runs):
        for name, factory in make.items():
            nb = factory(f"run-{run}")
            nb.save(content)  # the fresh copy, untimed
            t0 = time.perf_counter()
            cut = nb.enforce_budget()
            times[name].append(time.perf_counter() - t0)
            assert cut, "nothing was condensed"
            after[name] = max(after[name], nb.estimate_tokens(nb.load()))
    return times, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="timed turns per store")
    parser.add_argument("--runs", type=int, default=20, help="timed enforce_budget runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Notebook.open(Path(tmp) / "home") as notebook:
        sqlite_name = "notebook SQLite store (notebook.db, WAL)"
        memory_name = "alternative: InMemoryStore"
        turn_times = bench_turns(
            {
                sqlite_name: notebook.session_notebook("t").sync,
                memory_name: SessionNotebookSync(InMemoryStore(), "t"),
            },
            args.n,
        )
        memory_store = InMemoryStore()
        budget = notebook.config.session_notebook.max_total_tokens
        content = twice_the_budget(budget)
        enforce_times, after = bench_enforce(
            {
                f"{sqlite_name}, cuts -> moments": lambda t: notebook.session_notebook(t).sync,
                f"{memory_name}, cuts -> store items": lambda t: SessionNotebookSync(
                    memory_store, t
                ),
            },
            args.runs,
            content,
        )
        start_tokens = SessionNotebookSync(InMemoryStore(), "x").estimate_tokens(content)

    rows = []
    for name, (should, update) in turn_times.items():
        rows += [(f"should_update       {name}", should), (f"update_section      {name}", update)]
    rows += [(f"enforce_budget      {name}", t) for name, t in enforce_times.items()]
    print(
        f"session notebook: {args.n} turns per store (interleaved); enforce_budget: "
        f"{args.runs} runs, each from {start_tokens} tokens to a budget of {budget} tokens"
    )
    width = max(len(name) for name, _ in rows)
    for name, samples in rows:
        print(f"{name:<{width}}  n={len(samples):<4} {summary_ms(samples)}")
    for name, tokens in after.items():
        print(f"largest notebook after enforce_budget, {name}: {tokens} tokens")


if __name__ == "__main__":
    main()
