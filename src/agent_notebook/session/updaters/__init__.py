"""Session-notebook updaters: each proposes new sections from the messages since the last
update; :class:`~agent_notebook.session.SessionNotebook` applies the proposal.

* :class:`DeterministicUpdater` (``"deterministic"``): rules over the messages, no model.
* :class:`LlmUpdater` (``"llm"``): any LangChain chat model rewrites the sections.
"""

from __future__ import annotations

from .base import NotebookUpdater, UpdateFailed, UpdateProposal, as_messages
from .deterministic import DeterministicUpdater
from .llm import LlmUpdater

__all__ = [
    "DeterministicUpdater",
    "LlmUpdater",
    "NotebookUpdater",
    "UpdateFailed",
    "UpdateProposal",
    "as_messages",
]
