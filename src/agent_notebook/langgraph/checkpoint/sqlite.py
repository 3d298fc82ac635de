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
* Checkpoint and write values are stored deflated (:mod:`.codec`, tagged
  ``msgpack.z2``, ``msgpack.z1`` before); rows written before read as they are.
* :meth:`NotebookSaver.turn` makes one run on a thread all or nothing: when it raises, the
  checkpoints and writes it added are deleted again, so a failed chat turn leaves the
  thread's checkpoints exactly as they were (and pruning waits for the turn to succeed).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.base import Checkpoint, CheckpointTuple, DeltaChannelHistory
from langgraph.checkpoint.sqlite import SqliteSaver

from ...errors import InvalidInput
from .base import (
    CheckpointPruned,
    DeltaReducer,
    HistoryWalk,
    SaverSemantics,
    TurnMark,
    last_write,
    newest_of_each_namespace,
)
from .codec import CompressedSerializer
from .delta_history import CachedValues
from .sqlite_history import install_epoch, read_epoch, walk_to_cached

__all__ = ["CheckpointPruned", "NotebookSaver", "TurnMark", "last_write"]

PRUNE_STRATEGIES = ("keep_latest", "delete")
_TABLES = ("checkpoints", "writes")
#: The writes pending on the newest checkpoint of each namespace of a thread.
_NEWEST_WRITES = (
    "SELECT w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx FROM writes AS w "
    "WHERE w.thread_id = ? AND w.checkpoint_id = (SELECT MAX(c.checkpoint_id) "
    "FROM checkpoints AS c WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns)"
)


class NotebookSaver(SaverSemantics, SqliteSaver):
    """``SqliteSaver`` with async methods, optional pruning and the extended capabilities
    (what is not SQL here is :class:`~agent_notebook.langgraph.checkpoint.base.SaverSemantics`)."""

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
        self.serde = CompressedSerializer(self.serde)  # plain rows written before read too
        self._init_semantics(keep, delta_reducers)

    def setup(self) -> None:
        """``SqliteSaver``'s tables, and the triggers that tell a rebuilt delta-channel
        value kept from an earlier read is stale (:mod:`.sqlite_history`)."""
        if self.is_setup:
            return
        super().setup()
        install_epoch(self.conn)

    def get_next_version(self, current: str | int | None, channel: None) -> str:
        """``SqliteSaver``'s versions (32 zero-padded digits) without their random
        fraction: it keeps versions apart where values are stored by version (LangGraph's
        in-memory and PostgreSQL savers); here each checkpoint holds its own values. A
        version without it sorts above the older ones with it, so old threads go on."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(current.split(".")[0])
        return f"{number + 1:032}"

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

    # -- delta channels: the rows behind SaverSemantics._keep_readable and materialise ------

    @contextmanager
    def _history_snapshot(self) -> Iterator[tuple[int | None, HistoryWalk]]:
        """The counter and the walk in one read transaction (:mod:`.sqlite_history`)."""
        with self.cursor(transaction=False) as cur:
            began = not self.conn.in_transaction
            if began:  # the counter and the rows read in one snapshot
                cur.execute("BEGIN")
            try:

                def walk(
                    key: tuple[str, str],
                    checkpoint_id: str,
                    channels: list[str],
                    cached: CachedValues | None,
                ) -> dict[str, DeltaChannelHistory]:
                    return walk_to_cached(
                        cur,
                        serde=self.serde,
                        has_task_path=self._has_task_path,
                        thread_id=key[0],
                        checkpoint_ns=key[1],
                        checkpoint_id=checkpoint_id,
                        channels=channels,
                        cached=cached,
                    )

                yield read_epoch(cur), walk
            finally:
                if began:
                    cur.execute("COMMIT")

    def _checkpoint_rows(self, thread: str) -> list[tuple[str, str, str | None]]:
        with self.cursor(transaction=False) as cur:
            return [
                (ns, cid, parent)
                for ns, cid, parent in cur.execute(
                    "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id FROM checkpoints "
                    "WHERE thread_id = ?",
                    (thread,),
                )
            ]

    def _rewrite_checkpoint(self, found: CheckpointTuple, checkpoint: Checkpoint) -> None:
        where = found.config["configurable"]
        type_, blob = self.serde.dumps_typed(checkpoint)
        with self.cursor() as cur:
            cur.execute(
                "UPDATE checkpoints SET type = ?, checkpoint = ? "
                "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                (type_, blob, where["thread_id"], where["checkpoint_ns"], where["checkpoint_id"]),
            )

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
            self._keep_readable(thread_id, newest_of_each_namespace)
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
