"""Property: whatever the conversation, compaction in the chat graph keeps tool calls with
their results, and every message that ever left the live window is a moment."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from agent_notebook import Notebook
from agent_notebook.chat import build_chat_graph
from agent_notebook.chat.compaction import tool_pairs_intact
from agent_notebook.config import ChatSettings
from agent_notebook.storage import MemoryBackend

words = st.lists(
    st.sampled_from(
        ["auth", "token", "lyon", "train", "seat", "error", "fix", "file", "test", "ok"]
    ),
    min_size=1,
    max_size=60,
).map(" ".join)
step = st.tuples(st.integers(1, 3), words, st.booleans())  # (tool calls, text, failed)
turns = st.lists(st.tuples(st.lists(step, max_size=3), words), min_size=1, max_size=8)


def messages_for(turn: tuple[list[tuple[int, str, bool]], str], ids: Any) -> list[BaseMessage]:
    steps, question = turn
    out: list[BaseMessage] = [HumanMessage(question)]
    for calls, text, failed in steps:
        call_ids = [f"call-{next(ids)}" for _ in range(calls)]
        out.append(
            AIMessage(
                "", tool_calls=[{"name": "run", "args": {"q": text}, "id": c} for c in call_ids]
            )
        )
        out += [
            ToolMessage(text, tool_call_id=c, status="error" if failed else "success")
            for c in call_ids
        ]
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns, st.integers(256, 900))
def test_compaction_keeps_tool_pairs_and_loses_no_message(
    conversation: list[tuple[list[tuple[int, str, bool]], str]], budget: int
) -> None:
    # No embedder: vectors are not what this checks, and embedding every example's moments
    # (closing waits for it) was most of its cost.
    with Notebook(MemoryBackend(), embedder=None) as nb:
        chat = ChatSettings(live_budget_tokens=budget, condensed_history_tokens=64)
        graph = build_chat_graph(
            nb, model=FakeListChatModel(responses=["noted"] * 100), settings=chat
        )
        config = {"configurable": {"thread_id": "prop"}}
        ids, seen = itertools.count(), {}
        for turn in conversation:
            state = graph.invoke({"messages": messages_for(turn, ids)}, config)
            live = state["messages"]
            assert tool_pairs_intact(live)
            newest = turn[1]
            assert any(isinstance(m, HumanMessage) and m.text == newest for m in live)
            seen.update({m.id: m for m in live})
        moments = {m.source_id: m for m in nb.moments(nb.thread_session("prop"))}
        for message_id, message in seen.items():
            assert message_id in moments  # every message, removed or not, is a moment
            assert moments[message_id].content.text == message.text
