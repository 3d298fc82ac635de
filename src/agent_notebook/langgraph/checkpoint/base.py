"""What the notebook's checkpointers share whatever holds their rows (SQLite in
:mod:`.sqlite`, PostgreSQL in :mod:`.postgres`): the clear error for a pruned checkpoint id,
pruning to the latest ``keep`` checkpoints of a thread, a turn all or nothing, delta-channel
values kept between reads (:mod:`.delta_history`), and the async API running the sync one
on a worker thread.

A saver mixes :class:`SaverSemantics` in before LangGraph's saver class and supplies the
few statements that touch its tables: :meth:`mark`, :meth:`rollback`,
:meth:`_prune_thread`, :meth:`_oldest_checkpoint` and :meth:`_history_snapshot`.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
)

from ...core.crypto import CHECKPOINT_CIPHER, sealed_key_id
from ...errors import CheckpointPruned, InvalidInput
from ..private import DeltaSnapshot, messages_delta_reducer
from .delta_history import CachedValues, DeltaHistoryCache

if TYPE_CHECKING:
    from ...core.crypto import Cipher

__all__ = [
    "CheckpointPruned",
    "DeltaReducer",
    "HistoryWalk",
    "SaverSemantics",
    "TurnMark",
    "last_write",
    "newest_of_each_namespace",
    "reseal_typed",
]


def reseal_typed(cipher: Cipher, kind: str, blob: bytes, where: str) -> tuple[str, bytes] | None:
    """A serialised value of a checkpointer's row (``type``, ``blob``) sealed under the
    cipher's key as LangGraph's ``EncryptedSerializer`` seals it (``type`` ends in
    ``+anb-aesgcm``), for a key rotation; one sealed with the old key is opened with it, a
    plain one (from before encryption was on) is sealed as it is. None: sealed already."""
    suffix = "+" + CHECKPOINT_CIPHER
    if kind.endswith(suffix):
        if sealed_key_id(blob) == cipher.key_id:
            return None
        plain = cipher.decrypt(blob, b"checkpoint", where)
    else:
        plain, kind = blob, kind + suffix
    return kind, cipher.encrypt(plain, b"checkpoint")


def newest_of_each_namespace(rows: list[tuple[str, str, str | None]]) -> set[tuple[str, str]]:
    """The (namespace, id) of the newest checkpoint of each namespace among ``rows``."""
    newest: dict[str, str] = {}
    for ns, cid, _ in rows:
        newest[ns] = max(cid, newest.get(ns, cid))
    return set(newest.items())


#: A delta channel's batch reducer, ``(value, [write, ...]) -> value`` (see ``DeltaChannel``).
DeltaReducer = Callable[[Any, Sequence[Any]], Any]


def last_write(value: Any, writes: Sequence[Any]) -> Any:
    """A ``DeltaChannel`` reducer that keeps the last value written (like ``LastValue``),
    so a rarely changed value is stored once per change instead of in every checkpoint."""
    return writes[-1] if writes else value


#: Metadata LangGraph writes for its own bookkeeping: redaction leaves it as it is.
STRUCTURAL_METADATA = frozenset(
    {"source", "step", "parents", "thread_id", "checkpoint_ns", "checkpoint_id", "run_id"}
)


#: Channels whose values are pointers, not text: the chat graph's ``recorded_through`` (the
#: id of the last message recorded as a moment) and ``model_override`` (a model's name).
STRUCTURAL_CHANNELS = frozenset({"recorded_through", "model_override"})


def scrub_channel(scrub: Callable[[Any], Any], channel: str, value: Any) -> Any:
    """A channel's value (or a pending write to it) with ``scrub`` applied, unless the
    channel holds a pointer (:data:`STRUCTURAL_CHANNELS`)."""
    return value if channel in STRUCTURAL_CHANNELS else scrub(value)


def scrub_checkpoint(scrub: Callable[[Any], Any], checkpoint: Any) -> Any:
    """``checkpoint`` with ``scrub`` applied to its channel values only: its id, channel
    versions and seen versions are structure that a forgotten phrase (say "00") may match
    but must never rewrite. The same object when nothing changed."""
    if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("channel_values"), dict):
        return checkpoint
    values = checkpoint["channel_values"]
    scrubbed = {k: scrub_channel(scrub, k, v) for k, v in values.items()}
    if all(scrubbed[k] is v for k, v in values.items()):
        return checkpoint
    return {**checkpoint, "channel_values": scrubbed}


def scrub_metadata(scrub: Callable[[Any], Any], metadata: Any) -> Any:
    """``metadata`` with ``scrub`` applied to what a caller put there, not to LangGraph's
    own keys. The same object when nothing changed."""
    if not isinstance(metadata, dict):
        return metadata
    items = {k: v if k in STRUCTURAL_METADATA else scrub(v) for k, v in metadata.items()}
    return metadata if all(items[k] is v for k, v in metadata.items()) else items


def _default_delta_reducers() -> dict[str, DeltaReducer]:
    messages: DeltaReducer = messages_delta_reducer  # type: ignore[assignment]
    return {"messages": messages, "condensed_history": last_write}


class HistoryWalk(Protocol):
    """A backend's walk in a read snapshot: the histories of ``channels`` at checkpoint
    ``checkpoint_id`` of ``key`` (thread, namespace), replayed from ``cached`` when it is
    one of its ancestors (else from the nearest snapshot, as LangGraph reads)."""

    def __call__(
        self,
        key: tuple[str, str],
        checkpoint_id: str,
        channels: list[str],
        cached: CachedValues | None,
    ) -> Mapping[str, DeltaChannelHistory]: ...


@dataclass(frozen=True, slots=True)
class TurnMark:
    """A thread's checkpoints before a turn: the newest checkpoint id (of any namespace) and
    the writes then pending on the newest checkpoint of each namespace (a resumed run adds
    its writes there)."""

    thread_id: str
    newest: str | None
    writes: frozenset[tuple[str, str, str, int]]  # (namespace, checkpoint id, task id, idx)


class SaverSemantics:
    """Pruning, the pruned-id error, turns and the async API over a LangGraph saver."""

    keep: int | None

    def _init_semantics(
        self, keep: int | None, delta_reducers: Mapping[str, DeltaReducer] | None = None
    ) -> None:
        """``keep``: checkpoints kept per thread and namespace (None: all of them).
        ``delta_reducers``: the reducer of each ``DeltaChannel`` the graphs use, by channel
        name (default: the chat graph's), to rebuild a value before deleting the
        checkpoints it is stored across."""
        if keep is not None and keep < 1:
            raise InvalidInput(f"keep must be at least 1 checkpoint, not {keep}")
        self.keep = keep
        self.delta_reducers = dict(
            _default_delta_reducers() if delta_reducers is None else delta_reducers
        )
        self._in_turn: Counter[str] = Counter()  # thread id -> turns running on it
        self._turns_lock = threading.Lock()
        self._history = DeltaHistoryCache()

    # -- what each saver says in its own SQL --------------------------------------------------

    def mark(self, thread_id: str) -> TurnMark:
        """Where ``thread_id``'s checkpoints stand now (see :meth:`rollback`)."""
        raise NotImplementedError

    def rollback(self, mark: TurnMark) -> None:
        """Delete what was added to the thread since ``mark``: newer checkpoints (LangGraph's
        ids grow with time) with their writes, and new writes on the checkpoints then newest."""
        raise NotImplementedError

    def _prune_thread(self, thread: str, namespace: str | None = None) -> None:
        """Keep only the latest ``keep`` checkpoints of ``thread`` in ``namespace`` (every
        namespace when None)."""
        raise NotImplementedError

    def _oldest_checkpoint(self, thread: str, namespace: str) -> str | None:
        raise NotImplementedError

    def _history_snapshot(self) -> AbstractContextManager[tuple[int | None, HistoryWalk]]:
        """One read transaction (one snapshot), under the saver's lock: the history
        counter (None when the database has not all its triggers: then nothing is kept)
        and the walk reading in it."""
        raise NotImplementedError

    # -- a turn all or nothing ----------------------------------------------------------------

    @contextmanager
    def turn(self, thread_id: str) -> Iterator[TurnMark]:
        """Run one turn on ``thread_id`` inside: when the block raises, the checkpoints and
        writes added since it began are deleted (then the exception goes on); pruning waits
        until the block ends without error. One turn at a time per thread: a concurrent
        run on the same thread that began later would be rolled back with this one."""
        mark = self.begin_turn(thread_id)
        try:
            yield mark
        except GeneratorExit:  # a consumer stopped streaming: LangGraph's own semantics
            self.end_turn(mark, failed=False)
            raise
        except BaseException:
            self.end_turn(mark, failed=True)
            raise
        self.end_turn(mark, failed=False)

    def begin_turn(self, thread_id: str) -> TurnMark:
        """The mark :meth:`end_turn` rolls back to; pruning of the thread waits till then."""
        mark = self.mark(str(thread_id))
        with self._turns_lock:
            self._in_turn[mark.thread_id] += 1
        return mark

    def end_turn(self, mark: TurnMark, *, failed: bool) -> None:
        """A failed turn's checkpoints are rolled back; a good one's thread is pruned (when
        this saver prunes)."""
        with self._turns_lock:
            self._in_turn[mark.thread_id] -= 1
            if not self._in_turn[mark.thread_id]:
                del self._in_turn[mark.thread_id]
        if failed:
            self.rollback(mark)
        elif self.keep is not None:
            self._prune_thread(mark.thread_id)

    # -- sync: pruning and the clear error for a pruned id ------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved: RunnableConfig = super().put(config, checkpoint, metadata, new_versions)  # type: ignore[misc]
        thread = str(saved["configurable"]["thread_id"])
        if self.keep is not None and thread not in self._in_turn:
            self._prune_thread(thread, saved["configurable"]["checkpoint_ns"])
        return saved

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found: CheckpointTuple | None = super().get_tuple(config)  # type: ignore[misc]
        if found is not None:
            self._fill_delta_channels(found)
        if found is None and self.keep is not None and (wanted := get_checkpoint_id(config)):
            self._check_not_pruned(config, wanted)
        return found

    def _check_not_pruned(self, config: RunnableConfig, wanted: str) -> None:
        """Raise :class:`CheckpointPruned` when ``wanted`` is older than every checkpoint
        its thread keeps (LangGraph's checkpoint ids grow with time)."""
        thread = str(config["configurable"]["thread_id"])
        oldest = self._oldest_checkpoint(thread, config["configurable"].get("checkpoint_ns", ""))
        if oldest is not None and wanted < oldest:
            raise CheckpointPruned(
                f"checkpoint {wanted} of thread {thread!r} was pruned: this checkpointer keeps "
                f"the latest {self.keep} checkpoints of a thread (chat.keep_checkpoints); "
                "set chat.keep_checkpoints to null in config.yaml to keep every checkpoint, "
                "or list the ones kept with get_state_history"
            )

    # -- delta channels: a full value before older checkpoints go ------------------------------

    def _keep_readable(
        self, thread: str, kept: Callable[[list[tuple[str, str, str | None]]], set[tuple[str, str]]]
    ) -> None:
        """Before deleting ``thread``'s checkpoints not in ``kept(rows)`` (rows: namespace,
        id, parent id), materialise the delta channels of each kept one whose parent goes."""
        rows = self._checkpoint_rows(thread)
        stay = kept(rows)
        present = {(ns, cid) for ns, cid, _ in rows}
        for ns, cid, parent in rows:
            if (ns, cid) in stay and parent and (ns, parent) in present - stay:
                self.materialise(thread, ns, cid)

    def _walked_channels(self, found: CheckpointTuple) -> list[str]:
        """The delta channels ``found`` keeps no value of (its ancestors' writes hold it)."""
        checkpoint = found.checkpoint
        counters = found.metadata.get("counters_since_delta_snapshot") or {}
        return [
            name
            for name in counters
            if name in checkpoint["channel_versions"] and name not in checkpoint["channel_values"]
        ]

    def _delta_values(self, found: CheckpointTuple, names: list[str]) -> dict[str, Any]:
        """The values of the delta channels ``names`` at ``found``: replayed from the value
        kept from the last read of its thread when that checkpoint is one of its ancestors
        and nothing changed the thread's history since (:mod:`.delta_history`), else from
        the nearest snapshot; kept for the next read."""
        where = found.config["configurable"]
        key = (str(where["thread_id"]), str(where.get("checkpoint_ns", "")))
        checkpoint_id = str(where["checkpoint_id"])
        with self._history_snapshot() as (epoch, walk):
            cached = None if epoch is None else self._history.get(key, epoch, names)
            if cached is not None and cached.checkpoint_id == checkpoint_id:
                values = dict(cached.values)
            else:
                values = self._replayed(walk(key, checkpoint_id, names, cached), names)
            if epoch is not None:
                self._history.put(key, epoch, checkpoint_id, values)
        return {name: copy.copy(value) for name, value in values.items()}

    def _replayed(
        self, histories: Mapping[str, DeltaChannelHistory], names: list[str]
    ) -> dict[str, Any]:
        """The value of each delta channel of ``names``: its seed with its writes replayed."""
        from langgraph.channels.delta import DeltaChannel

        values = {}
        for name in names:
            empty: DeltaChannel[Any] = DeltaChannel(self.delta_reducers[name])
            # no seed stored: an empty channel's own checkpoint() is "nothing stored"
            channel = empty.from_checkpoint(histories[name].get("seed", empty.checkpoint()))
            channel.replay_writes(histories[name]["writes"])
            values[name] = channel.get()
        return values

    def _fill_delta_channels(self, found: CheckpointTuple) -> None:
        """Put into ``found``'s ``channel_values`` the full value of each delta channel this
        saver knows, so a caller reading ``channel_values`` directly (an import appending to
        a thread) sees the whole list, as with full checkpoints; LangGraph takes a value
        there as is and skips its own replay."""
        values = found.checkpoint["channel_values"]
        for name, value in list(values.items()):
            if isinstance(value, DeltaSnapshot):  # a snapshot reads as its plain value
                values[name] = value.value
        names = [n for n in self._walked_channels(found) if n in self.delta_reducers]
        if names:
            values.update(self._delta_values(found, names))

    def materialise(self, thread: str, namespace: str, checkpoint_id: str) -> bool:
        """Store in checkpoint ``checkpoint_id`` the full value of every delta channel it
        reads through its ancestors (as the ``DeltaSnapshot`` LangGraph itself writes), so
        it reads the same without them. True when the checkpoint changed."""
        config: RunnableConfig = {
            "configurable": {
                "thread_id": thread,
                "checkpoint_ns": namespace,
                "checkpoint_id": checkpoint_id,
            }
        }
        found: CheckpointTuple | None = super().get_tuple(config)  # type: ignore[misc]
        if found is None:
            return False
        checkpoint = found.checkpoint
        walked = self._walked_channels(found)
        if not walked:
            return False
        unknown = [name for name in walked if name not in self.delta_reducers]
        if unknown:
            raise InvalidInput(
                f"checkpoint {checkpoint_id} of thread {thread!r} keeps delta channel(s) "
                f"{', '.join(unknown)} with no reducer known to this checkpointer; pass "
                "delta_reducers={name: reducer} to NotebookSaver so older checkpoints can go"
            )
        for name, value in self._delta_values(found, walked).items():
            checkpoint["channel_values"][name] = DeltaSnapshot(value)
        self._rewrite_checkpoint(found, checkpoint)
        return True

    def _checkpoint_rows(self, thread: str) -> list[tuple[str, str, str | None]]:
        """(namespace, id, parent id) of every checkpoint of ``thread``."""
        raise NotImplementedError

    def _rewrite_checkpoint(self, found: CheckpointTuple, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` (with its delta channels' full values) in place of ``found``,
        sealed as every checkpoint is, without pruning."""
        raise NotImplementedError

    # -- async: the sync methods on a worker thread --------------------------------------------
    # One connection (or pool) and one lock serve invoke and ainvoke alike, and the event
    # loop never waits on the database.

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        # Read whole on the worker thread: a saver's list holds its lock until it is
        # exhausted, which a consumer awaiting other saver calls between items would
        # otherwise wait on forever.
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))  # type: ignore[attr-defined]
        )
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)  # type: ignore[attr-defined]

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)  # type: ignore[attr-defined]

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)  # type: ignore[attr-defined]

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)  # type: ignore[attr-defined]

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(lambda: self.prune(thread_ids, strategy=strategy))  # type: ignore[attr-defined]

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await asyncio.to_thread(
            lambda: self.get_delta_channel_history(config=config, channels=channels)  # type: ignore[attr-defined]
        )
