"""The session notebook (seed 000): fixed sections of working memory for one thread."""

from __future__ import annotations

from .sections import SECTION_NAMES, SECTIONS
from .session_notebook import (
    DEFAULT_MAX_SECTION_TOKENS,
    DEFAULT_MAX_TOTAL_TOKENS,
    DEFAULT_MESSAGE_THRESHOLD,
    DEFAULT_TOOL_CALL_THRESHOLD,
    SessionBudgets,
    SessionNotebook,
    SessionNotebookSync,
    UpdateFailure,
    UpdateReport,
)

__all__ = [
    "DEFAULT_MAX_SECTION_TOKENS",
    "DEFAULT_MAX_TOTAL_TOKENS",
    "DEFAULT_MESSAGE_THRESHOLD",
    "DEFAULT_TOOL_CALL_THRESHOLD",
    "SECTIONS",
    "SECTION_NAMES",
    "SessionBudgets",
    "SessionNotebook",
    "SessionNotebookSync",
    "UpdateFailure",
    "UpdateReport",
]
