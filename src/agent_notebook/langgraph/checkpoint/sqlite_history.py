"""The SQLite checkpointer's side of :mod:`.delta_history`: the triggers that bump
``checkpoint_history_epoch`` (:data:`HISTORY_EPOCH_DDL`, the rules are that module's), the
counter read in the walk's read transaction, and :func:`walk_to_cached`, LangGraph's
SQLite walk stopping at the kept value.
"""

from __future__ import annotations

import copy
import sqlite3
from collections.abc import Sequence
from typing import Any, cast

from langgraph.checkpoint.base import DeltaChannelHistory

from ..private import (
    SQLITE_DELTA_STAGE1_SQL,
    sqlite_delta_stage2_sql,
    sqlite_delta_writes_history,
    sqlite_step_walk_with_row,
)
from .delta_history import CachedValues

__all__ = [
    "HISTORY_EPOCH_DDL",
    "install_epoch",
    "read_epoch",
    "walk_to_cached",
]

_BUMP = "BEGIN UPDATE checkpoint_history_epoch SET n = n + 1; END;"
HISTORY_EPOCH_DDL = f"""
CREATE TABLE IF NOT EXISTS checkpoint_history_epoch (
    id INTEGER PRIMARY KEY CHECK (id = 0), n INTEGER NOT NULL);
INSERT OR IGNORE INTO checkpoint_history_epoch (id, n) VALUES (0, 0);
CREATE TRIGGER IF NOT EXISTS checkpoint_history_cp_update AFTER UPDATE ON checkpoints {_BUMP}
CREATE TRIGGER IF NOT EXISTS checkpoint_history_cp_delete AFTER DELETE ON checkpoints {_BUMP}
CREATE TRIGGER IF NOT EXISTS checkpoint_history_w_update AFTER UPDATE ON writes {_BUMP}
CREATE TRIGGER IF NOT EXISTS checkpoint_history_w_delete AFTER DELETE ON writes {_BUMP}
CREATE TRIGGER IF NOT EXISTS checkpoint_history_cp_insert BEFORE INSERT ON checkpoints
WHEN EXISTS (SELECT 1 FROM checkpoints AS c WHERE c.thread_id = NEW.thread_id
    AND c.checkpoint_ns = NEW.checkpoint_ns AND c.checkpoint_id >= NEW.checkpoint_id)
{_BUMP}
CREATE TRIGGER IF NOT EXISTS checkpoint_history_w_insert BEFORE INSERT ON writes
WHEN EXISTS (SELECT 1 FROM checkpoints AS c WHERE c.thread_id = NEW.thread_id
    AND c.checkpoint_ns = NEW.checkpoint_ns AND c.checkpoint_id > NEW.checkpoint_id)
{_BUMP}
"""

#: The schema objects :data:`HISTORY_EPOCH_DDL` creates.
EPOCH_OBJECTS = frozenset(
    {"checkpoint_history_epoch"}
    | {f"checkpoint_history_{t}_{op}" for t in ("cp", "w") for op in ("update", "delete", "insert")}
)


def install_epoch(conn: sqlite3.Connection) -> None:
    """Create the counter and its triggers unless they are there; on a database this
    connection cannot write, leave it without (then nothing is kept: :func:`read_epoch`)."""
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    if names >= EPOCH_OBJECTS:
        return
    try:
        conn.executescript(HISTORY_EPOCH_DDL)
    except sqlite3.OperationalError:  # read-only: read as LangGraph does, every time
        if conn.in_transaction:
            conn.rollback()


def read_epoch(cur: sqlite3.Cursor) -> int | None:
    """The counter the triggers bump; None without it (or without all its triggers): a
    value kept then could go stale unseen, so none is."""
    found = cur.execute(
        f"SELECT count(*) FROM sqlite_master WHERE name IN ({', '.join('?' * len(EPOCH_OBJECTS))})",
        sorted(EPOCH_OBJECTS),
    ).fetchone()
    if found[0] != len(EPOCH_OBJECTS):
        return None
    row = cur.execute("SELECT n FROM checkpoint_history_epoch WHERE id = 0").fetchone()
    return int(row[0]) if row else None


def walk_to_cached(
    cur: sqlite3.Cursor,
    *,
    serde: Any,
    has_task_path: bool,
    thread_id: str,
    checkpoint_ns: str,
    checkpoint_id: str,
    channels: Sequence[str],
    cached: CachedValues | None,
) -> dict[str, DeltaChannelHistory]:
    """``SqliteSaver.get_delta_channel_history`` for checkpoint ``checkpoint_id``, whose walk
    up the ancestors stops at the cached checkpoint when it meets it: the cached value is
    the seed, the writes of it and of the checkpoints after it are replayed."""
    chain_by_ch: dict[str, list[str]] = {ch: [] for ch in channels}
    seed_val_by_ch: dict[str, Any] = {}
    walk_state: dict[str, Any] = {}
    seeded: set[str] = set()
    cur.execute(
        SQLITE_DELTA_STAGE1_SQL, (thread_id, checkpoint_ns, checkpoint_id, thread_id, checkpoint_ns)
    )
    for cid, type_tag, blob in cur:
        if (
            cached is not None
            and cid == cached.checkpoint_id
            and walk_state.get("started")
            and cid not in walk_state["walked"]
        ):
            for ch in walk_state["active"]:
                chain_by_ch[ch].append(cid)
                seed_val_by_ch[ch] = copy.copy(cached.values[ch])
                seeded.add(ch)
            break
        if sqlite_step_walk_with_row(
            cid=cid,
            type_tag=type_tag,
            blob=blob,
            target_id=checkpoint_id,
            serde=serde,
            chain_by_ch=chain_by_ch,
            seed_val_by_ch=seed_val_by_ch,
            walk_state=walk_state,
            seeded=seeded,
            channels=channels,
        ):
            break
    with_chain = [ch for ch in channels if chain_by_ch[ch]]
    stage2_sql = sqlite_delta_stage2_sql(
        has_task_path=has_task_path, chain_lens=[len(chain_by_ch[ch]) for ch in with_chain]
    )
    rows: list[tuple[str, str, str, int, str, bytes, str]] = []
    if stage2_sql:
        params: list[Any] = []
        for ch in with_chain:
            params.extend([thread_id, checkpoint_ns, ch, *chain_by_ch[ch]])
        rows = cast(
            "list[tuple[str, str, str, int, str, bytes, str]]",
            cur.execute(stage2_sql, params).fetchall(),
        )
    return sqlite_delta_writes_history(
        channels=channels,
        chain_by_ch=chain_by_ch,
        seed_val_by_ch=seed_val_by_ch,
        seeded=seeded,
        stage2_rows=rows,
        serde=serde,
    )
