"""LangChain messages as moments: who said what, tool calls as actions with their results.

Shared by the chat graph (recording each turn) and the checkpoint importer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ..model import Action, MomentDraft

__all__ = ["drafts_for", "kept", "message_time"]


def message_time(message: BaseMessage) -> datetime | None:
    """When ``message`` was said, if it says: a datetime, ISO 8601 text or epoch seconds
    under ``"timestamp"`` in its ``response_metadata`` or ``additional_kwargs`` (a replayed
    or imported conversation's own time), in UTC (no zone: UTC); None when it has none or
    it is not a time."""
    raw = message.response_metadata.get("timestamp", message.additional_kwargs.get("timestamp"))
    try:
        when = datetime.fromisoformat(raw) if isinstance(raw, str) else raw
        if isinstance(when, int | float) and not isinstance(when, bool):
            when = datetime.fromtimestamp(when, UTC)
    except (ValueError, OverflowError, OSError):
        return None
    if not isinstance(when, datetime):
        return None
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)


def drafts_for(messages: Sequence[BaseMessage]) -> list[MomentDraft]:
    """Moments for messages: who said what, tool calls as actions with their results."""
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    drafts = []
    for m in messages:
        actions = []
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                result = results.get(call["id"] or "")
                actions.append(
                    Action(
                        tool=call["name"],
                        arguments=call["args"],
                        result=None if result is None else result.text,
                        ok=result is None or result.status != "error",
                    )
                )
        role = {"human": "user", "ai": "assistant"}.get(m.type, m.type)
        speaker = m.name or ""
        drafts.append(
            MomentDraft(text=m.text, role=role, speaker=speaker, actions=actions, source_id=m.id)
        )
    return drafts


def kept(drafts: Iterable[MomentDraft]) -> list[MomentDraft]:
    """The drafts that hold something: an empty answer or an empty tool output is no moment
    (the notebook refuses one; a tool call's output is in its action too)."""
    return [d for d in drafts if not d.is_empty]
