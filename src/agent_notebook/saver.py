"""The notebook's LangGraph checkpointer: LangGraph's ``SqliteSaver`` serving both the sync
and the async API, with the conformance suite's extended capabilities.

* Every checkpoint is kept by default, so history, time travel and forks work as with
  ``SqliteSaver``. With ``keep`` (``chat.keep_checkpoints``) only the latest ``keep`` of each
  thread and namespace stay, and asking for an older one raises :class:`CheckpointPruned`
  rather than answering "no such checkpoint" (which LangGraph shows as an empty state and
  would fork ``update_state`` from nothing).
* The async methods run the sync ones on a worker thread (``asyncio.to_thread``), so one
  connection and one lock serve ``invoke`` and ``ainvoke`` alike and the event loop never
  waits on SQLite. (LangGraph's ``AsyncSqliteSaver`` cannot serve sync callers from the
  loop's own thread, and the CLI's graph runs sync.)
* ``delete_thread``, ``copy_thread``, ``prune`` and ``delete_for_runs`` are a few SQL
  statements each.
* The chat graph's ``messages`` channel is a LangGraph ``DeltaChannel``: most checkpoints
  store only the messages a step wrote, every ``snapshot_frequency``-th one the whole list,
  and a read replays the writes since the nearest snapshot (``SqliteSaver``'s
  ``get_delta_channel_history``). Whatever deletes older checkpoints (pruning,
  ``delete_for_runs``) first writes the full value into each kept checkpoint whose parent
  goes (:meth:`NotebookSaver.materialise`), so a kept checkpoint never loses its history.
* :meth:`NotebookSaver.turn` makes one run on a thread all or nothing: when it raises, the
  checkpoints and writes it added are deleted again, so a failed chat turn leaves the
  thread's checkpoints exactly as they were (and pruning waits for the turn to succeed).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.checkpoint.sqlite import SqliteSaver

from .errors import InvalidInput
from .saver_base import CheckpointPruned, SaverSemantics, TurnMark

__all__ = ["CheckpointPruned", "NotebookSaver", "TurnMark", "last_write"]

PRUNE_STRATEGIES = ("keep_latest", "delete")
_TABLES = ("checkpoints", "writes")
#: The writes pending on the newest checkpoint of each namespace of a thread.
_NEWEST_WRITES = (
    "SELECT w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx FROM writes AS w "
    "WHERE w.thread_id = ? AND w.checkpoint_id = (SELECT MAX(c.checkpoint_id) "
    "FROM checkpoints AS c WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns)"
)


def _newest_of_each_namespace(rows: list[tuple[str, str, str | None]]) -> set[tuple[str, str]]:
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


def _default_delta_reducers() -> dict[str, DeltaReducer]:
    from langgraph.graph.message import _messages_delta_reducer

    messages: DeltaReducer = _messages_delta_reducer  # type: ignore[assignment]
    return {"messages": messages, "condensed_history": last_write}


class NotebookSaver(SaverSemantics, SqliteSaver):
    """``SqliteSaver`` with async methods, optional pruning and the extended capabilities
    (what is not SQL here is :class:`~agent_notebook.saver_base.SaverSemantics`)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        keep: int | None = None,
        delta_reducers: Mapping[str, DeltaReducer] | None = None,
    ) -> None:
        """``keep``: checkpoints kept per thread and namespace (None: all of them).
        ``delta_reducers``: the reducer of each ``DeltaChannel`` the graphs use, by channel
        name (default: the chat graph's ``messages``), to rebuild a value before deleting
        the checkpoints it is stored across."""
        super().__init__(conn)
        self._init_semantics(keep)
        self.delta_reducers = dict(
            _default_delta_reducers() if delta_reducers is None else delta_reducers
        )

    # -- the statements of a turn and of pruning ----------------------------------------------

    def mark(self, thread_id: str) -> TurnMark:
        """Where ``thread_id``'s checkpoints stand now (see :meth:`rollback`)."""
        with self.cursor(transaction=False) as cur:
            (newest,) = cur.execute(
                "SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ?", (thread_id,)
            ).fetchone()
            writes = cur.execute(_NEWEST_WRITES, (thread_id,)).fetchall()
        return TurnMark(thread_id, newest, frozenset(map(tuple, writes)))

    def rollback(self, mark: TurnMark) -> None:
        """Delete what was added to the thread since ``mark``: newer checkpoints (LangGraph's
        ids grow with time) with their writes, and new writes on the checkpoints then newest."""
        newest = mark.newest or ""
        with self.cursor() as cur:
            for table in _TABLES:
                cur.execute(
                    f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_id > ?",
                    (mark.thread_id, newest),
                )
            if mark.newest is None:
                return
            added = [
                row
                for row in cur.execute(_NEWEST_WRITES, (mark.thread_id,)).fetchall()
                if tuple(row) not in mark.writes
            ]
            cur.executemany(
                "DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? "
                "AND checkpoint_id = ? AND task_id = ? AND idx = ?",
                [(mark.thread_id, *row) for row in added],
            )

    # -- delta channels: a full value before older checkpoints go ------------------------------

    def _keep_readable(
        self, thread: str, kept: Callable[[list[tuple[str, str, str | None]]], set[tuple[str, str]]]
    ) -> None:
        """Before deleting ``thread``'s checkpoints not in ``kept(rows)`` (rows: namespace,
        id, parent id), materialise the delta channels of each kept one whose parent goes."""
        with self.cursor(transaction=False) as cur:
            rows = [
                (ns, cid, parent)
                for ns, cid, parent in cur.execute(
                    "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id FROM checkpoints "
                    "WHERE thread_id = ?",
                    (thread,),
                )
            ]
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
        """The values of the delta channels ``names`` at ``found``, rebuilt from its ancestors."""
        from langgraph._internal._typing import MISSING
        from langgraph.channels.delta import DeltaChannel

        histories = self.get_delta_channel_history(config=found.config, channels=names)
        values = {}
        for name in names:
            channel: DeltaChannel[Any] = DeltaChannel(self.delta_reducers[name]).from_checkpoint(
                histories[name].get("seed", MISSING)
            )
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
            if isinstance(value, _DeltaSnapshot):  # a snapshot reads as its plain value
                values[name] = value.value
        names = [n for n in self._walked_channels(found) if n in self.delta_reducers]
        if names:
            values.update(self._delta_values(found, names))

    def materialise(self, thread: str, namespace: str, checkpoint_id: str) -> bool:
        """Store in checkpoint ``checkpoint_id`` the full value of every delta channel it
        reads through its ancestors (as the ``_DeltaSnapshot`` LangGraph itself writes), so
        it reads the same without them. True when the checkpoint changed."""
        config: RunnableConfig = {
            "configurable": {
                "thread_id": thread,
                "checkpoint_ns": namespace,
                "checkpoint_id": checkpoint_id,
            }
        }
        found = super().get_tuple(config)
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
            checkpoint["channel_values"][name] = _DeltaSnapshot(value)
        type_, blob = self.serde.dumps_typed(checkpoint)
        with self.cursor() as cur:
            cur.execute(
                "UPDATE checkpoints SET type = ?, checkpoint = ? "
                "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                (type_, blob, thread, namespace, checkpoint_id),
            )
        return True

    def _prune_thread(self, thread: str, namespace: str | None = None) -> None:
        """Keep only the latest ``keep`` checkpoints of ``thread`` in ``namespace`` (every
        namespace when None)."""
        assert self.keep is not None
        keep = self.keep

        def latest(rows: list[tuple[str, str, str | None]]) -> set[tuple[str, str]]:
            by_ns: dict[str, list[str]] = {}
            for ns, cid, _ in rows:
                if namespace is None or ns == namespace:
                    by_ns.setdefault(ns, []).append(cid)
            other = {(ns, cid) for ns, cid, _ in rows if ns not in by_ns}
            return other | {(ns, cid) for ns, ids in by_ns.items() for cid in sorted(ids)[-keep:]}

        self._keep_readable(thread, latest)
        with self.cursor() as cur:
            namespaces = (
                [namespace]
                if namespace is not None
                else [
                    row[0]
                    for row in cur.execute(
                        "SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = ?",
                        (thread,),
                    )
                ]
            )
            for ns in namespaces:
                # Writes first, and only those of checkpoints that go: a run's writes may be
                # saved before their checkpoint is (LangGraph's async durability), and with
                # delta channels those writes are the data.
                doomed = (
                    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? "
                    "AND checkpoint_ns = ? AND checkpoint_id NOT IN (SELECT checkpoint_id "
                    "FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                    "ORDER BY checkpoint_id DESC LIMIT ?)"
                )
                for table in ("writes", "checkpoints"):
                    cur.execute(
                        f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = ? "
                        f"AND checkpoint_id IN ({doomed})",
                        (thread, ns) * 3 + (self.keep,),
                    )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = super().get_tuple(config)
        if found is not None:
            self._fill_delta_channels(found)
        return found

    def _oldest_checkpoint(self, thread: str, namespace: str) -> str | None:
        with self.cursor(transaction=False) as cur:
            (oldest,) = cur.execute(
                "SELECT MIN(checkpoint_id) FROM checkpoints "
                "WHERE thread_id = ? AND checkpoint_ns = ?",
                (thread, namespace),
            ).fetchone()
        return None if oldest is None else str(oldest)

    # -- sync: the extended capabilities ------------------------------------------------------

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread to another (replacing the target's
        rows with the same ids)."""
        source, target = str(source_thread_id), str(target_thread_id)
        with self.cursor() as cur:
            cur.execute(
                "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
                "parent_checkpoint_id, type, checkpoint, metadata) "
                "SELECT ?, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, "
                "metadata FROM checkpoints WHERE thread_id = ?",
                (target, source),
            )
            columns = "checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value"
            if self._has_task_path:
                columns += ", task_path"
            cur.execute(
                f"INSERT OR REPLACE INTO writes (thread_id, {columns}) "
                f"SELECT ?, {columns} FROM writes WHERE thread_id = ?",
                (target, source),
            )

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: only the newest checkpoint of each thread and namespace stays
        (with its writes); ``delete``: the threads' checkpoints are all deleted."""
        if strategy not in PRUNE_STRATEGIES:
            raise InvalidInput(
                f"prune: unknown strategy {strategy!r}; use one of {', '.join(PRUNE_STRATEGIES)}"
            )
        if strategy == "delete":
            for thread_id in thread_ids:
                self.delete_thread(thread_id)
            return
        for thread_id in map(str, thread_ids):
            self._keep_readable(thread_id, _newest_of_each_namespace)
        with self.cursor() as cur:
            for thread_id in map(str, thread_ids):
                for table in _TABLES:
                    cur.execute(
                        f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_id NOT IN "
                        "(SELECT MAX(kept.checkpoint_id) FROM checkpoints AS kept "
                        f"WHERE kept.thread_id = ? AND kept.checkpoint_ns = {table}.checkpoint_ns)",
                        (thread_id, thread_id),
                    )

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose metadata names one of ``run_ids``."""
        if not run_ids:
            return
        marks = ", ".join("?" * len(run_ids))
        with self.cursor(transaction=False) as cur:
            doomed = cur.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
                f"WHERE json_extract(CAST(metadata AS TEXT), '$.run_id') IN ({marks})",
                [str(run_id) for run_id in run_ids],
            ).fetchall()
        for thread in {row[0] for row in doomed}:
            going = {(ns, cid) for t, ns, cid in doomed if t == thread}

            def staying(
                rows: list[tuple[str, str, str | None]], going: set[Any] = going
            ) -> set[tuple[str, str]]:
                return {(ns, c) for ns, c, _ in rows} - going

            self._keep_readable(thread, staying)
        with self.cursor() as cur:
            doomed = cur.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
                f"WHERE json_extract(CAST(metadata AS TEXT), '$.run_id') IN ({marks})",
                [str(run_id) for run_id in run_ids],
            ).fetchall()
            for table in _TABLES:
                cur.executemany(
                    f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = ? "
                    "AND checkpoint_id = ?",
                    doomed,
                )
