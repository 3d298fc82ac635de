"""The checkpointer of a PostgreSQL notebook: LangGraph's ``PostgresSaver`` on a pool of
the notebook's database, in the notebook's schema, with the semantics of the SQLite one
(:class:`~.base.SaverSemantics`): every checkpoint kept unless ``keep`` says otherwise,
:class:`~.base.CheckpointPruned` for a pruned id, turns
all or nothing, the async API on a worker thread (so one object serves ``invoke`` and
``ainvoke``, as ``NotebookSaver`` does), ``copy_thread`` and ``delete_for_runs``, and the
delta-channel values of a thread's last read kept for the next (:mod:`.delta_history`,
:mod:`.postgres_history`).

Channel values live in ``checkpoint_blobs`` keyed by version, not by checkpoint: whatever
deletes checkpoints here then deletes the blobs no checkpoint of the thread names any more.
With an encrypting ``serde`` no value is kept inline in the ``checkpoint`` JSON (where
``PostgresSaver`` keeps strings and numbers unserialised): every one goes through the serde.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from psycopg import Cursor
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from ...storage.postgres.setup import plain, setup_connection
from ..private import DeltaSnapshot
from .base import (
    CheckpointPruned,
    DeltaReducer,
    HistoryWalk,
    SaverSemantics,
    TurnMark,
    reseal_typed,
    scrub_channel,
    scrub_checkpoint,
    scrub_metadata,
)
from .delta_history import CachedValues
from .postgres_history import install_epoch, read_epoch, walk_to_cached

if TYPE_CHECKING:
    from ...core.crypto import Cipher

__all__ = [
    "CheckpointPruned",
    "NotebookPostgresSaver",
    "TurnMark",
    "reseal_checkpoints",
    "rewrite_rows",
]

#: The writes pending on the newest checkpoint of each namespace of a thread.
_NEWEST_WRITES = (
    "SELECT w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx FROM checkpoint_writes AS w "
    "WHERE w.thread_id = %s AND w.checkpoint_id = (SELECT MAX(c.checkpoint_id) "
    "FROM checkpoints AS c WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns)"
)
#: Blobs of a thread that no checkpoint of it names (left by deleted checkpoints).
_UNUSED_BLOBS = (
    "DELETE FROM checkpoint_blobs AS b WHERE b.thread_id = %s AND NOT EXISTS ("
    "SELECT 1 FROM checkpoints AS c WHERE c.thread_id = b.thread_id "
    "AND c.checkpoint_ns = b.checkpoint_ns "
    "AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)"
)
#: The tables whose ``blob`` goes through the serde (sealed when encrypted), by their keys.
SERDE_TABLES: Final = {
    "checkpoint_blobs": ("thread_id", "checkpoint_ns", "channel", "version"),
    "checkpoint_writes": ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),
}


class _PlainSaver(PostgresSaver):
    """LangGraph's checkpoint migrations without ``CONCURRENTLY`` (see :mod:`.storage.postgres.setup`)."""

    MIGRATIONS = plain(PostgresSaver.MIGRATIONS)


class NotebookPostgresSaver(SaverSemantics, PostgresSaver):
    """``PostgresSaver`` on a connection pool, with the notebook's checkpoint semantics."""

    def __init__(
        self,
        pool: ConnectionPool[Any],
        *,
        keep: int | None = None,
        delta_reducers: Mapping[str, DeltaReducer] | None = None,
    ) -> None:
        """``pool``: autocommit connections with ``dict_row`` rows (see
        :mod:`agent_notebook.langgraph.stores`)."""
        super().__init__(pool)
        self.pool = pool
        self._init_semantics(keep, delta_reducers)
        self._epoch_installed = False
        self._pinned = threading.local()  # the history walk's cursor, on its thread

    def setup(self) -> None:
        """``PostgresSaver``'s tables, and the triggers that tell a rebuilt delta-channel
        value kept from an earlier read is stale (:mod:`.postgres_history`), under the
        schema's setup lock on a connection of their own (:mod:`agent_notebook.storage.postgres.setup`)."""
        with setup_connection(self.pool, "LangGraph's checkpoint tables") as conn:
            _PlainSaver(conn).setup()
            self._epoch_installed = install_epoch(conn)

    @contextmanager
    def _cursor(self, *, pipeline: bool = False) -> Iterator[Cursor[DictRow]]:
        # Inside _history_snapshot (which holds self.lock) LangGraph's own delta read runs
        # on the snapshot's cursor.
        pinned = getattr(self._pinned, "cur", None)
        if pinned is not None:
            yield pinned
            return
        with super()._cursor(pipeline=pipeline) as cur:
            yield cur

    @contextmanager
    def _history_snapshot(self) -> Iterator[tuple[int | None, HistoryWalk]]:
        """The counter and the walk in one REPEATABLE READ transaction."""
        with (
            self.lock,
            self.pool.connection() as conn,
            conn.transaction(),
            conn.cursor(binary=True, row_factory=dict_row) as cur,
        ):
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")

            def walk(
                key: tuple[str, str],
                checkpoint_id: str,
                channels: list[str],
                cached: CachedValues | None,
            ) -> Mapping[str, DeltaChannelHistory]:
                return walk_to_cached(
                    self,
                    cur,
                    thread_id=key[0],
                    checkpoint_ns=key[1],
                    checkpoint_id=checkpoint_id,
                    channels=channels,
                    cached=cached,
                )

            self._pinned.cur = cur
            try:
                yield (read_epoch(cur) if self._epoch_installed else None), walk
            finally:
                self._pinned.cur = None

    # -- the statements of a turn and of pruning ----------------------------------------------

    def mark(self, thread_id: str) -> TurnMark:
        with self._cursor() as cur:
            cur.execute(
                "SELECT MAX(checkpoint_id) AS newest FROM checkpoints WHERE thread_id = %s",
                (thread_id,),
            )
            newest = cur.fetchone()["newest"]  # type: ignore[index]
            cur.execute(_NEWEST_WRITES, (thread_id,))
            writes = [
                (r["checkpoint_ns"], r["checkpoint_id"], r["task_id"], r["idx"])
                for r in cur.fetchall()
            ]
        return TurnMark(thread_id, newest, frozenset(writes))

    def rollback(self, mark: TurnMark) -> None:
        with self._cursor() as cur, cur.connection.transaction():
            for table in ("checkpoints", "checkpoint_writes"):
                cur.execute(
                    f"DELETE FROM {table} WHERE thread_id = %s AND checkpoint_id > %s",
                    (mark.thread_id, mark.newest or ""),
                )
            cur.execute(_UNUSED_BLOBS, (mark.thread_id,))
            if mark.newest is None:
                return
            cur.execute(_NEWEST_WRITES, (mark.thread_id,))
            added = [
                key
                for r in cur.fetchall()
                if (key := (r["checkpoint_ns"], r["checkpoint_id"], r["task_id"], r["idx"]))
                not in mark.writes
            ]
            cur.executemany(
                "DELETE FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = %s "
                "AND checkpoint_id = %s AND task_id = %s AND idx = %s",
                [(mark.thread_id, *key) for key in added],
            )

    def _prune_thread(self, thread: str, namespace: str | None = None) -> None:
        assert self.keep is not None
        keep = self.keep

        def latest(rows: list[tuple[str, str, str | None]]) -> set[tuple[str, str]]:
            kept: set[tuple[str, str]] = set()
            for ns in {r[0] for r in rows}:
                if namespace is None or ns == namespace:
                    ids = sorted((r[1] for r in rows if r[0] == ns), reverse=True)[:keep]
                    kept.update((ns, cid) for cid in ids)
                else:
                    kept.update((ns, r[1]) for r in rows if r[0] == ns)
            return kept

        self._keep_readable(thread, latest)
        with self._cursor() as cur, cur.connection.transaction():
            if namespace is None:
                cur.execute(
                    "SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = %s",
                    (thread,),
                )
                namespaces = [r["checkpoint_ns"] for r in cur.fetchall()]
            else:
                namespaces = [namespace]
            for ns in namespaces:
                cur.execute(
                    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s "
                    "AND checkpoint_ns = %s ORDER BY checkpoint_id DESC OFFSET %s",
                    (thread, ns, self.keep),
                )
                doomed = [r["checkpoint_id"] for r in cur.fetchall()]
                if doomed:
                    self._delete_checkpoints(cur, thread, ns, doomed)
            cur.execute(_UNUSED_BLOBS, (thread,))

    @staticmethod
    def _delete_checkpoints(cur: Any, thread: str, namespace: str, ids: list[str]) -> None:
        for table in ("checkpoints", "checkpoint_writes"):
            cur.execute(
                f"DELETE FROM {table} WHERE thread_id = %s AND checkpoint_ns = %s "
                "AND checkpoint_id = ANY(%s)",
                (thread, namespace, ids),
            )

    def _oldest_checkpoint(self, thread: str, namespace: str) -> str | None:
        with self._cursor() as cur:
            cur.execute(
                "SELECT MIN(checkpoint_id) AS oldest FROM checkpoints "
                "WHERE thread_id = %s AND checkpoint_ns = %s",
                (thread, namespace),
            )
            oldest: str | None = cur.fetchone()["oldest"]  # type: ignore[index]
        return oldest

    # -- the extended capabilities PostgresSaver lacks ----------------------------------------

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, blob and write of one thread to another (replacing the
        target's rows with the same keys)."""
        source, target = str(source_thread_id), str(target_thread_id)
        with self._cursor() as cur, cur.connection.transaction():
            cur.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
                "parent_checkpoint_id, type, checkpoint, metadata) "
                "SELECT %s, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
                "checkpoint, metadata FROM checkpoints WHERE thread_id = %s "
                "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET "
                "parent_checkpoint_id = EXCLUDED.parent_checkpoint_id, type = EXCLUDED.type, "
                "checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata",
                (target, source),
            )
            cur.execute(
                "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, "
                "type, blob) SELECT %s, checkpoint_ns, channel, version, type, blob "
                "FROM checkpoint_blobs WHERE thread_id = %s "
                "ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO UPDATE SET "
                "type = EXCLUDED.type, blob = EXCLUDED.blob",
                (target, source),
            )
            cur.execute(
                "INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, "
                "task_id, task_path, idx, channel, type, blob) "
                "SELECT %s, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, "
                "type, blob FROM checkpoint_writes WHERE thread_id = %s "
                "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE "
                "SET task_path = EXCLUDED.task_path, channel = EXCLUDED.channel, "
                "type = EXCLUDED.type, blob = EXCLUDED.blob",
                (target, source),
            )

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose metadata names one of ``run_ids``."""
        if not run_ids:
            return
        with self._cursor() as cur:
            cur.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
                "WHERE metadata ->> 'run_id' = ANY(%s)",
                ([str(run_id) for run_id in run_ids],),
            )
            found = [
                (r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"]) for r in cur.fetchall()
            ]
        doomed: dict[tuple[str, str], list[str]] = {}
        for thread, ns, cid in found:
            doomed.setdefault((thread, ns), []).append(cid)
        going = {(thread, ns, cid) for thread, ns, cid in found}
        for thread in {thread for thread, _, _ in found}:

            def staying(
                rows: list[tuple[str, str, str | None]], t: str = thread
            ) -> set[tuple[str, str]]:
                return {(ns, cid) for ns, cid, _ in rows if (t, ns, cid) not in going}

            self._keep_readable(thread, staying)
        with self._cursor() as cur, cur.connection.transaction():
            for (thread, ns), ids in doomed.items():
                self._delete_checkpoints(cur, thread, ns, ids)
            for thread in {thread for thread, _ in doomed}:
                cur.execute(_UNUSED_BLOBS, (thread,))

    # -- delta channels: the rows behind SaverSemantics._keep_readable and materialise ------

    def _checkpoint_rows(self, thread: str) -> list[tuple[str, str, str | None]]:
        with self._cursor() as cur:
            cur.execute(
                "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id FROM checkpoints "
                "WHERE thread_id = %s",
                (thread,),
            )
            return [
                (r["checkpoint_ns"], r["checkpoint_id"], r["parent_checkpoint_id"])
                for r in cur.fetchall()
            ]

    def _rewrite_checkpoint(self, found: CheckpointTuple, checkpoint: Checkpoint) -> None:
        # PostgresSaver's put upserts the checkpoint row and stores each DeltaSnapshot as
        # a blob of its channel's version; called on the class, it does not prune again.
        config: RunnableConfig = {"configurable": {**found.config["configurable"]}}
        config["configurable"].pop("checkpoint_id", None)  # put takes it as the parent's
        if found.parent_config is not None:
            parent = found.parent_config["configurable"]["checkpoint_id"]
            config["configurable"]["checkpoint_id"] = parent
        versions = {
            name: checkpoint["channel_versions"][name]
            for name, value in checkpoint["channel_values"].items()
            if isinstance(value, DeltaSnapshot)
        }
        if isinstance(self.serde, EncryptedSerializer):
            self._put_sealed(config, checkpoint, found.metadata, versions)
        else:
            PostgresSaver.put(self, config, checkpoint, found.metadata, versions)

    # -- encryption: nothing inline ------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        if not isinstance(self.serde, EncryptedSerializer):
            return super().put(config, checkpoint, metadata, new_versions)
        return self._put_sealed(config, checkpoint, metadata, new_versions)

    def _put_sealed(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """``PostgresSaver.put`` with every channel value a (sealed) blob: its own put keeps
        strings and numbers in the clear in the checkpoint's JSON. A value whose version did
        not change is a blob already (an older checkpoint put it), unless it was inline."""
        where = config["configurable"]
        thread_id, checkpoint_ns = where["thread_id"], where["checkpoint_ns"]
        values = dict(checkpoint["channel_values"])
        inline = {**checkpoint, "channel_values": {}}
        with self._cursor(pipeline=True) as cur:
            # Primitive values go again whatever their version: one an older checkpoint
            # kept inline (before encryption was turned on) has no blob to be read from.
            versions = checkpoint["channel_versions"]
            if blob_versions := {
                k: new_versions[k] if k in new_versions else versions[k]
                for k, v in values.items()
                if k in new_versions or (_primitive(v) and k in versions)
            }:
                cur.executemany(
                    self.UPSERT_CHECKPOINT_BLOBS_SQL,
                    self._dump_blobs(thread_id, checkpoint_ns, values, blob_versions),
                )
            cur.execute(
                self.UPSERT_CHECKPOINTS_SQL,
                (
                    thread_id,
                    checkpoint_ns,
                    checkpoint["id"],
                    where.get("checkpoint_id"),
                    Jsonb(inline),
                    Jsonb(get_serializable_checkpoint_metadata(config, metadata)),
                ),
            )
        saved: RunnableConfig = {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }
        if self.keep is not None and str(thread_id) not in self._in_turn:
            self._prune_thread(str(thread_id), checkpoint_ns)
        return saved

    # -- redaction -----------------------------------------------------------------------------

    def scrub(self, scrub: Callable[[Any], Any]) -> None:
        """Rewrite every value ``scrub`` changes (it returns its argument unchanged when it
        has nothing to change): channel values and pending writes through the serde, the
        checkpoints' inline values and metadata as JSON."""
        serde = self.serde
        with self._cursor() as cur, cur.connection.transaction():
            cur.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id, checkpoint, metadata "
                "FROM checkpoints FOR UPDATE"
            )
            for r in cur.fetchall():
                checkpoint = scrub_checkpoint(scrub, r["checkpoint"])
                metadata = scrub_metadata(scrub, r["metadata"])
                if checkpoint is r["checkpoint"] and metadata is r["metadata"]:
                    continue
                cur.execute(
                    "UPDATE checkpoints SET checkpoint = %s, metadata = %s WHERE thread_id = %s "
                    "AND checkpoint_ns = %s AND checkpoint_id = %s",
                    (
                        Jsonb(checkpoint),
                        Jsonb(metadata),
                        r["thread_id"],
                        r["checkpoint_ns"],
                        r["checkpoint_id"],
                    ),
                )
            for table, keys in SERDE_TABLES.items():
                cur.execute(
                    f"SELECT {', '.join(keys)}, channel, type, blob FROM {table} FOR UPDATE"
                )
                for r in cur.fetchall():
                    if r["blob"] is None:
                        continue
                    value = serde.loads_typed((r["type"], bytes(r["blob"])))
                    scrubbed = scrub_channel(scrub, r["channel"], value)
                    if scrubbed is value:
                        continue
                    kind, blob = serde.dumps_typed(scrubbed)
                    match = " AND ".join(f"{k} = %s" for k in keys)
                    cur.execute(
                        f"UPDATE {table} SET type = %s, blob = %s WHERE {match}",
                        (kind, blob, *(r[k] for k in keys)),
                    )


# -- key rotation ------------------------------------------------------------------------------


def rewrite_rows(
    pool: ConnectionPool[Any],
    table: str,
    keys: Sequence[str],
    columns: Sequence[str],
    rewrite: Callable[[Any, dict[str, Any]], dict[str, Any] | None],
    batch: int = 500,
) -> int:
    """Walk ``table`` in the order of its key ``keys``, ``batch`` rows at a time, each batch
    in one transaction with its rows locked, and set the columns ``rewrite(connection,
    row)`` returns for a row (None: leave it); it may write more on that connection. A walk killed half way keeps the batches done; run it again and
    ``rewrite`` skips them. Returns how many rows were rewritten."""
    key_list, match = ", ".join(keys), " AND ".join(f"{k} = %s" for k in keys)
    after: tuple[Any, ...] | None = None
    done = 0
    while True:
        with pool.connection() as conn, conn.transaction():
            where = (
                "" if after is None else f"WHERE ({key_list}) > ({', '.join(['%s'] * len(keys))})"
            )
            found: list[dict[str, Any]] = conn.execute(
                f"SELECT {key_list}, {', '.join(columns)} FROM {table} {where} "
                f"ORDER BY {key_list} LIMIT %s FOR UPDATE",
                (*(after or ()), batch),
            ).fetchall()
            if not found:
                return done
            after = tuple(found[-1][k] for k in keys)
            for row in found:
                if changed := rewrite(conn, row):
                    conn.execute(
                        f"UPDATE {table} SET {', '.join(f'{c} = %s' for c in changed)} "
                        f"WHERE {match}",
                        (*changed.values(), *(row[k] for k in keys)),
                    )
                    done += 1


def reseal_checkpoints(pool: ConnectionPool[Any], cipher: Cipher, batch: int = 500) -> int:
    """Seal every checkpoint value and pending write under ``cipher``'s key (a key
    rotation): values sealed with the old key are opened with it, plain ones (written
    before encryption was on) sealed, the checkpoints' inline values moved into sealed
    blobs first. In batches (:func:`rewrite_rows`): run it again to finish a killed one.
    Returns how many rows were sealed again."""
    serde = EncryptedSerializer(cipher.checkpoint_cipher())

    def seal_inline(conn: Any, row: dict[str, Any]) -> dict[str, Any] | None:
        checkpoint = row["checkpoint"]
        values = checkpoint.get("channel_values") or {}
        versions = checkpoint.get("channel_versions") or {}
        moved = {k: v for k, v in values.items() if k in versions}
        if not moved:
            return None
        with conn.cursor() as cur:  # sealed under the new key: the next walk skips them
            cur.executemany(
                "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, "
                "type, blob) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [
                    (
                        row["thread_id"],
                        row["checkpoint_ns"],
                        k,
                        str(versions[k]),
                        *serde.dumps_typed(v),
                    )
                    for k, v in moved.items()
                ],
            )
        kept = {k: v for k, v in values.items() if k not in moved}
        return {"checkpoint": Jsonb({**checkpoint, "channel_values": kept})}

    done = rewrite_rows(
        pool,
        "checkpoints",
        ("thread_id", "checkpoint_ns", "checkpoint_id"),
        ("checkpoint",),
        seal_inline,
        batch,
    )
    for table, keys in SERDE_TABLES.items():

        def reseal(_: Any, row: dict[str, Any], table: str = table) -> dict[str, Any] | None:
            if row["blob"] is None:  # a channel without a value ("empty")
                return None
            where = f"{table} of thread {row['thread_id']}"
            new = reseal_typed(cipher, row["type"], bytes(row["blob"]), where)
            return None if new is None else {"type": new[0], "blob": new[1]}

        done += rewrite_rows(pool, table, keys, ("type", "blob"), reseal, batch)
    return done


def _primitive(value: Any) -> bool:
    """Whether ``PostgresSaver.put`` keeps ``value`` inline in the checkpoint's JSON."""
    return value is None or isinstance(value, str | int | float | bool)
