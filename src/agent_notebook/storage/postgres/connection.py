"""The PostgreSQL backend's connections and transactions: psycopg 3 with a pool.

Writers take a transaction-level advisory lock at the start of the outermost ``atomic()``
block (:func:`writer_lock`), so writes are serialised as on SQLite (``BEGIN IMMEDIATE``)
across every process on the database: a read-modify-write inside ``atomic()`` is never
lost, counters never repeat, and the term statistics stay exact. Nested blocks are
savepoints. The wait for it is bounded by the backend's ``timeout_s`` (then a
:class:`StorageError`, a 503 with ``Retry-After`` from the server), and a process's writers
queue for it one at a time in the process (``_writers``), not each on a pooled connection:
however many writes wait, the pool keeps connections for the reads. Reads outside a transaction take any pooled connection and see what is
committed; a search reads in one snapshot (``_connection(snapshot=True)``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit, urlunsplit

from ...config import PG_POOL_SIZE_ENV
from ...errors import InvalidInput, StorageError
from ..sql.backend import SqlBackend

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

#: The advisory lock class of a notebook's writer lock (the schema's hash is the other key).
WRITER_LOCK: Final = 0x4E42  # "NB"
#: How long a health check waits for a connection, and for its answer.
PING_WAIT_S: Final = 5.0
INSTALL_HINT: Final = "pip install 'agent-notebook[postgres]'"
#: What PostgreSQL says when it has no connection left for a client.
_NO_SLOT: Final = (
    "too many clients",
    "too many connections",
    "remaining connection slots are reserved",
)


def no_connection_left(message: str, where: str, pool_size: int) -> StorageError | None:
    """The error for a server that refused a connection for want of one (its
    ``max_connections`` reached), naming what to change; None for any other refusal."""
    if not any(said in message for said in _NO_SLOT):
        return None
    first = message.splitlines()[0]
    return StorageError(
        f"{where}: PostgreSQL has no connection left ({first}): its max_connections (or a "
        f"role's or database's CONNECTION LIMIT) is reached. Close idle clients, open fewer "
        f"connections ({PG_POOL_SIZE_ENV}{f', now {pool_size} per pool' if pool_size else ''}; "
        "fewer test workers, -n 2) "
        "or raise max_connections in postgresql.conf and restart the server"
    )


def drivers() -> tuple[Any, Any]:
    """psycopg and psycopg_pool, imported only when a Postgres notebook is opened."""
    try:
        import psycopg
        import psycopg_pool
    except ImportError as err:
        raise InvalidInput(f"a postgresql:// notebook needs psycopg 3: {INSTALL_HINT}") from err
    return psycopg, psycopg_pool


def redacted_url(url: str) -> str:
    """``url`` without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    netloc = f"{parts.username}@{host}" if parts.username else host
    return urlunsplit(parts._replace(netloc=netloc))


class PostgresConnection(SqlBackend):
    """The pool of a PostgreSQL notebook (opened by :class:`.backend.PostgresBackend`)."""

    url: str
    timeout_s: float
    pool_size: int
    _schema_name: str | None
    #: This thread's open transaction (``tx``), if any.
    _local: threading.local
    _pool: psycopg_pool.ConnectionPool[Any]
    _error: type[Exception]
    _pool_timeout: type[Exception]
    _psycopg: Any
    #: Held by the thread whose transaction holds (or waits for) the database's writer lock.
    _writers: threading.Lock

    @property
    def location(self) -> str:
        where = redacted_url(self.url)
        return where if self._schema_name is None else f"{where} (schema {self._schema_name})"

    @contextmanager
    def _mapped(self, doing: str) -> Iterator[None]:
        try:
            yield
        except self._pool_timeout as err:
            raise StorageError(
                f"{self.location}: {doing} failed: no database connection free in time ({err}); "
                "the server may be down or every pooled connection busy, retry"
            ) from err
        except self._error as err:
            message = str(err).strip()
            if "string is too long for tsvector" in message:
                raise InvalidInput(
                    "a moment's text has more distinct words than PostgreSQL's full-text "
                    "index holds (1 MB of terms): split it into several moments; nothing "
                    "was changed"
                ) from err
            full = no_connection_left(message, self.location, self.pool_size)
            if full is not None:
                raise full from err
            raise StorageError(f"{self.location}: {doing} failed: {message}") from err

    @contextmanager
    def atomic(self) -> Iterator[None]:
        outer: psycopg.Connection[Any] | None = getattr(self._local, "tx", None)
        if outer is not None:  # nested: a savepoint of the outer transaction
            with self._mapped("transaction"), outer.transaction():
                yield
            return
        deadline = time.monotonic() + self.timeout_s
        if not self._writers.acquire(timeout=self.timeout_s):
            raise self._writer_lock_timeout()
        try:
            with (
                self._mapped("transaction"),
                self._pool.connection(timeout=_left(deadline)) as conn,
                conn.transaction(),
            ):
                try:
                    writer_lock(conn, wait_s=_left(deadline))
                except self._psycopg.errors.LockNotAvailable as err:
                    raise self._writer_lock_timeout() from err
                self._local.tx = conn
                try:
                    yield
                finally:
                    self._local.tx = None
        finally:
            self._writers.release()

    @contextmanager
    def _joined(self) -> Iterator[None]:
        if getattr(self._local, "tx", None) is not None:
            with self._mapped("transaction"):
                yield  # this thread's transaction: no savepoint (a round trip each way)
            return
        with self.atomic():
            yield

    def _writer_lock_timeout(self) -> StorageError:
        return StorageError(
            f"{self.location}: a write waited {self.timeout_s:g} s for the notebook's writer "
            "lock, which another write (of this process or another) holds: nothing was "
            "changed; retry shortly"
        )

    @contextmanager
    def _connection(self, snapshot: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """The open transaction's connection, else a pooled one (with ``snapshot``, inside a
        read-only repeatable-read transaction, so several reads agree)."""
        outer: psycopg.Connection[Any] | None = getattr(self._local, "tx", None)
        if outer is not None:
            yield outer
            return
        with self._pool.connection() as conn:
            if not snapshot:
                yield conn
                return
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield conn

    def _query(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._mapped("read"), self._connection() as conn:
            return conn.execute(statement, params).fetchall()

    def _write(self, statement: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        conn: psycopg.Connection[Any] = self._local.tx  # set: writers run inside atomic()
        return conn.execute(statement, params)

    def _write_many(self, statement: str, params: Sequence[Sequence[Any]]) -> None:
        if params:
            conn: psycopg.Connection[Any] = self._local.tx
            with conn.cursor() as cursor:
                cursor.executemany(statement, params)

    def server_status(self) -> dict[str, object]:
        """The database server, its version and this process's pool, for ``doctor``."""
        stats = self._pool.get_stats()
        version = self._query("SHOW server_version")[0][0]
        return {
            "server": self.location,
            "server version": f"PostgreSQL {version}",
            "pool": f"{stats.get('pool_size', 0)} open, {stats.get('pool_available', 0)} "
            f"idle, at most {stats.get('pool_max', 0)}",
        }

    def ping(self, wait_s: float = PING_WAIT_S) -> None:
        """Ask the database for one row, waiting at most ``wait_s`` for a connection and as
        long for the answer: a StorageError when it cannot (for ``/api/health``)."""
        ms = max(1, int(wait_s * 1000))
        with (
            self._mapped("health check"),
            self._pool.connection(timeout=wait_s) as conn,
            conn.transaction(),
        ):
            conn.execute(f"SET LOCAL statement_timeout = {ms}")
            conn.execute("SELECT 1")

    def close(self) -> None:
        self._pool.close()


def one(conn: psycopg.Connection[Any], statement: str, params: Sequence[Any] = ()) -> Any:
    """The one value ``statement`` selects."""
    row = conn.execute(statement, params).fetchone()
    if row is None:
        raise StorageError(f"{statement!r} selected no row")
    return row[0]


def _left(deadline: float) -> float:
    """The seconds until ``deadline`` (a ``time.monotonic()`` reading), at least a millisecond."""
    return max(0.001, deadline - time.monotonic())


def writer_lock(
    conn: psycopg.Connection[Any], schema_name: str | None = None, wait_s: float | None = None
) -> None:
    """Wait for the writer lock of the notebook in ``schema_name`` (by default the
    connection's schema); it is released when the transaction ends. With ``wait_s``, the
    transaction's ``lock_timeout`` is set to it first: a wait longer than that (for this
    lock, or for any other of the transaction's) raises ``LockNotAvailable``."""
    if wait_s is not None:
        conn.execute(f"SET LOCAL lock_timeout = {max(1, int(wait_s * 1000))}")
    conn.execute(
        "SELECT pg_advisory_xact_lock(%s, hashtext(coalesce(%s, current_schema())))",
        (WRITER_LOCK, schema_name),
    )
