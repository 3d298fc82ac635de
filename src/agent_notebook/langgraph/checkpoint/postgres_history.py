"""The PostgreSQL checkpointer's side of :mod:`.delta_history`: plpgsql triggers bumping
``checkpoint_history_epoch`` by that module's rules (:func:`install_epoch`), the counter read
in the walk's REPEATABLE READ transaction (:func:`read_epoch`), and :func:`walk_to_cached`,
LangGraph's two-stage PostgreSQL read starting from the kept value.

PostgreSQL keeps channel values (and the delta channels' snapshots) in ``checkpoint_blobs``
by version, so an UPDATE, DELETE or TRUNCATE there bumps too. A blob inserted is new: a
``put`` stores a checkpoint's new blobs before the checkpoint that names them, and what adds
a blob for a version a checkpoint names already (moving inline values into sealed blobs,
storing a full value into a checkpoint) updates that checkpoint too.

The triggers are per statement, over its transition tables, so that LangGraph's
``INSERT ... ON CONFLICT DO UPDATE`` bumps only when a row was in fact updated, and a bulk
delete bumps once. The two insert rules compare with rows other transactions may be adding
at the same time; each takes a per-thread transaction lock first, so whichever of a write to
``C`` and a checkpoint newer than ``C`` commits second sees the other (a writer at READ
COMMITTED, as LangGraph's autocommit connections are: each statement of the trigger then
reads what was committed before it).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from langgraph.checkpoint.base import DeltaChannelHistory
from langgraph.checkpoint.postgres import PostgresSaver

from ..private import (
    pg_build_writes_history,
    pg_delta_stage1_sql,
    pg_delta_stage2_sql,
    pg_ingest_stage1_page,
    pg_try_advance_walks,
)
from .delta_history import CachedValues

__all__ = ["EPOCH_TRIGGERS", "install_epoch", "read_epoch", "walk_to_cached"]

#: The advisory lock (first key) of the insert rules (second key: the thread).
HISTORY_LOCK: Final = 0x4E48  # "NH"
_TABLES: Final = {"cp": "checkpoints", "w": "checkpoint_writes", "b": "checkpoint_blobs"}
#: (name, table, event, transition table or None, function) of every trigger.
EPOCH_TRIGGERS: Final = tuple(
    [
        (f"checkpoint_history_{t}_{op}", table, op.upper(), kind, "checkpoint_history_changed")
        for t, table in _TABLES.items()
        for op, kind in (("update", "NEW"), ("delete", "OLD"))
    ]
    + [
        (f"checkpoint_history_{t}_truncate", table, "TRUNCATE", None, "checkpoint_history_bump")
        for t, table in _TABLES.items()
    ]
    + [
        ("checkpoint_history_cp_insert", "checkpoints", "INSERT", "NEW", "checkpoint_history_cp"),
        (
            "checkpoint_history_w_insert",
            "checkpoint_writes",
            "INSERT",
            "NEW",
            "checkpoint_history_w",
        ),
    ]
)

_BUMP = "UPDATE checkpoint_history_epoch SET n = n + 1 WHERE id = 0;"
# Rows inserted into `checkpoints` are in the table when an AFTER trigger looks: "not newer
# than every one" is then "some other is newer" (the same id would have conflicted).
_NEWER_THAN = """
    PERFORM pg_advisory_xact_lock({lock}, hashtext(t.thread_id))
        FROM (SELECT DISTINCT thread_id FROM changed ORDER BY thread_id) AS t;
    IF EXISTS (SELECT 1 FROM changed AS a JOIN checkpoints AS c
               ON c.thread_id = a.thread_id AND c.checkpoint_ns = a.checkpoint_ns
               AND c.checkpoint_id > a.checkpoint_id) THEN {bump} END IF;"""
_FUNCTIONS: Final = {
    "checkpoint_history_bump": _BUMP,
    "checkpoint_history_changed": f"IF EXISTS (SELECT 1 FROM changed) THEN {_BUMP} END IF;",
    # Separate functions for the two tables: a plpgsql plan is cached per function.
    "checkpoint_history_cp": _NEWER_THAN.format(lock=HISTORY_LOCK, bump=_BUMP),
    "checkpoint_history_w": _NEWER_THAN.format(lock=HISTORY_LOCK, bump=_BUMP),
}

_EPOCH_TABLE = (
    "CREATE TABLE IF NOT EXISTS checkpoint_history_epoch ("
    "id integer PRIMARY KEY CHECK (id = 0), n bigint NOT NULL)"
)
_COUNT_TRIGGERS = (
    "SELECT count(*) AS n FROM pg_trigger WHERE tgenabled <> 'D' AND tgname = ANY(%s) "
    "AND tgrelid IN (to_regclass('checkpoints'), to_regclass('checkpoint_writes'), "
    "to_regclass('checkpoint_blobs'))"
)
_TRIGGER_NAMES: Final = [name for name, *_ in EPOCH_TRIGGERS]


def install_epoch(conn: Any) -> bool:
    """Create the counter, its functions and triggers in the schema unless all are there,
    in one transaction on ``conn`` (the setup's: it holds the schema's setup lock, and its
    ``lock_timeout`` bounds the waits here). False when this role cannot (then nothing is
    kept: :func:`read_epoch`)."""
    import psycopg

    try:
        with conn.transaction():  # no lock of its own: the caller holds the setup lock
            conn.execute(_EPOCH_TABLE)
            conn.execute(
                "INSERT INTO checkpoint_history_epoch (id, n) VALUES (0, 0) ON CONFLICT DO NOTHING"
            )
            found = conn.execute(_COUNT_TRIGGERS, (_TRIGGER_NAMES,)).fetchone()
            if _count(found) == len(EPOCH_TRIGGERS):
                return True
            for name, body in _FUNCTIONS.items():
                # The schema's tables whichever search_path the writer has.
                conn.execute(
                    f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql "
                    f"SET search_path FROM CURRENT AS $$ BEGIN {body} RETURN NULL; END $$"
                )
            replace = conn.info.server_version >= 140000
            for name, table, event, kind, function in EPOCH_TRIGGERS:
                if not replace:
                    conn.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
                referencing = f"REFERENCING {kind} TABLE AS changed " if kind else ""
                conn.execute(
                    f"CREATE {'OR REPLACE ' if replace else ''}TRIGGER {name} "
                    f"AFTER {event} ON {table} {referencing}"
                    f"FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
                )
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction):
        return False
    return True


def read_epoch(cur: Any) -> int | None:
    """The counter the triggers bump, read on ``cur`` (in the walk's transaction); None
    without all its triggers enabled: a value kept then could go stale unseen."""
    cur.execute(_COUNT_TRIGGERS, (_TRIGGER_NAMES,))
    if _count(cur.fetchone()) != len(EPOCH_TRIGGERS):
        return None
    cur.execute("SELECT n FROM checkpoint_history_epoch WHERE id = 0")
    row = cur.fetchone()
    return None if row is None else int(row["n"])


def _count(row: Any) -> int:
    return int(row["n"] if isinstance(row, Mapping) else row[0])


def walk_to_cached(
    saver: PostgresSaver,
    cur: Any,
    *,
    thread_id: str,
    checkpoint_ns: str,
    checkpoint_id: str,
    channels: Sequence[str],
    cached: CachedValues | None,
) -> Mapping[str, DeltaChannelHistory]:
    """``PostgresSaver.get_delta_channel_history`` for ``checkpoint_id`` on ``cur``, reading
    only the checkpoints from the cached one to it: the walk from the target up its parents
    stops at the cached checkpoint (or at a snapshot before it), whose value seeds the
    replay of its writes and those after. When the cached checkpoint is not an ancestor,
    LangGraph's full read (``saver._cursor`` must yield ``cur`` meanwhile)."""
    config = {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }
    if cached is None or cached.checkpoint_id > checkpoint_id:
        return saver.get_delta_channel_history(config=config, channels=channels)  # type: ignore[arg-type]
    channels = list(channels)
    since = cached.checkpoint_id
    cur.execute(
        pg_delta_stage1_sql(channels)
        + " AND checkpoint_id >= %s AND checkpoint_id <= %s ORDER BY checkpoint_id DESC",
        [
            *(ch for ch in channels for _ in range(4)),
            thread_id,
            checkpoint_ns,
            since,
            checkpoint_id,
        ],
    )
    parent_of: dict[str, str | None] = {}
    versions: list[dict[str, str | None]] = [{} for _ in channels]
    has_blob: list[dict[str, bool]] = [{} for _ in channels]
    inline: list[dict[str, Any]] = [{} for _ in channels]
    pg_ingest_stage1_page(saver, cur.fetchall(), channels, parent_of, versions, has_blob, inline)
    for i in range(len(channels)):  # the walk passes the cached checkpoint's own snapshot
        has_blob[i][since], inline[i][since] = False, None
    chain_by_ch: dict[str, list[str]] = {ch: [] for ch in channels}
    seed_ver_by_ch: dict[str, str | None] = {ch: None for ch in channels}
    seed_inline_by_ch: dict[str, Any] = {}
    seeded: set[str] = set()
    pg_try_advance_walks(
        saver,
        checkpoint_id,
        channels,
        parent_of,
        versions,
        has_blob,
        inline,
        chain_by_ch,
        seed_ver_by_ch,
        seed_inline_by_ch,
        {},
        seeded,
    )
    from_cache = [ch for ch in channels if ch not in seeded]
    if any(since not in chain_by_ch[ch] for ch in from_cache):  # not an ancestor
        return saver.get_delta_channel_history(config=config, channels=channels)  # type: ignore[arg-type]
    for ch in from_cache:  # ids out of order could walk on past it
        chain_by_ch[ch] = chain_by_ch[ch][: chain_by_ch[ch].index(since) + 1]
    with_chain = [ch for ch in channels if chain_by_ch[ch]]
    with_seed = [ch for ch in channels if seed_ver_by_ch[ch] is not None]
    rows: list[Any] = []  # LangGraph's stage-2 rows
    if sql := pg_delta_stage2_sql(channels_with_chain=with_chain, channels_with_seed=with_seed):
        params: list[Any] = []
        for ch in with_chain:
            params.extend([thread_id, checkpoint_ns, ch, chain_by_ch[ch]])
        for ch in with_seed:
            params.extend([thread_id, checkpoint_ns, ch, seed_ver_by_ch[ch]])
        cur.execute(sql, params)
        rows = cur.fetchall()
    histories = pg_build_writes_history(
        saver,
        channels=channels,
        chain_by_ch=chain_by_ch,
        seed_ver_by_ch=seed_ver_by_ch,
        seed_inline_by_ch=seed_inline_by_ch,
        stage2_rows=rows,
    )
    for ch in from_cache:
        histories[ch]["seed"] = copy.copy(cached.values[ch])
    return histories
