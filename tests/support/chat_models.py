"""Chat models for tests where the point is not the model: one that answers a set text or
fails as a provider that is down, and records every prompt it gets."""

from __future__ import annotations

from langchain_core.messages import BaseMessage
from pydantic import Field

from agent_notebook.chat.models import OfflineChatModel


class RecordingModel(OfflineChatModel):
    """Answers ``reply`` (or raises ``error``) and records every prompt it gets."""

    reply: str = "summary"
    error: str = ""
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def answer(self, messages: list[BaseMessage]) -> str:
        self.seen.append(list(messages))
        if self.error:
            raise RuntimeError(self.error)
        return self.reply
