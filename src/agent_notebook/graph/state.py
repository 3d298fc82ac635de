"""``ThreadState`` (seed 001), plus what bounded threads need."""

from __future__ import annotations

from typing import Annotated, Any, Optional, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages


class ThreadState(TypedDict, total=False):
    """The state that travels with every turn and is checkpointed.

    The seed's five fields keep their names: ``messages`` (the live window, merged by
    ``add_messages``), ``notebook`` (the thread's long-term session, as ``{"session_id",
    "task"}``), ``context`` (extra text for the system prompt), ``context_config`` (item id or
    kind → "not in context" | "summary" | "full") and ``model_override`` ("provider:model"
    for this request). Ours: ``condensed_history`` (what compaction folded out of
    ``messages``) and ``recorded_through`` (the id of the last message recorded as a moment).
    """

    messages: Annotated[list[AnyMessage], add_messages]
    notebook: Optional[dict[str, Any]]  # noqa: UP045 - the seed's spelling
    context: Optional[str]  # noqa: UP045
    context_config: Optional[dict[str, str]]  # noqa: UP045
    model_override: Optional[str]  # noqa: UP045
    condensed_history: str
    recorded_through: Optional[str]  # noqa: UP045
