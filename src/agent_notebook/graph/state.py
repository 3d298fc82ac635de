"""``ThreadState`` (seed 001), plus what bounded threads need."""

from __future__ import annotations

from typing import Optional

from ..checkpoints import ImportedThread


class ThreadState(ImportedThread, total=False):
    """The state that travels with every turn and is checkpointed.

    The seed's five fields keep their names: ``messages`` (the live window, merged by
    ``add_messages``), ``notebook`` (any shape: Open Notebook's notebook object, or ours,
    ``{"session_id", "task"}``), ``context`` (extra text for the system prompt),
    ``context_config`` (item id or kind → "not in context" | "summary" | "full") and
    ``model_override`` ("provider:model" for this request). Ours: ``condensed_history``
    (what compaction folded out of ``messages``) and ``recorded_through`` (the id of the
    last message recorded as a moment). ``messages``, ``recorded_through``, ``notebook``
    and ``context`` are declared in :class:`ImportedThread`: an import writes them.
    """

    context_config: Optional[dict[str, str]]  # noqa: UP045 - the seed's spelling
    model_override: Optional[str]  # noqa: UP045
    condensed_history: str
