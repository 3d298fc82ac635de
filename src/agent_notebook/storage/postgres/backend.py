"""The PostgreSQL backend: one database shared by many processes, psycopg 3 with a pool.

Its parts: the pool and transactions with the writer lock (:mod:`.connection`), the
full-text index and BM25 search (:mod:`.fulltext`), the vectors' change log and the
embedding claims (:mod:`.vectors`), the maintenance lock and the purge
(:mod:`.maintenance`), the API tokens and web sessions (:mod:`.tokens`), and what it shares
with SQLite (:mod:`..sql`). This module opens the notebook (its migrations, one process at
a time) and writes moments and concept pairs.
"""

from __future__ import annotations

import itertools
import os
import re
import socket
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config import postgres_pool_size
from ...errors import InvalidInput, StorageError
from ...model import ArchiveEntry, Moment
from ..base import Capabilities
from ..sql.dialect import POSTGRES
from ..sql.reads import SqlReads
from ..sql.rotation import SqlKeyRotation
from ..sql.writes import ConceptPairs, SqlWrites
from . import schema
from .connection import WRITER_LOCK, PostgresConnection, drivers, one
from .fulltext import PostgresFullText
from .maintenance import PostgresMaintenance
from .tokens import PostgresServerTables
from .vectors import PostgresVectorLog

if TYPE_CHECKING:
    import psycopg

    from ...core.crypto import Cipher

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


class PostgresBackend(
    PostgresFullText,
    PostgresVectorLog,
    PostgresMaintenance,
    PostgresServerTables,
    PostgresConnection,
    SqlKeyRotation,
    SqlWrites,
    SqlReads,
):
    _dialect = POSTGRES
    _upsert_moment = schema.UPSERT_MOMENT
    _upsert_archived = schema.UPSERT_ARCHIVED
    _select_briefs = schema.SELECT_BRIEFS
    _vector_model = "model = %s"
    _newest_rows = (("moments", "num"), ("sessions", "started_us"))
    capabilities = Capabilities(
        name="postgres",
        crash_atomic=True,
        multi_process=True,
        persistent=True,
        native_full_text=True,
        shared_embedding=True,
        langgraph_tables="database",
        encrypts_at_rest=True,
        holds_api_tokens=True,
    )

    def __init__(
        self,
        url: str,
        *,
        schema_name: str | None = None,
        cipher: Cipher | None = None,
        pool_size: int | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        """``schema_name`` keeps the notebook in that schema (made if missing) instead of
        the connection's default; ``timeout_s`` bounds the wait for a pooled connection;
        ``pool_size`` is the most connections a pool opens (default
        ``$AGENT_NOTEBOOK_PG_POOL_SIZE``, else 8)."""
        psycopg, pool_module = drivers()
        self.url = url
        self.cipher = cipher  # encryption at rest: see ``sealed``
        self._schema_name = schema_name
        #: Where this process keeps the files beside the database (set by ``Notebook.open``
        #: to the notebook's home): LangGraph's store and checkpoints, for now.
        self.local_dir: Path | None = None
        self._local = threading.local()
        self._writers = threading.Lock()
        self.claimant = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._savepoints = itertools.count()
        self._error = psycopg.Error
        self._psycopg = psycopg
        self._pool_timeout = pool_module.PoolTimeout
        kwargs: dict[str, Any] = {"autocommit": True}
        if schema_name is not None:
            if not _SCHEMA_NAME.fullmatch(schema_name):
                raise InvalidInput(
                    f"schema {schema_name!r} is not a plain name: use lower-case letters, "
                    "digits and _ (at most 63, not starting with a digit)"
                )
            kwargs["options"] = f"-c search_path={schema_name}"
        #: How this backend connects (the URL's own options aside) and its pool's bounds,
        #: for the pools of LangGraph's store and checkpointer in the same schema.
        self.connect_kwargs: dict[str, Any] = dict(kwargs)
        self.pool_size = postgres_pool_size() if pool_size is None else pool_size
        self.timeout_s = timeout_s
        with self._mapped("connect"):
            self._migrate(psycopg.connect(url, connect_timeout=int(timeout_s), **kwargs))
            self._pool = pool_module.ConnectionPool(
                url,
                min_size=1,
                max_size=self.pool_size,
                kwargs=kwargs,
                timeout=timeout_s,
                open=False,
            )
            self._pool.open(wait=True, timeout=timeout_s)
        self._check_sealing()

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        """Apply the migrations this database lacks, one process at a time: the writer lock
        is taken at session level by a loop of tries (a server waiting for another's
        migration holds no snapshot meanwhile: see :mod:`.setup`), and
        every wait of the migration is bounded by ``timeout_s`` (then a StorageError)."""
        from .setup import try_lock

        ms = max(1, int(self.timeout_s * 1000))
        with conn:
            conn.execute(f"SET lock_timeout = {ms}")
            conn.execute(f"SET statement_timeout = {ms}")
            # The schema's name keys the lock: current_schema() is null until it exists.
            key = one(conn, "SELECT coalesce(%s, current_schema())", (self._schema_name,))
            try:
                try_lock(
                    conn,
                    "%s, hashtext(%s)",
                    (WRITER_LOCK, key),
                    self.timeout_s,
                    "another process's migration of the notebook's tables",
                )
            except StorageError as err:
                raise StorageError(f"{self.location}: {err}") from None
            try:
                with conn.transaction():  # the lock is released as the connection closes
                    self._migrate_locked(conn)
            except (
                self._psycopg.errors.LockNotAvailable,
                self._psycopg.errors.QueryCanceled,
            ) as err:
                raise StorageError(
                    f"{self.location}: migrating the notebook's tables waited over "
                    f"{self.timeout_s:.0f} s for a lock or a statement ({str(err).strip()}): "
                    "a long transaction of another session holds one of its tables; end it "
                    "and start again"
                ) from err

    def _migrate_locked(self, conn: psycopg.Connection[Any]) -> None:
        if self._schema_name is not None:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self._schema_name}")
        version = 0
        if one(conn, "SELECT to_regclass('notebook_schema')") is not None:
            version = int(one(conn, "SELECT version FROM notebook_schema"))
        if version > len(schema.MIGRATIONS):
            raise StorageError(
                f"{self.location}: the notebook's schema is version {version}, newer "
                f"than this agent-notebook knows ({len(schema.MIGRATIONS)}): upgrade it"
            )
        for statements in schema.MIGRATIONS[version:]:
            for statement in statements:
                conn.execute(statement)
        conn.execute("UPDATE notebook_schema SET version = %s", (len(schema.MIGRATIONS),))
        if one(conn, "SELECT EXISTS (SELECT 1 FROM text_index_stale)"):
            self._rebuild_text_index(conn)

    # -- moments ----------------------------------------------------------------------------

    def put_moments(self, moments: Sequence[Moment]) -> None:
        with self.atomic():
            replaced = self._moments_by_num([m.number for m in moments])
            self._write_many(schema.UPSERT_MOMENT, [self._moment_row(m) for m in moments])
            self._index_moments(moments, replaced)
            texts = {m.number: m.content.text for m in moments}
            changed = [num for num, old in replaced.items() if old.content.text != texts[num]]
            self._drop_vectors(changed)  # a vector describes the text it was made from

    def add_moments(self, moments: Sequence[Moment]) -> None:
        """New moments: nothing stored to read and replace (a number taken fails)."""
        if not moments:
            return
        with self._joined():
            self._write_many(schema.INSERT_MOMENT, [self._moment_row(m) for m in moments])
            self._index_moments(moments, {})

    def _index_moments(self, moments: Sequence[Moment], replaced: dict[int, Moment]) -> None:
        self._index_terms(moments, replaced)
        self._index_concepts(moments, replaced)
        self._index_fact_keys(moments, replaced)

    # -- concept pairs ----------------------------------------------------------------------

    def _unlink_concepts(self, pairs: Sequence[tuple[str, int]]) -> None:
        if pairs:
            self._write(
                "DELETE FROM concept_moments WHERE (concept_id, num) IN (SELECT c.id, x.num "
                "FROM unnest(%s::text[], %s::bigint[]) x (name, num) "
                "JOIN concepts c ON c.name = x.name)",
                ([name for name, _ in pairs], [num for _, num in pairs]),
            )

    def _link_concepts(self, table: ConceptPairs, pairs: Sequence[tuple[str, int]]) -> None:
        if not pairs:
            return
        names = sorted({name for name, _ in pairs})
        self._write(
            "INSERT INTO concepts (name) SELECT unnest(%s::text[]) ON CONFLICT (name) DO NOTHING",
            (names,),
        )
        self._write(
            f"INSERT INTO {table} (concept_id, num) SELECT c.id, x.num "
            "FROM unnest(%s::text[], %s::bigint[]) x (name, num) "
            "JOIN concepts c ON c.name = x.name ON CONFLICT DO NOTHING",
            ([name for name, _ in pairs], [num for _, num in pairs]),
        )

    # -- the cold archive -------------------------------------------------------------------

    def _archive_row(self, entry: ArchiveEntry) -> tuple[int, str, str]:
        return (entry.number, entry.session, self._archive_body(entry))

    def _archived_of(self, session_id: str) -> list[int]:
        found = self._query("SELECT num FROM archived WHERE session_id = %s", (session_id,))
        return [num for (num,) in found]
