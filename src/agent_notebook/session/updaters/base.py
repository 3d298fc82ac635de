"""The protocol every session-notebook updater follows, and what it hands back.

An updater reads the current sections and the messages since the last update and proposes
the new sections. It never writes: :class:`~agent_notebook.session.SessionNotebook` applies
the proposal, keeps any section the proposal would blank, condenses to budget (losing
nothing) and reports identifiers that vanished without being marked resolved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from langchain_core.messages import BaseMessage, convert_to_messages

from ...errors import UpdateFailed as UpdateFailed  # re-export: was defined here
from ..sections import Sections

MessageLike = BaseMessage | dict[str, Any]


@dataclass(frozen=True, slots=True)
class UpdateProposal:
    """All seven sections as the updater would have them, and identifiers it resolved."""

    sections: Sections
    resolved: list[str] = field(default_factory=list)


@runtime_checkable
class NotebookUpdater(Protocol):
    #: A short name for reports and the failure log ("deterministic", "llm").
    name: str

    def propose(self, current: Sections, messages: Sequence[BaseMessage]) -> UpdateProposal:
        """Propose new sections, or raise :class:`UpdateFailed`."""
        ...

    async def apropose(self, current: Sections, messages: Sequence[BaseMessage]) -> UpdateProposal:
        """The same, for callers on an event loop."""
        ...


def as_messages(messages: Sequence[MessageLike]) -> list[BaseMessage]:
    """LangChain messages from LangChain messages or OpenAI-style dicts."""
    return list(convert_to_messages(list(messages)))
