"""The PostgreSQL backend's maintenance: a lock that admits one maintenance run
(compaction, key rotation) per notebook across every server, and the purge after a
redaction that rewrites the tables so no dead row of old text stays in their files.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from ...errors import Conflict
from .connection import PostgresConnection, one

if TYPE_CHECKING:
    import psycopg

#: The advisory lock class of maintenance runs (compaction, key rotation), and how long a
#: second run waits for the first before it gives up.
MAINTENANCE_LOCK: Final = 0x4E4D  # "NM"
MAINTENANCE_WAIT_S: Final = 5.0
#: How long a purge waits for the transactions that may still see the removed rows.
PURGE_WAIT_S: Final = 30.0
#: The tables a purge rewrites: every one that held a moment's words.
PURGED_TABLES: Final = (
    "moments",
    "term_docs",
    "concepts",
    "concept_moments",
    "moment_vectors",
    "archived",
    "archived_concepts",
    "sessions",
)
log = logging.getLogger(__name__)


class PostgresMaintenance(PostgresConnection):
    """The maintenance lock and the purge."""

    @contextmanager
    def maintenance_lock(self, name: str, wait_s: float = MAINTENANCE_WAIT_S) -> Iterator[None]:
        """A session-level advisory lock, on a connection kept for the block: one holder
        per notebook (schema) and ``name`` across every server; a holder that dies frees it
        with its connection. Tried until ``wait_s`` has passed, then a clear Conflict."""
        key = "hashtext(coalesce(%s, current_schema()) || ':' || %s)"
        params = (MAINTENANCE_LOCK, self._schema_name, name)
        with self._mapped("maintenance lock"):
            conn = self._pool.getconn()
        try:
            with self._mapped("maintenance lock"):
                deadline = time.monotonic() + wait_s
                while not one(conn, f"SELECT pg_try_advisory_lock(%s, {key})", params):
                    if time.monotonic() > deadline:
                        raise Conflict(
                            f"{self.location}: another process is running {name} on this "
                            "notebook (it holds the database's lock); retry when it is done"
                        )
                    time.sleep(0.05)
            try:
                yield
            finally:
                with self._mapped("maintenance unlock"):
                    conn.execute(f"SELECT pg_advisory_unlock(%s, {key})", params)
        finally:
            self._pool.putconn(conn)

    def purge(self) -> None:
        """Drop what no row uses, then ``VACUUM FULL`` the tables that held text: each is
        rewritten into new files, so no dead row of old text stays in the database's
        files (it is still in the WAL and in backups: see docs/storage.md). The rewrite locks
        each table for its length: run it when few servers write."""
        with self.atomic():
            self._write("DELETE FROM term_docs WHERE docs <= 0")
            self._write(
                "DELETE FROM concepts WHERE id NOT IN (SELECT concept_id FROM concept_moments) "
                "AND id NOT IN (SELECT concept_id FROM archived_concepts)"
            )
        with self._mapped("purge"), self._pool.connection() as conn:
            self._wait_for_older_transactions(conn)
            for table in PURGED_TABLES:
                conn.execute(f"VACUUM (FULL, ANALYZE) {table}")

    def _wait_for_older_transactions(
        self, conn: psycopg.Connection[Any], wait_s: float = PURGE_WAIT_S
    ) -> None:
        """``VACUUM FULL`` copies a deleted row that a running transaction may still see:
        wait (up to ``wait_s``) until every transaction that began before now has ended:
        any that holds a snapshot in this database (another server's read, an autovacuum
        ``ANALYZE``), and any with a transaction id in the cluster (PostgreSQL keeps rows
        deleted after the oldest running one). Only sessions this role may see are counted
        in the first; a replication slot's or a standby's hold is not waited for."""
        older = (
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND xact_start < %s "
            "AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)"
        )
        started = one(conn, "SELECT clock_timestamp()")
        newest = str(one(conn, "SELECT pg_current_xact_id()::text"))  # after every delete
        before = "SELECT pg_snapshot_xmin(pg_current_snapshot()) <= %s::xid8"
        deadline = time.monotonic() + wait_s
        while int(one(conn, older, (started,))) > 0 or one(conn, before, (newest,)):
            if time.monotonic() > deadline:
                log.warning(
                    "%s: transactions older than the redaction still run after %.0f s; rows "
                    "they may see stay in the files until 'VACUUM FULL' runs again",
                    self.location,
                    wait_s,
                )
                return
            time.sleep(0.05)
