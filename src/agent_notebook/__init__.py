"""agent-notebook: a private, structured, searchable notebook that gives LLM agents memory.

Start with :class:`Notebook`::

    from agent_notebook import Notebook

    with Notebook.open() as nb:                     # ~/.agent-notebook, SQLite
        session = nb.start_session("Plan the trip")
        nb.record(session.id, "Book the train to Lyon for 7 June", role="user")
        hits = nb.search("train Lyon")
"""

# No ``from __future__ import annotations`` and no ``from typing import …``: every public name
# bound here is part of the API and listed in ``__all__`` (tests/project/test_exported_members.py checks).
import typing as _typing

from .errors import (
    CheckpointPruned,
    Conflict,
    CorruptFile,
    CorruptMedia,
    Forbidden,
    InvalidId,
    InvalidInput,
    MalformedAnswer,
    MalformedFile,
    MalformedItem,
    MissingDependency,
    ModelFailed,
    ModelNotConfigured,
    NotebookError,
    NotFound,
    OverLimit,
    RateLimited,
    SealedBlobError,
    StorageError,
    SummaryFailed,
    TooLarge,
    UpdateFailed,
    VectorChangesPruned,
    WrongKey,
)

__version__ = "0.1.0"

# The model and the facade load on first use (PEP 562): importing a part of the package
# (the CLI, ``agent_notebook.errors``, a backend) does not load the rest first.
_LAZY = {
    **dict.fromkeys(
        [
            "Action",
            "ConceptEntry",
            "Decision",
            "Escalation",
            "Link",
            "Moment",
            "MomentDraft",
            "NotebookStats",
            "PendingItem",
            "Session",
            "TaskStatus",
        ],
        "model",
    ),
    "Notebook": "notebook.facade",
    "SearchHit": "search.hits",
}

if _typing.TYPE_CHECKING:
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
        Session,
        TaskStatus,
    )
    from .notebook.facade import Notebook
    from .search.hits import SearchHit


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # found directly next time
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "Action",
    "CheckpointPruned",
    "ConceptEntry",
    "Conflict",
    "CorruptFile",
    "CorruptMedia",
    "Decision",
    "Escalation",
    "Forbidden",
    "InvalidId",
    "InvalidInput",
    "Link",
    "MalformedAnswer",
    "MalformedFile",
    "MalformedItem",
    "MissingDependency",
    "ModelFailed",
    "ModelNotConfigured",
    "Moment",
    "MomentDraft",
    "NotFound",
    "Notebook",
    "NotebookError",
    "NotebookStats",
    "OverLimit",
    "PendingItem",
    "RateLimited",
    "SealedBlobError",
    "SearchHit",
    "Session",
    "StorageError",
    "SummaryFailed",
    "TaskStatus",
    "TooLarge",
    "UpdateFailed",
    "VectorChangesPruned",
    "WrongKey",
    "__version__",
]
