"""A checkpointer's last rebuilt delta-channel values, kept between turns (any backend).

A chat thread's ``messages`` is a LangGraph ``DeltaChannel``: reading a checkpoint replays
the writes of every ancestor back to the nearest snapshot (up to ``snapshot_frequency``
checkpoints). The next turn reads the checkpoint the last one wrote, whose ancestors are
the same plus a few: :class:`DeltaHistoryCache` keeps the value rebuilt at the checkpoint
last read of each thread and namespace, and each backend's walk (SQLite:
:mod:`.sqlite_history`, PostgreSQL: :mod:`.postgres_history`) replays only the writes since
it.

The value of a delta channel at checkpoint ``C`` depends on the checkpoints from ``C`` up
to its seed and on the writes of ``C``'s strict ancestors; nothing else. Triggers in the
database bump a counter (``checkpoint_history_epoch``) on whatever may change that for
some ``C``: any UPDATE or DELETE of a checkpoint, a write or a stored channel value
(redaction, key rotation, pruning, rollback, ``delete_thread``, a rewrite), a checkpoint
inserted under an id not newer than every one of its thread and namespace (``put`` again,
``copy_thread``), and a write to a checkpoint that already has a newer one. They fire
whichever connection or process writes; a turn's own writes (to the newest checkpoint,
then a newer checkpoint) fire none. A kept value is used only while the counter is what
it was when the value was rebuilt, read in the same read transaction (one snapshot) as
the walk.

Like LangGraph's ``rollback`` and the savers', this relies on checkpoint ids growing with
time (an ancestor's id sorts below its descendants').
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["CACHED_THREADS", "CachedValues", "DeltaHistoryCache"]

#: Threads (and namespaces) whose last rebuilt value is kept.
CACHED_THREADS = 64


@dataclass(frozen=True, slots=True)
class CachedValues:
    epoch: int
    checkpoint_id: str
    values: Mapping[str, Any]


class DeltaHistoryCache:
    """The delta-channel values rebuilt at the checkpoint last read, per (thread,
    namespace), for the :data:`CACHED_THREADS` threads read last. Values go in and come out
    as shallow copies: a reducer or a caller changing its list leaves the cache's alone.
    Callers serialise access (each saver under its own lock)."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[str, str], CachedValues] = OrderedDict()
        self.enabled = True  # off: nothing kept (a bench's "before")

    def get(self, key: tuple[str, str], epoch: int, names: Sequence[str]) -> CachedValues | None:
        entry = self._entries.get(key)
        if entry is None or entry.epoch != epoch or not set(names) <= entry.values.keys():
            return None
        self._entries.move_to_end(key)
        return entry

    def put(
        self, key: tuple[str, str], epoch: int, checkpoint_id: str, values: Mapping[str, Any]
    ) -> None:
        if not self.enabled:
            return
        self._entries[key] = CachedValues(
            epoch, checkpoint_id, {k: copy.copy(v) for k, v in values.items()}
        )
        self._entries.move_to_end(key)
        while len(self._entries) > CACHED_THREADS:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()
