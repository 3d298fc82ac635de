"""Which messages are new since the last update, remembered across process restarts.

The mark stores the id of the last message seen at the last update (LangGraph gives every
message an id) and the number of messages then, for lists whose messages carry no ids.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel


class ActivityMark(BaseModel):
    message_id: str | None = None
    message_count: int = 0

    @classmethod
    def after(cls, messages: Sequence[BaseMessage]) -> ActivityMark:
        last = messages[-1].id if messages else None
        return cls(message_id=last, message_count=len(messages))


def mark_after(messages: Sequence[BaseMessage], mark: ActivityMark) -> int:
    """The index of the first message after ``mark``. When the marked message has left the
    list (compaction removed it), every message counts as new: updating too often is safe,
    missing an update is not."""
    if mark.message_id is not None:
        for index in range(len(messages) - 1, -1, -1):
            if messages[index].id == mark.message_id:
                return index + 1
        if any(m.id for m in messages):
            return 0
    return min(mark.message_count, len(messages))


def count_activity(messages: Sequence[BaseMessage], mark: ActivityMark) -> tuple[int, int]:
    """(messages, tool calls) since ``mark``."""
    new = messages[mark_after(messages, mark) :]
    tool_calls = sum(len(m.tool_calls) for m in new if isinstance(m, AIMessage))
    return len(new), tool_calls
