"""The chat graph behind a server's chat endpoints: one compiled graph over the app's
notebook, threads (chat sessions) registered in the notebook's thread map
(``nb.langgraph``), one turn at a time per thread.
Turns run the graph async (``ainvoke``/``astream``) on the server's event loop; the
notebook's blocking work runs on worker threads."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from ..compaction.summarize import strip_think
from ..errors import Conflict, InvalidInput, ModelFailed, NotebookError, NotFound
from ..notebook.facade import Notebook
from .chat import build_chat_graph
from .context import BuiltContext, ContextBuilder
from .models import ModelResolver


class ChatService:
    def __init__(
        self,
        nb: Notebook,
        *,
        model: BaseChatModel | str | None,
        models: Mapping[str, BaseChatModel],
    ) -> None:
        self.nb = nb
        self.graph = build_chat_graph(nb, model=model, models=models)
        #: The server's chat models by name, made once each (the default, overrides, the
        #: facts judge's).
        self.models = ModelResolver(model or nb.config.chat.model, models)
        self._locks: dict[str, threading.Lock] = {}  # creating a thread
        self._turns: dict[str, asyncio.Lock] = {}
        self._guard = threading.Lock()

    def default_model(self) -> BaseChatModel:
        """The server's default chat model (ModelNotConfigured without one)."""
        return self.models.resolve()

    # -- threads ----------------------------------------------------------------------------

    def exists(self, thread_id: str) -> bool:
        return self.nb.langgraph.knows_thread(thread_id)

    def require(self, thread_id: str) -> str:
        """The notebook session of a known thread; NotFound otherwise."""
        if not self.exists(thread_id):
            raise NotFound(
                f"no chat session {thread_id!r}: create it with POST /api/chat/sessions "
                "(GET /api/chat/sessions lists them)"
            )
        return self.nb.thread_session(thread_id)

    def create(self, thread_id: str, title: str) -> str:
        with self._lock(thread_id):
            if self.exists(thread_id):
                raise Conflict(
                    f"chat session {thread_id!r} exists already; continue it with "
                    "POST /api/chat/execute or choose another thread_id"
                )
            session_id = self.nb.thread_session(thread_id)
            if title:
                self.nb.update_session(session_id, task=title)
            return session_id

    def threads(self, offset: int, limit: int) -> list[tuple[str, str]]:
        """(thread id, session id) of the registered threads, oldest first."""
        return self.nb.langgraph.threads(offset, limit)

    async def delete(self, thread_id: str) -> None:
        """Forget the thread's conversation (checkpoints) and session notebook; its turns
        stay in the long-term notebook as moments of its session. Waits for a running turn."""
        await asyncio.to_thread(self.require, thread_id)
        async with self._turn_lock(thread_id):
            await asyncio.to_thread(self.nb.langgraph.forget_thread, thread_id)

    def state(self, thread_id: str) -> dict[str, Any]:
        values: dict[str, Any] = self.graph.get_state(_config(thread_id)).values or {}
        return values

    # -- turns ------------------------------------------------------------------------------

    def check_model(self, override: str | None) -> None:
        """Fail early, as invalid input, on a model_override the server cannot make."""
        if override is None:
            return
        try:
            self.models.resolve(override)
        except NotebookError as err:
            raise InvalidInput(f"model_override {override!r}: {err}") from None
        except Exception as err:  # noqa: BLE001 - a provider refusing to start (no key…)
            raise InvalidInput(
                f"model_override {override!r}: cannot make this chat model: "
                f"{type(err).__name__}: {err}"
            ) from None

    def turn_input(
        self,
        message: str,
        context: str | None,
        context_config: Mapping[str, str] | None,
        model_override: str | None,
    ) -> dict[str, Any]:
        data: dict[str, Any] = {"messages": [HumanMessage(message)]}
        if context is not None:
            data["context"] = context
        if context_config is not None:
            data["context_config"] = dict(context_config)
        if model_override is not None:
            data["model_override"] = model_override
        return data

    async def execute(self, thread_id: str, data: dict[str, Any]) -> list[BaseMessage]:
        """One turn, run by the graph async (the notebook's work on worker threads)."""
        async with self._turn_lock(thread_id):
            try:
                state = await self.graph.ainvoke(data, _config(thread_id))
            except NotebookError:
                raise
            except Exception as err:  # a provider's failure (network, quota…)
                raise ModelFailed(f"the chat model failed: {type(err).__name__}: {err}") from err
        messages: list[BaseMessage] = state.get("messages") or []
        return messages

    async def stream(self, thread_id: str, data: dict[str, Any]) -> AsyncIterator[tuple[str, Any]]:
        """("token", text) as the answer comes (``<think>`` blocks held back), then
        ("done", the final messages)."""
        async with self._turn_lock(thread_id):
            raw, sent = "", ""
            final: dict[str, Any] = {}
            try:
                parts: AsyncIterator[tuple[str, Any]] = self.graph.astream(
                    data, _config(thread_id), stream_mode=["messages", "values"]
                )
                async for mode, chunk in parts:
                    if mode == "values":
                        final = chunk
                        continue
                    message, meta = chunk
                    if meta.get("langgraph_node") != "agent":
                        continue
                    if not isinstance(message, AIMessageChunk | AIMessage):
                        continue
                    raw += message.text
                    visible = strip_think(raw)
                    if visible.startswith(sent) and len(visible) > len(sent):
                        yield "token", visible[len(sent) :]
                        sent = visible
            except NotebookError:
                raise
            except Exception as err:  # a provider's failure
                raise ModelFailed(f"the chat model failed: {type(err).__name__}: {err}") from err
        yield "done", final.get("messages") or []

    def context(
        self, thread_id: str, message: str, context_config: Mapping[str, str] | None
    ) -> BuiltContext:
        """What the next turn's system prompt would get, as the graph builds it."""
        session_id = self.require(thread_id)
        builder = ContextBuilder(self.nb, budget_tokens=self.nb.config.chat.context_budget_tokens)
        return builder.build(
            message=message,
            session_id=session_id,
            session_notebook=self.nb.session_notebook(thread_id).sync.render_for_compaction(),
            condensed_history=self.state(thread_id).get("condensed_history") or "",
            context_config=context_config,
        )

    def _lock(self, thread_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(thread_id, threading.Lock())

    def _turn_lock(self, thread_id: str) -> asyncio.Lock:
        """One turn (or delete) of a thread at a time; turns run on the server's loop."""
        with self._guard:
            return self._turns.setdefault(thread_id, asyncio.Lock())


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}
