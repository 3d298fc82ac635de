"""The chat graph (seed 001): ``START → agent → END``, checkpointed.

``agent`` is the seed's ``call_model_with_messages``: the system prompt rendered from
``chat/system.jinja`` with the state and the ContextBuilder's output, then ``[SystemMessage]
+ messages``, the model's answer with ``<think>`` blocks stripped. Before it returns, the node
remembers the turn: it records the new messages as moments (no LLM), hands the session
notebook's update to :meth:`Notebook.after_turn` when ``should_update`` says so, and, when
the live messages pass their budget, moves the oldest out of the state (never splitting tool
calls from their results) into the condensed history. By default a turn writes one checkpoint, at its end (LangGraph's ``durability="exit"``,
``chat.checkpoint_durability``): every checkpoint written is kept, one per turn.

The live messages are fitted to the budget before the model sees them too: a thread that
comes in bigger than its budget (an imported one, or a smaller ``live_budget_tokens``) is
cut down to its newest messages, the rest condensed, on its first turn. A run that raises
changes no checkpoint (:class:`~agent_notebook.chat.runs.ChatGraph`).

The node runs sync under ``invoke``/``stream`` and async under ``ainvoke``/``astream``/
``astream_events``: then the model is awaited (``ainvoke``) and the notebook's blocking work
runs on a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from ..compaction.summarize import (
    ExtractiveSummarizer,
    LlmSummarizer,
    Summarizer,
    messages_as_texts,
)
from ..config import ChatSettings
from ..errors import InvalidInput
from ..langgraph.messages import drafts_for, kept, message_time
from ..notebook.facade import Notebook
from ..session.activity import ActivityMark, mark_after
from ..session.updaters import DeterministicUpdater, LlmUpdater, NotebookUpdater
from .compaction import CompactionPlan, plan_compaction, removals
from .context import ContextBuilder
from .executor import keep_pool
from .models import ModelResolver
from .prompts import Prompter
from .runs import ChatGraph
from .state import ThreadState
from .thinking import strip_think_blocks

__all__ = ["build_chat_graph", "thread_id_of"]

#: LangGraph's ``configurable`` key for a run's default ``durability``.
DURABILITY: Final = "__pregel_durability"


@dataclass(frozen=True)
class Turn:
    """One turn on its way to the model: its thread, session, live messages (within the
    budget), the messages not yet recorded as moments, and the model input. ``fitted``:
    what was cut from the live messages before the call, with the condensed history then."""

    thread_id: str
    session_id: str
    messages: list[BaseMessage]
    unrecorded: list[BaseMessage]
    payload: list[BaseMessage]
    fitted: tuple[CompactionPlan, str] | None = None


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
) -> ChatGraph:
    """The chat graph over ``notebook``, checkpointed by ``checkpointer`` (default: the
    notebook's :attr:`~Notebook.checkpointer`, LangGraph's ``SqliteSaver`` on its own file,
    sync and async, keeping every checkpoint unless ``chat.keep_checkpoints`` says otherwise).

    ``model`` is the default chat model (an instance or "provider:model"; default: the
    ``chat.model`` setting or ``AGENT_NOTEBOOK_MODEL``); ``models`` pre-registers instances
    that a request's ``model_override`` may name.
    """
    chat = settings or notebook.config.chat
    resolver = ModelResolver(model or chat.model, models)
    prompter = Prompter(prompts_dir or chat.prompts_dir)
    context_builder = ContextBuilder(notebook, budget_tokens=chat.context_budget_tokens)

    def prompt_for(state: ThreadState, config: RunnableConfig) -> tuple[Turn, BaseChatModel]:
        """The turn's model input (system prompt and messages) and the model to answer it."""
        thread_id = thread_id_of(config)
        messages: list[BaseMessage] = list(state.get("messages") or [])
        asking = _latest_human(messages)
        message = "" if asking is None else asking.text
        context_builder.prepare(message)  # the message's vector is made meanwhile
        try:
            session_id = notebook.thread_session(thread_id)
            recorded = mark_after(messages, ActivityMark(message_id=state.get("recorded_through")))
            notes = notebook.session_notebook(thread_id).sync
            rendered_notes = notes.render_for_compaction()  # one read for the cut and the context
            condensed = state.get("condensed_history") or ""
            fitted = compacted(messages, condensed, lambda: rendered_notes)
            if fitted is not None:
                messages, condensed = fitted[0].keep, fitted[1]
            session = notebook.get_session(session_id)  # read once for the context and the prompt
            built = context_builder.build(
                message=message,
                session_id=session_id,
                session_notebook=rendered_notes,
                condensed_history=condensed,
                context_config=state.get("context_config"),
                session=session,
                # a replayed turn's own time: its "yesterday" is read from then (else now)
                asked_at=None if asking is None else message_time(asking),
            )
        finally:  # a vector its search did not take (it failed first) holds the worker no more
            context_builder.done(message)
        ours = {"session_id": session_id, "task": session.task}
        system_prompt = prompter.render(
            "chat/system",
            state=state,
            session=ours,
            notebook=state.get("notebook") or ours,  # the seed's field, in any shape
            context=state.get("context"),
            built_context=built.render(),
        )
        payload: list[BaseMessage] = [SystemMessage(content=system_prompt), *messages]
        unrecorded: list[BaseMessage] = list((state.get("messages") or [])[recorded:])
        turn = Turn(thread_id, session_id, messages, unrecorded, payload, fitted)
        return turn, resolver.resolve(state.get("model_override"))

    def answered(state: ThreadState, turn: Turn, ai_message: BaseMessage) -> dict[str, Any]:
        cleaned_message = ai_message.model_copy(
            # an id now, so the moment and the state name the answer alike
            update={
                "content": strip_think_blocks(ai_message.content),
                "id": ai_message.id or str(uuid.uuid4()),
            }
        )
        return remember(state, turn, cleaned_message)

    def call_model_with_messages(state: ThreadState, config: RunnableConfig) -> dict[str, Any]:
        turn, chat_model = prompt_for(state, config)
        return answered(state, turn, chat_model.invoke(turn.payload, config))

    async def acall_model_with_messages(
        state: ThreadState, config: RunnableConfig
    ) -> dict[str, Any]:
        """The same turn for ``ainvoke``/``astream``: the model is awaited, and the
        notebook's blocking work (SQLite, embedding) runs on a worker thread."""
        turn, chat_model = await asyncio.to_thread(prompt_for, state, config)
        ai_message = await chat_model.ainvoke(turn.payload, config)
        return await asyncio.to_thread(answered, state, turn, ai_message)

    updater: NotebookUpdater = (
        LlmUpdater(resolver.resolve()) if chat.notebook_updater == "llm" else DeterministicUpdater()
    )
    summarizer: Summarizer = (
        LlmSummarizer(resolver.resolve()) if chat.summarizer == "llm" else ExtractiveSummarizer()
    )

    def compacted(
        messages: list[BaseMessage], previous: str, guidance: Callable[[], str]
    ) -> tuple[CompactionPlan, str] | None:
        """The plan that fits ``messages`` to the live budget and the condensed history
        with what it removes; None when they fit (or nothing can go). ``guidance`` (the
        session notebook rendered) is read only when something goes."""
        plan = plan_compaction(messages, chat.live_budget_tokens)
        if plan is None or not plan.remove:
            return None
        condensed = summarizer.summarize(
            messages_as_texts(plan.remove),
            previous=previous,
            guidance=guidance(),
            max_tokens=chat.condensed_history_tokens,
        )
        return plan, condensed

    def remember(state: ThreadState, turn: Turn, answer: BaseMessage) -> dict[str, Any]:
        """The state update of ``turn`` answered by ``answer``."""
        messages = [*turn.messages, answer]
        new = [*turn.unrecorded, answer]
        notes = notebook.session_notebook(turn.thread_id).sync
        update: dict[str, Any] = {
            "messages": [answer],
            "recorded_through": answer.id,
            "model_override": None,  # an override is for its own request only
        }
        cuts = [turn.fitted] if turn.fitted is not None else []
        previous = turn.fitted[1] if turn.fitted else state.get("condensed_history") or ""
        if (after := compacted(messages, previous, notes.render_for_compaction)) is not None:
            cuts.append(after)
        condensed = cuts[-1][1] if cuts else None
        # The moments and the session's condensed history: one transaction, one commit.
        notebook.record_many(turn.session_id, kept(drafts_for(new)), condensed_history=condensed)
        if isinstance(summarizer, ExtractiveSummarizer):  # the turn that folds them is spared it
            notebook.after_turn(lambda: summarizer.prepare(messages_as_texts(new)))
        if notes.should_update(messages):  # derived data: updated after the turn
            notebook.after_turn(lambda: notes.update_from(messages, updater))
        if cuts:
            gone = [marker for plan, _ in cuts for marker in removals(plan)]
            update |= {"messages": [*gone, answer], "condensed_history": condensed}
        return update

    graph = StateGraph(ThreadState)
    graph.add_node(
        "agent", RunnableLambda(call_model_with_messages, acall_model_with_messages, name="agent")
    )
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    compiled = graph.compile(checkpointer=checkpointer or notebook.langgraph.checkpointer_for(chat))
    # One checkpoint a turn unless the settings (or the run) ask for one a step.
    compiled = compiled.with_config(configurable={DURABILITY: chat.checkpoint_durability})
    if chat.kept_thread_pool:  # opt-in: it replaces a private LangGraph function
        compiled = keep_pool(compiled)  # a turn starts no threads
    chat_graph = ChatGraph.of(compiled)
    chat_graph.on_new_message(context_builder.prepare)  # embedding starts with the run
    chat_graph.around_runs(notebook.turn_running)  # the moments' vectors: after the run
    return chat_graph


def _latest_human(messages: Sequence[BaseMessage]) -> HumanMessage | None:
    """The user's turn being answered: the latest human message."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message
    return None
