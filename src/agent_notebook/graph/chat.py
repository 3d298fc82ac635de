"""The chat graph (seed 001): ``START → agent → END``, checkpointed.

``agent`` is the seed's ``call_model_with_messages``: the system prompt rendered from
``chat/system.jinja`` with the state and the ContextBuilder's output, then ``[SystemMessage]
+ messages``, the model's answer with ``<think>`` blocks stripped. Before it returns, the node
remembers the turn: it records the new messages as moments (no LLM), hands the session
notebook's update to :meth:`Notebook.after_turn` when ``should_update`` says so, and, when
the live messages pass their budget, moves the oldest out of the state (never splitting tool
calls from their results) into the condensed history. One node keeps a turn to two checkpoint writes (input, answer).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ..config import ChatSettings
from ..errors import InvalidInput
from ..messages import drafts_for, kept
from ..notebook import Notebook
from ..session.activity import ActivityMark, mark_after
from ..session.updaters import DeterministicUpdater, LlmUpdater, NotebookUpdater
from ..summarize import ExtractiveSummarizer, LlmSummarizer, Summarizer, messages_as_texts
from .compaction import plan_compaction, removals
from .context import ContextBuilder
from .executor import keep_pool
from .models import ModelResolver
from .prompts import Prompter
from .state import ThreadState
from .thinking import strip_think_blocks

__all__ = ["build_chat_graph", "thread_id_of"]


def thread_id_of(config: RunnableConfig) -> str:
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if not thread_id:
        raise InvalidInput(
            "the chat graph needs a thread: invoke it with "
            "config={'configurable': {'thread_id': '…'}}"
        )
    return str(thread_id)


def build_chat_graph(
    notebook: Notebook,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    *,
    model: BaseChatModel | str | None = None,
    models: Mapping[str, BaseChatModel] | None = None,
    prompts_dir: Path | None = None,
    settings: ChatSettings | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The chat graph over ``notebook``, checkpointed by ``checkpointer`` (default: LangGraph's
    ``SqliteSaver`` on the notebook's own file, keeping the latest checkpoints of a thread).

    ``model`` is the default chat model (an instance or "provider:model"; default: the
    ``chat.model`` setting or ``AGENT_NOTEBOOK_MODEL``); ``models`` pre-registers instances
    that a request's ``model_override`` may name.
    """
    chat = settings or notebook.config.chat
    resolver = ModelResolver(model or chat.model, models)
    prompter = Prompter(prompts_dir or chat.prompts_dir)
    context_builder = ContextBuilder(notebook, budget_tokens=chat.context_budget_tokens)

    def call_model_with_messages(state: ThreadState, config: RunnableConfig) -> dict[str, Any]:
        thread_id = thread_id_of(config)
        messages = state.get("messages") or []
        message = _latest_human_text(messages)
        context_builder.prepare(message)  # the message's vector is made meanwhile
        session_id = notebook.thread_session(thread_id)
        built = context_builder.build(
            message=message,
            session_id=session_id,
            session_notebook=notebook.session_notebook(thread_id).sync.render_for_compaction(),
            condensed_history=state.get("condensed_history") or "",
            context_config=state.get("context_config"),
        )
        session = notebook.get_session(session_id)
        system_prompt = prompter.render(
            "chat/system",
            state=state,
            notebook=state.get("notebook") or {"session_id": session_id, "task": session.task},
            context=state.get("context"),
            built_context=built.render(),
        )
        payload = [SystemMessage(content=system_prompt), *messages]
        ai_message = resolver.resolve(state.get("model_override")).invoke(payload, config)
        cleaned_content = strip_think_blocks(ai_message.content)
        cleaned_message = ai_message.model_copy(
            # an id now, so the moment and the state name the answer alike
            update={"content": cleaned_content, "id": ai_message.id or str(uuid.uuid4())}
        )
        return remember(state, thread_id, session_id, [*messages, cleaned_message])

    updater: NotebookUpdater = (
        LlmUpdater(resolver.resolve()) if chat.notebook_updater == "llm" else DeterministicUpdater()
    )
    summarizer: Summarizer = (
        LlmSummarizer(resolver.resolve()) if chat.summarizer == "llm" else ExtractiveSummarizer()
    )

    def remember(
        state: ThreadState, thread_id: str, session_id: str, messages: list[BaseMessage]
    ) -> dict[str, Any]:
        """The state update of a turn whose messages (the answer last) are ``messages``."""
        start = mark_after(messages, ActivityMark(message_id=state.get("recorded_through")))
        notebook.record_many(session_id, kept(drafts_for(messages[start:])))  # the raw log first
        notes = notebook.session_notebook(thread_id).sync
        if notes.should_update(messages):  # derived data: updated after the turn
            notebook.after_turn(lambda: notes.update_from(messages, updater))
        update: dict[str, Any] = {
            "messages": [messages[-1]],
            "recorded_through": messages[-1].id,
            "model_override": None,  # an override is for its own request only
        }
        plan = plan_compaction(messages, chat.live_budget_tokens)
        if plan is not None and plan.remove:
            condensed = summarizer.summarize(
                messages_as_texts(plan.remove),
                previous=state.get("condensed_history") or "",
                guidance=notes.render_for_compaction(),
                max_tokens=chat.condensed_history_tokens,
            )
            notebook.update_session(session_id, condensed_history=condensed)
            update |= {"messages": [*removals(plan), messages[-1]], "condensed_history": condensed}
        return update

    graph = StateGraph(ThreadState)
    graph.add_node("agent", call_model_with_messages)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    compiled = graph.compile(checkpointer=checkpointer or notebook.checkpointer_for(chat))
    return keep_pool(compiled)  # a turn starts no threads


def _latest_human_text(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.text
    return ""
