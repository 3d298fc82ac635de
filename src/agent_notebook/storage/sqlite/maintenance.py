"""The SQLite backend's upkeep of its files: the write-ahead log folded into the database
file between chat turns, and the purge that leaves no removed text in any page.

:func:`vacuum` and :func:`database_file` serve the other SQLite files of a notebook too
(LangGraph's store and checkpoints beside it).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .connection import SqliteConnection

#: :meth:`SqliteMaintenance.fold_log` checkpoints the log on every this many calls (a chat
#: turn adds some 40 pages to it; SQLite's own checkpoint runs in the commit that passes
#: 1,000).
FOLD_LOG_EVERY = 8


class SqliteMaintenance(SqliteConnection):
    """The log's checkpoints and the purge after a redaction."""

    _fold_calls: int

    def fold_log(self) -> None:
        """Every ``FOLD_LOG_EVERY`` calls (after chat turns), copy the write-ahead log into
        the database file (a PASSIVE checkpoint: it waits for no reader or writer), so that
        the log stays short of the 1,000 pages at which SQLite's own checkpoint runs in the
        commit that passes them, a chat turn's. The next write starts the log over."""
        if self._reader is None:  # in memory: no log
            return
        self._fold_calls += 1
        if self._fold_calls % FOLD_LOG_EVERY:
            return
        with self._reader_lock, self._mapped("log checkpoint"):
            self._reader.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def purge(self) -> None:
        # secure_delete zeroes what the statements below free; VACUUM then rewrites every
        # page and the TRUNCATE checkpoints empty the WAL, which still holds old pages.
        self.settle()
        with self._lock, self._mapped("purge"):
            self._conn.execute("PRAGMA secure_delete = ON")
            with self.atomic():
                self._conn.execute("INSERT INTO moments_fts (moments_fts) VALUES ('optimize')")
                self._conn.execute("DELETE FROM term_docs WHERE docs <= 0")
                self._conn.execute(
                    "DELETE FROM concepts WHERE id NOT IN (SELECT concept_id FROM "
                    "concept_moments) AND id NOT IN (SELECT concept_id FROM archived_concepts)"
                )
            vacuum(self._conn)


def database_file(conn: sqlite3.Connection) -> Path | None:
    """The file of ``conn``'s main database (None in memory)."""
    rows = conn.execute("PRAGMA database_list").fetchall()
    main = next((file for _, name, file in rows if name == "main"), "")
    return Path(main) if main else None


def vacuum(conn: sqlite3.Connection) -> None:
    """Rewrite every page of ``conn``'s file and empty its WAL, which still holds old pages
    (``secure_delete`` zeroes what is freed meanwhile)."""
    conn.execute("PRAGMA secure_delete = ON")
    if conn.in_transaction:
        conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
