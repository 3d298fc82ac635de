"""One kept thread pool for the chat graph's background work (checkpoint saves): opt-in.

LangGraph runs a graph's background tasks on a ``ThreadPoolExecutor`` that it makes for
each ``invoke`` and shuts down at its end (``langchain_core``'s
``get_executor_for_config``), so every turn starts new threads and waits for them to end.
A graph marked with :func:`keep_pool` takes this module's pool instead, made once. Other
graphs, and a run that sets ``max_concurrency``, get LangGraph's own pool as before.

Off by default: only ``chat.kept_thread_pool: true`` in ``config.yaml`` makes the chat graph
call :func:`keep_pool`, and only then is LangGraph's private factory replaced (for the whole
process: LangGraph reads it from its module; the replacement routes only marked graphs to
the kept pool). The gain is small: a timed turn's median 1.5-3.6 ms (1.06-1.17x) and
0.5-1.1 ms of CPU on a 15-25 ms turn with a fake model at load 3-5 on 2 cores, not seen in
a whole run's CPU time (see :mod:`agent_notebook.langgraph.private`).

Safe to share: LangGraph waits for its own tasks before a run ends, and a checkpoint save
waits only for saves submitted before it, which a first-in-first-out pool has started.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from typing import Final, TypeVar

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ContextThreadPoolExecutor

from ..langgraph.private import executor_module

#: A ``configurable`` key; LangGraph keeps keys starting with "__" out of the metadata.
KEPT_POOL: Final = "__agent_notebook_kept_pool__"
POOL_THREADS: Final = 4

_pool: ContextThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_Graph = TypeVar("_Graph")


def kept_pool() -> Executor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ContextThreadPoolExecutor(
                POOL_THREADS, thread_name_prefix="agent-notebook-graph"
            )
        return _pool


def keep_pool(graph: _Graph) -> _Graph:
    """``graph`` (a compiled LangGraph graph) running its background tasks on the kept
    pool; unchanged when this LangGraph has no hook for it."""
    if not _install():
        return graph
    return graph.with_config(configurable={KEPT_POOL: True})  # type: ignore[attr-defined, no-any-return]


def _install() -> bool:
    """Route LangGraph's executor factory (a private name: see
    :mod:`agent_notebook.langgraph.private`) through ``executor_for_config`` (once)."""
    _executor = executor_module()
    if _executor is None:
        return False
    original = getattr(_executor, "get_executor_for_config", None)
    if original is None:
        return False
    if getattr(original, "_agent_notebook", False):
        return True

    @contextmanager
    def executor_for_config(config: RunnableConfig | None) -> Iterator[Executor]:
        config = config or {}
        marked = (config.get("configurable") or {}).get(KEPT_POOL)
        if not marked or config.get("max_concurrency") is not None:
            with original(config) as executor:
                yield executor
            return
        yield kept_pool()  # not shut down: kept for the next run

    executor_for_config._agent_notebook = True  # type: ignore[attr-defined]
    _executor.get_executor_for_config = executor_for_config  # type: ignore[attr-defined]
    return True
