"""The compiled chat graph, whose runs are all or nothing on the notebook's checkpointer.

A turn that raises (the model failed, the prompt did not render, the notebook refused a
moment) would otherwise leave LangGraph's input checkpoint and its error write behind, and a
pruning checkpointer would have pruned the thread's older checkpoints for it. Here every
run on a thread goes through :meth:`NotebookSaver.turn`: a failed run's checkpoints are
rolled back, so the thread's checkpoints are exactly as before it, and pruning waits for a
run that succeeded. ``invoke``/``batch`` go through :meth:`stream`, ``ainvoke`` and
``astream_events`` (v1, v2) through :meth:`astream`. Other checkpointers run as LangGraph
runs them.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph.graph.state import CompiledStateGraph

from ..langgraph.checkpoint.base import SaverSemantics

__all__ = ["ChatGraph"]

#: What a graph does with a run's new message before the run starts (the chat graph starts
#: embedding it, so that the embedding overlaps the checkpoint reads and the input write).
#: Keyed by the graph's builder, which its copies (``with_config``) share.
_early: weakref.WeakKeyDictionary[Any, Callable[[str], None]] = weakref.WeakKeyDictionary()
#: What a graph's runs run inside (the chat graph holds the notebook's embedding worker).
_around: weakref.WeakKeyDictionary[Any, Callable[[], AbstractContextManager[Any]]] = (
    weakref.WeakKeyDictionary()
)


def _new_message(input: Any) -> str | None:
    """The text of the human message that ``input`` ends with, if it does."""
    messages = input.get("messages") if isinstance(input, dict) else None
    if isinstance(messages, list) and messages and isinstance(messages[-1], HumanMessage):
        return messages[-1].text
    return None


class ChatGraph(CompiledStateGraph[Any, Any, Any, Any]):
    """A ``CompiledStateGraph`` whose failed runs change no checkpoint (see the module)."""

    @classmethod
    def of(cls, compiled: CompiledStateGraph[Any, Any, Any, Any]) -> ChatGraph:
        # As Pregel.copy makes a copy: the same attributes, another class.
        return cls(**{k: v for k, v in compiled.__dict__.items() if k != "__orig_class__"})

    def on_new_message(self, early: Callable[[str], None]) -> None:
        """Call ``early`` with the text of a run's new human message before the run."""
        _early[self.builder] = early

    def around_runs(self, scope: Callable[[], AbstractContextManager[Any]]) -> None:
        """Run every run inside ``scope()``, entered before the run and left after it."""
        _around[self.builder] = scope

    def _scope(self) -> AbstractContextManager[Any]:
        scope = _around.get(self.builder)
        return nullcontext() if scope is None else scope()

    def _announce(self, input: Any) -> None:
        early = _early.get(self.builder)
        if early is not None and (text := _new_message(input)) is not None:
            early(text)

    def _turn_of(self, config: RunnableConfig | None) -> tuple[SaverSemantics, str] | None:
        """The saver and thread of a top-level run on a notebook checkpointer (:class:`SaverSemantics`), else None."""
        if not isinstance(self.checkpointer, SaverSemantics):
            return None
        configurable = merge_configs(self.config, config).get("configurable") or {}
        thread = configurable.get("thread_id")
        if thread is None or configurable.get("checkpoint_ns"):  # none, or run as a subgraph
            return None
        return self.checkpointer, str(thread)

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._stream_turn(self._turn_of(config), input, config, kwargs)

    def _stream_turn(
        self,
        turn: tuple[SaverSemantics, str] | None,
        input: Any,
        config: RunnableConfig | None,
        kwargs: dict[str, Any],
    ) -> Iterator[Any]:
        with self._scope():
            self._announce(input)
            if turn is None:
                yield from super().stream(input, config, **kwargs)
                return
            saver, thread = turn
            with saver.turn(thread):
                yield from super().stream(input, config, **kwargs)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        with self._scope():
            turn = self._turn_of(config)
            if turn is None:
                self._announce(input)
                async for chunk in super().astream(input, config, **kwargs):
                    yield chunk
                return
            saver, thread = turn
            self._announce(input)
            mark = await asyncio.to_thread(saver.begin_turn, thread)
            try:
                async for chunk in super().astream(input, config, **kwargs):
                    yield chunk
            except GeneratorExit:  # the consumer stopped: end without awaiting
                saver.end_turn(mark, failed=False)
                raise
            except BaseException:
                await asyncio.shield(asyncio.to_thread(saver.end_turn, mark, failed=True))
                raise
            if saver.keep is None:  # a good turn's end only counts it out: no I/O, no hop
                saver.end_turn(mark, failed=False)
            else:  # it prunes the thread
                await asyncio.to_thread(saver.end_turn, mark, failed=False)
