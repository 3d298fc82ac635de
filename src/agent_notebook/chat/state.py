"""``ThreadState`` (seed 001), plus what bounded threads need."""

from __future__ import annotations

from typing import Annotated, Optional

from langchain_core.messages import AnyMessage
from langgraph.channels.delta import DeltaChannel

from ..langgraph.checkpoint.sqlite import last_write
from ..langgraph.private import messages_delta_reducer
from ..notebook.checkpoints import ImportedThread

#: A checkpoint stores the whole ``messages`` list once in this many updates of it (two a
#: turn); the ones between store only the messages written (LangGraph's ``DeltaChannel``),
#: so a read replays the writes of at most this many checkpoints (issue 17: bytes on disk).
#: A turn's read replays only the writes since the last turn's (``delta_history``), so the
#: interval costs only reads with nothing kept: a process's first read of a thread, time
#: travel, ``get_state_history`` (about 0.05-0.08 ms an update replayed on this machine).
#: 400 would store 0.15x the raw text less at 300 turns (whole lists of the live window,
#: 6.5 KB each, every 50 turns) but made a cold read up to about 30 ms instead of 8 and
#: ``get_state_history`` of 301 checkpoints 5.5 s instead of 2.9: time travel won.
MESSAGES_SNAPSHOT_EVERY = 100

__all__ = ["MESSAGES_SNAPSHOT_EVERY", "ThreadState"]


class ThreadState(ImportedThread, total=False):
    """The state that travels with every turn and is checkpointed.

    The seed's five fields keep their names: ``messages`` (the live window, merged like
    ``add_messages`` by LangGraph's delta reducer, so checkpoints keep only new messages),
    ``notebook`` (any shape: Open Notebook's notebook object, or ours,
    ``{"session_id", "task"}``), ``context`` (extra text for the system prompt),
    ``context_config`` (item id or kind → "not in context" | "summary" | "full") and
    ``model_override`` ("provider:model" for this request). Ours: ``condensed_history``
    (what compaction folded out of ``messages``) and ``recorded_through`` (the id of the
    last message recorded as a moment). ``recorded_through``, ``notebook`` and ``context``
    are declared in :class:`ImportedThread`: an import writes them.
    """

    # The same messages as ImportedThread's, stored as deltas (a checkpoint written whole,
    # as an import writes it, reads as the snapshot the deltas start from).
    messages: Annotated[
        list[AnyMessage],
        DeltaChannel(messages_delta_reducer, snapshot_frequency=MESSAGES_SNAPSHOT_EVERY),
    ]
    context_config: Optional[dict[str, str]]  # noqa: UP045 - the seed's spelling
    model_override: Optional[str]  # noqa: UP045
    # Written when compaction folds messages out; snapshotted at each write.
    condensed_history: Annotated[str, DeltaChannel(last_write, snapshot_frequency=1)]
