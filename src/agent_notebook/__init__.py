"""agent-notebook: a private, structured, searchable notebook that gives LLM agents memory.

Start with :class:`Notebook`::

    from agent_notebook import Notebook

    with Notebook.open() as nb:                     # ~/.agent-notebook, SQLite
        session = nb.start_session("Plan the trip")
        nb.record(session.id, "Book the train to Lyon for 7 June", role="user")
        hits = nb.search("train Lyon")
"""

from __future__ import annotations

from .errors import (
    Conflict,
    CorruptFile,
    InvalidId,
    InvalidInput,
    MalformedFile,
    MissingDependency,
    NotebookError,
    NotFound,
    StorageError,
)
from .model import (
    Action,
    ConceptEntry,
    Decision,
    Escalation,
    Link,
    Moment,
    MomentDraft,
    NotebookStats,
    PendingItem,
    SearchHit,
    Session,
    TaskStatus,
)
from .notebook import Notebook

__version__ = "0.1.0"

__all__ = [
    "Action",
    "ConceptEntry",
    "Conflict",
    "CorruptFile",
    "Decision",
    "Escalation",
    "InvalidId",
    "InvalidInput",
    "Link",
    "MalformedFile",
    "MissingDependency",
    "Moment",
    "MomentDraft",
    "NotFound",
    "Notebook",
    "NotebookError",
    "NotebookStats",
    "PendingItem",
    "SearchHit",
    "Session",
    "StorageError",
    "TaskStatus",
    "__version__",
]
