"""The SQLite backend's connections and transactions: one write connection, whose
transaction a thread opens with ``atomic()``, and a read connection for reads outside it.

Writers take the database's write lock at the start of the outermost ``atomic()`` block
(``BEGIN IMMEDIATE``) and wait for it up to ``busy_timeout``; nested blocks are savepoints.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from ...errors import StorageError
from ..sql.backend import SqlBackend

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]


class SqliteConnection(SqlBackend):
    """The connections of a SQLite notebook (opened by :class:`.backend.SqliteBackend`)."""

    path: str
    synchronous: Synchronous
    _conn: sqlite3.Connection
    #: Reads outside a transaction go here (None in memory): WAL lets them see the last
    #: commit while a writer (the embedding worker, say) holds the write connection.
    _reader: sqlite3.Connection | None
    _reader_lock: threading.Lock
    _lock: threading.RLock
    _depth: int
    #: The thread whose transaction is open.
    _owner: int | None
    _savepoints: itertools.count[int]

    @property
    def location(self) -> str:
        return self.path

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection (autocommit), for code that shares the file."""
        return self._conn

    @contextmanager
    def _mapped(self, doing: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as err:
            hint = ""
            if "locked" in str(err) or "busy" in str(err):
                hint = "; another process held the write lock too long, retry"
            raise StorageError(f"{self.path}: {doing} failed: {err}{hint}") from err

    @contextmanager
    def atomic(self) -> Iterator[None]:
        with self._lock, self._mapped("transaction"):
            if self._depth == 0:
                begin, commit, rollback = ["BEGIN IMMEDIATE"], ["COMMIT"], ["ROLLBACK"]
            else:
                name = f"sp_{next(self._savepoints)}"
                begin, commit = [f"SAVEPOINT {name}"], [f"RELEASE {name}"]
                rollback = [f"ROLLBACK TO {name}", f"RELEASE {name}"]
            for statement in begin:
                self._conn.execute(statement)
            self._depth += 1
            self._owner = threading.get_ident()
            try:
                yield
            except BaseException:
                for statement in rollback:
                    self._conn.execute(statement)
                raise
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
            try:
                for statement in commit:
                    self._conn.execute(statement)
            except sqlite3.Error:
                if self._conn.in_transaction and self._depth == 0:
                    self._conn.execute("ROLLBACK")  # never leave a failed commit open
                raise

    @contextmanager
    def _joined(self) -> Iterator[None]:
        if self._depth and self._owner == threading.get_ident():
            with self._mapped("transaction"):
                yield  # this thread's transaction: no savepoint
            return
        with self.atomic():
            yield

    @contextmanager
    def _derived_transaction(self) -> Iterator[None]:
        """A transaction of derived rows only (index upkeep, vectors): at the top level its
        commit does not wait for the disk. In WAL mode ``synchronous = NORMAL`` keeps the
        file consistent; a power cut may lose the last such commits, which are made again
        from the moments. Inside a caller's transaction it commits with that one."""
        with self._lock:
            relax = self._depth == 0 and self.synchronous in ("FULL", "EXTRA")
            if relax:
                self._conn.execute("PRAGMA synchronous = NORMAL")
            try:
                with self.atomic():
                    yield
            finally:
                if relax:
                    self._conn.execute(f"PRAGMA synchronous = {self.synchronous}")

    def _query(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        """Rows of ``statement``: inside this thread's transaction from the write connection
        (it sees what the transaction wrote), else from the read connection, without waiting
        for another thread's transaction."""
        if self._reader is not None and self._owner != threading.get_ident():
            with self._reader_lock, self._mapped("read"):
                return self._reader.execute(statement, params).fetchall()
        with self._lock, self._mapped("read"):
            return self._conn.execute(statement, params).fetchall()

    def _write(self, statement: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self._conn.execute(statement, params)

    def _write_many(self, statement: str, params: Sequence[Sequence[Any]]) -> None:
        self._conn.executemany(statement, params)

    def close(self) -> None:
        with self._lock, self._reader_lock:
            if self._reader is not None:
                self._reader.close()
            self._conn.close()
