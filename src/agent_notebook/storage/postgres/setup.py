"""Start-up migrations in a PostgreSQL notebook's schema (LangGraph's tables, and the lock
helper the notebook's own migrations use too), safe with any number of servers starting
together (issue 28).

Two rules keep servers that start at the same moment from waiting on each other for ever:

* **No wait inside a statement.** The setup lock is taken with ``pg_try_advisory_lock`` in a
  loop with a deadline, each try a statement that returns at once, so a server waiting for
  a peer's setup holds no snapshot meanwhile. A ``pg_advisory_lock`` that blocks is a
  statement with a snapshot: a ``CREATE INDEX CONCURRENTLY`` run by the lock's holder waits
  for that snapshot to end, and it ends only when the holder lets go; PostgreSQL's deadlock
  detector does not see that cycle (the index build waits on a ``virtualxid``).
* **No ``CONCURRENTLY``.** LangGraph's migrations build three indexes of the checkpointer
  and one of the store ``CONCURRENTLY``. Such a build waits for every transaction of the
  *database* with an older snapshot (other notebooks' schemas, peers' requests, a
  long report); here they run as plain ``CREATE INDEX`` (the same statements, that word
  taken out, by position, so LangGraph's version numbers still match). Made at start-up on
  tables made in the same setup, they are empty and the build takes no time; a plain build
  takes a SHARE lock, so on a large table left by an old LangGraph version it blocks writes
  to that one table while it runs (once, at the upgrade), instead of waiting on strangers.

Every wait has a bound (the pool's timeout: ``lock_timeout`` and ``statement_timeout`` on
the setup's own connection, and the lock loop's deadline) and ends in a
:class:`~agent_notebook.errors.StorageError` saying what was waited for and what to do.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

from ...errors import StorageError

__all__ = ["SETUP_LOCK", "plain", "setup_connection", "try_lock"]

#: The advisory lock class of LangGraph's migrations (the schema's hash is the other key).
SETUP_LOCK: Final = 0x4E53  # "NS"
_CONCURRENTLY = re.compile(r"\bCONCURRENTLY\s+", re.IGNORECASE)
#: How often a waiting setup tries the lock again (seconds).
_RETRY_S: Final = 0.05


def plain(migrations: Sequence[str]) -> list[str]:
    """``migrations`` with every ``CREATE INDEX CONCURRENTLY`` made a plain ``CREATE INDEX``
    (see the module's docstring), in the same positions."""
    return [_CONCURRENTLY.sub("", sql) for sql in migrations]


def where(pool: Any) -> str:
    """The pool's database (without a password) and schema, for messages."""
    from .connection import redacted_url

    place = redacted_url(str(pool.conninfo))
    options = str(pool.kwargs.get("options", ""))
    if "search_path=" in options:
        place += f" (schema {options.split('search_path=', 1)[1].split()[0]})"
    return place


def try_lock(conn: Any, key: str, params: Sequence[Any], wait_s: float, waiting_for: str) -> None:
    """Take the session-level advisory lock ``key`` (SQL of its two keys) on ``conn``
    (autocommit), trying until ``wait_s`` has passed; then a StorageError."""
    deadline = time.monotonic() + wait_s
    while True:
        row = conn.execute(f"SELECT pg_try_advisory_lock({key}) AS got", params).fetchone()
        if row[0] if isinstance(row, tuple) else row["got"]:
            return
        if time.monotonic() > deadline:
            raise StorageError(
                f"waited {wait_s:.0f} s for {waiting_for} (another server holds its "
                'PostgreSQL advisory lock): that server may be stuck; find it with "SELECT '
                "pid, query FROM pg_stat_activity JOIN pg_locks USING (pid) WHERE locktype = "
                "'advisory'\", end it (pg_terminate_backend) and start again"
            )
        time.sleep(_RETRY_S)


@contextmanager
def setup_connection(pool: Any, what: str) -> Iterator[Any]:
    """A connection of its own (the pool's settings) holding the schema's setup lock, with
    ``lock_timeout`` and ``statement_timeout`` set to the pool's timeout; closed after.
    psycopg's errors become a StorageError naming ``what`` was being set up."""
    import psycopg

    wait_s = float(pool.timeout)
    place = where(pool)
    try:
        conn = psycopg.connect(
            str(pool.conninfo), connect_timeout=max(1, int(wait_s)), **pool.kwargs
        )
    except psycopg.Error as err:
        raise StorageError(f"{place}: cannot connect to set up {what}: {err}") from err
    try:
        with conn:
            ms = max(1, int(wait_s * 1000))
            conn.execute(f"SET lock_timeout = {ms}")
            conn.execute(f"SET statement_timeout = {ms}")
            try:
                try_lock(
                    conn,
                    "%s, hashtext(current_schema())",
                    (SETUP_LOCK,),
                    wait_s,
                    f"another server's setup of {what}",
                )
            except StorageError as err:
                raise StorageError(f"{place}: {err}") from None
            yield conn  # the lock goes with the connection
    except (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled) as err:
        raise StorageError(
            f"{place}: setting up {what} waited over {wait_s:.0f} s for a lock or a statement "
            f"({str(err).strip()}): a long transaction of another session holds one of the "
            "notebook's tables; end it, or raise the timeout, and start again"
        ) from err
    except psycopg.Error as err:
        raise StorageError(f"{place}: cannot set up {what}: {str(err).strip()}") from err
