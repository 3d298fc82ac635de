"""The SQLite backend, the embedded default: one file, WAL, real transactions, FTS5.

Its parts: the connections and transactions (:mod:`.connection`), the derived indexes and
the full-text search (:mod:`.fulltext`), the log and the purge (:mod:`.maintenance`), and
what it shares with PostgreSQL (:mod:`..sql`). The file is created owner-only before SQLite
opens it, and SQLite gives its ``-wal`` and ``-shm`` files the database file's permissions.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.files import ensure_private_dir, ensure_private_file, register_live_database
from ...model import ArchiveEntry, Moment
from ..base import Activity, Capabilities
from ..sql.dialect import SQLITE
from ..sql.reads import SqlReads
from ..sql.rotation import SqlKeyRotation
from ..sql.writes import SqlWrites
from . import schema
from .connection import Synchronous
from .fulltext import SqliteFullText
from .maintenance import SqliteMaintenance

if TYPE_CHECKING:
    from ...core.crypto import Cipher


class SqliteBackend(SqliteFullText, SqliteMaintenance, SqlKeyRotation, SqlWrites, SqlReads):
    _dialect = SQLITE
    _upsert_moment = schema.UPSERT_MOMENT
    _upsert_archived = schema.UPSERT_ARCHIVED
    _select_briefs = schema.SELECT_BRIEFS
    _vector_model = f"model_id = {schema.MODEL_ID}"
    _newest_rows = (("moments", "rowid"), ("sessions", "rowid"))
    capabilities = Capabilities(
        name="sqlite",
        crash_atomic=True,
        multi_process=True,
        persistent=True,
        native_full_text=True,
        langgraph_tables="own_file",
        encrypts_at_rest=True,
    )

    def __init__(
        self,
        path: Path | str,
        *,
        synchronous: Synchronous = "FULL",
        busy_timeout_s: float = 60.0,
        cipher: Cipher | None = None,
    ) -> None:
        self.path = str(path)
        self.synchronous = synchronous
        self.cipher = cipher  # encryption at rest: see ``sealed``
        self._lock = threading.RLock()
        self._depth = 0
        self._owner = None
        self._savepoints = itertools.count()
        self._reader = None
        self._reader_lock = threading.Lock()
        self._fold_calls = 0
        self._rankings = {}
        if self.path == ":memory:":
            self.capabilities = replace(self.capabilities, persistent=False, multi_process=False)
        else:
            ensure_private_dir(Path(self.path).parent)
            ensure_private_file(Path(self.path))
        with self._mapped("open"):
            self._conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_s
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(f"PRAGMA synchronous = {synchronous}")
            self._migrate()
            if self.path != ":memory:":
                register_live_database(Path(self.path))
                self._reader = sqlite3.connect(
                    self.path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_s
                )
                self._reader.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        self._check_sealing()

    def _migrate(self) -> None:
        with self.atomic():
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            for number, statements in enumerate(schema.MIGRATIONS[version:], start=version + 1):
                for statement in statements:
                    self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {number}")

    # -- moments ----------------------------------------------------------------------------

    def put_moments(self, moments: Sequence[Moment]) -> None:
        """New moments above the indexed ones are written alone (their index rows come with
        the next :meth:`settle`); replacing a moment, or writing one below that mark (an
        import), settles first and keeps the indexes in step at once."""
        if not moments:
            return
        with self.atomic():
            replaced = self._moments_by_num([m.number for m in moments])
            through = self._indexed_through()
            inline = bool(replaced) or min(m.number for m in moments) <= through
            if inline:  # every stored moment indexed, so an old version's rows can go
                through = self._index_pending()
            self._conn.executemany(schema.UPSERT_MOMENT, [self._moment_row(m) for m in moments])
            if inline:
                self._conn.executemany(  # updated rows are re-indexed by their trigger
                    "INSERT INTO moments_fts (rowid, text) SELECT num, text FROM moments "
                    "WHERE num = ?",
                    [(m.number,) for m in moments if m.number not in replaced],
                )
                self._index_terms(moments, replaced)
                self._index_concepts(moments, replaced)
                top = max(through, *(m.number for m in moments))
                self._conn.execute("UPDATE upkeep SET indexed_through = ?", (top,))
            self._index_fact_keys(moments, replaced)
            texts = {m.number: m.content.text for m in moments}
            self._conn.executemany(  # a vector describes the text it was made from
                "DELETE FROM moment_vectors WHERE num = ?",
                [(num,) for num, old in replaced.items() if old.content.text != texts[num]],
            )

    def add_moments(self, moments: Sequence[Moment]) -> None:
        """New moments are numbered above every stored one, so above the indexed ones: the
        rows alone (their index rows come with the next :meth:`settle`), no read first."""
        if not moments:
            return
        with self._joined():
            self._conn.executemany(schema.INSERT_MOMENT, [self._moment_row(m) for m in moments])
            self._index_fact_keys(moments, {})

    def _remove_moments(self, nums: Sequence[int]) -> None:
        self._index_pending()  # so every moment removed has its index rows to take out
        super()._remove_moments(nums)

    def session_activity_after(self, session_id: str, after: int) -> list[Activity]:
        if self.cipher is not None:  # sealed text and bodies: read through the moments
            return super().session_activity_after(session_id, after)
        rows = self._query(  # read in SQL: no moment is parsed
            "SELECT num, ts_us, text FROM moments WHERE session_id = ? AND num > ? "
            "AND json_type(body, '$.rollup') IS NULL ORDER BY num",
            (session_id, after),
        )
        return [Activity(num, schema.from_us(us), text) for num, us, text in rows]

    # -- text vectors -----------------------------------------------------------------------

    def put_vectors(self, model: str, vectors: Sequence[tuple[int, str, bytes]]) -> None:
        # In number order: rows inserted out of order split the table's pages half full (the
        # embedder takes a batch shortest text first), a fifth more bytes per vector.
        stored = self._sealed_vectors(sorted(vectors, key=lambda v: v[0]))
        with self._derived_transaction():  # a vector is made again from the text
            self._conn.execute(schema.INSERT_VECTOR_MODEL, (model, model))
            self._conn.executemany(
                "INSERT INTO moment_vectors (num, model_id, vector) "
                f"SELECT num, {schema.MODEL_ID}, ? FROM moments WHERE num = ? AND text = ? "
                "ON CONFLICT (num) DO UPDATE SET model_id = excluded.model_id, "
                "vector = excluded.vector",
                [(model, blob, num, text) for num, text, blob in stored],
            )

    def vector_models(self) -> list[str]:
        rows = self._query(
            "SELECT name FROM vector_models m WHERE EXISTS "
            "(SELECT 1 FROM moment_vectors v WHERE v.model_id = m.id) ORDER BY name"
        )
        return [str(model) for (model,) in rows]

    def _remove_vectors(self, nums: Sequence[int]) -> None:
        self._write_by_num("DELETE FROM moment_vectors WHERE num", nums)

    # -- the cold archive -------------------------------------------------------------------

    def _archive_row(self, entry: ArchiveEntry) -> tuple[int, str]:
        return (entry.number, self._archive_body(entry))

    def _archived_of(self, session_id: str) -> list[int]:
        # The archive's rows name no session: read from their bodies.
        return [e.number for e in self.list_archived() if e.session == session_id]
