"""The PostgreSQL backend: one database shared by many processes, psycopg 3 with a pool.

Writers take a transaction-level advisory lock at the start of the outermost ``atomic()``
block, so writes are serialised as on SQLite (``BEGIN IMMEDIATE``) across every process on
the database: a read-modify-write inside ``atomic()`` is never lost, counters never repeat,
and the term statistics stay exact. Nested blocks are savepoints. Reads outside a
transaction take any pooled connection and see what is committed; a search reads in one
snapshot.

Lexical search ranks with FTS5's BM25 from statistics this backend keeps (document
frequencies, document lengths, totals) over the same index terms as SQLite, so both order
the same notebook the same way; the GIN index over each moment's ``tsvector`` finds the
candidates.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError

from ...errors import Conflict, InvalidInput, StorageError
from ...model import (
    CUT_SPEAKER,
    ArchiveEntry,
    ConceptEntry,
    Moment,
    MomentContent,
    Session,
    moment_number,
)
from .. import rows, sql
from ..base import Capabilities, MomentFilter, VectorChangesPruned
from ..sqlbase import SqlReads
from ..sqlite import sealed
from . import schema

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

    from ...core.crypto import Cipher

#: How many postings (moment, term pairs) one search may score; see ``sql.choose_terms``.
POSTINGS_BUDGET = sql.POSTINGS_BUDGET
#: The advisory lock class of a notebook's writer lock (the schema's hash is the other key).
WRITER_LOCK: Final = 0x4E42  # "NB"
#: The advisory lock class of maintenance runs (compaction, key rotation), and how long a
#: second run waits for the first before it gives up.
MAINTENANCE_LOCK: Final = 0x4E4D  # "NM"
MAINTENANCE_WAIT_S: Final = 5.0
#: How long a health check waits for a connection, and for its answer.
PING_WAIT_S: Final = 5.0
#: How long a purge waits for the transactions that may still see the removed rows.
PURGE_WAIT_S: Final = 30.0
#: How long a server's claim on a moment to embed holds (seconds); then anyone takes it.
CLAIM_LEASE_S: Final = 30.0
#: How long a tombstone of a removed vector is kept for the other servers' indexes to see;
#: an index that has not looked for longer is loaded again (``VectorChangesPruned``).
DROPS_KEPT: Final = timedelta(days=1)
INSTALL_HINT: Final = "pip install 'agent-notebook[postgres]'"
log = logging.getLogger(__name__)
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_NOCASE: Final = "lower({}) = lower({})"


def _drivers() -> tuple[Any, Any]:
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


class PostgresBackend(SqlReads):
    _mark = "%s"
    _nocase = _NOCASE
    _upsert_moment = schema.UPSERT_MOMENT
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
        pool_size: int = 8,
        timeout_s: float = 60.0,
    ) -> None:
        """``schema_name`` keeps the notebook in that schema (made if missing) instead of
        the connection's default; ``timeout_s`` bounds the wait for a pooled connection."""
        psycopg, pool_module = _drivers()
        self.url = url
        self.cipher = cipher  # encryption at rest: see ``sealed``
        self._schema_name = schema_name
        #: Where this process keeps the files beside the database (set by ``Notebook.open``
        #: to the notebook's home): LangGraph's store and checkpoints, for now.
        self.local_dir: Path | None = None
        self._local = threading.local()
        #: Who this instance is in ``vector_claims``.
        self.claimant = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._savepoints = itertools.count()
        self._error: type[Exception] = psycopg.Error
        self._psycopg = psycopg
        self._pool_timeout: type[Exception] = pool_module.PoolTimeout
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
        self.pool_size, self.timeout_s = pool_size, timeout_s
        with self._mapped("connect"):
            self._migrate(psycopg.connect(url, connect_timeout=int(timeout_s), **kwargs))
            self._pool: psycopg_pool.ConnectionPool[Any] = pool_module.ConnectionPool(
                url, min_size=1, max_size=pool_size, kwargs=kwargs, timeout=timeout_s, open=False
            )
            self._pool.open(wait=True, timeout=timeout_s)
        self._check_sealing()

    @property
    def location(self) -> str:
        where = redacted_url(self.url)
        return where if self._schema_name is None else f"{where} (schema {self._schema_name})"

    # -- plumbing ---------------------------------------------------------------------------

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
            raise StorageError(f"{self.location}: {doing} failed: {message}") from err

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
            key = _one(conn, "SELECT coalesce(%s, current_schema())", (self._schema_name,))
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
        if _one(conn, "SELECT to_regclass('notebook_schema')") is not None:
            version = int(_one(conn, "SELECT version FROM notebook_schema"))
        if version > len(schema.MIGRATIONS):
            raise StorageError(
                f"{self.location}: the notebook's schema is version {version}, newer "
                f"than this agent-notebook knows ({len(schema.MIGRATIONS)}): upgrade it"
            )
        for statements in schema.MIGRATIONS[version:]:
            for statement in statements:
                conn.execute(statement)
        conn.execute("UPDATE notebook_schema SET version = %s", (len(schema.MIGRATIONS),))
        if _one(conn, "SELECT EXISTS (SELECT 1 FROM text_index_stale)"):
            self._rebuild_text_index(conn)

    def _rebuild_text_index(self, conn: psycopg.Connection[Any], batch: int = 1000) -> None:
        """Compute every moment's index terms, the terms' document counts and the totals
        again from the moments' text (inside the migration's transaction)."""
        docs: Counter[str] = Counter()
        count = length = 0
        after = 0
        while found := conn.execute(
            f"SELECT {rows.MOMENT_READ} FROM moments WHERE num > %s ORDER BY num LIMIT %s",
            (after, batch),
        ).fetchall():
            after = found[-1][0]
            if self.cipher is None:  # the text column is the text: no moment to validate
                texts = [(num, text) for num, *_, text, _ in found]
            else:
                opened = self._moments_from(found)
                texts = [(m.number, m.content.text) for m in opened]
            updates = []
            for num, text in texts:
                terms = self._terms(text)
                docs.update(set(terms))
                count, length = count + 1, length + len(terms)
                updates.append((*schema.text_columns(terms), num))
            with conn.cursor() as cur:
                cur.executemany(
                    "UPDATE moments SET terms = %s::tsvector, frequent = %s::jsonb, length = %s "
                    "WHERE num = %s",
                    updates,
                )
        conn.execute("DELETE FROM term_docs")
        items = sorted(docs.items())
        conn.execute(
            "INSERT INTO term_docs (term, docs) SELECT * FROM unnest(%s::text[], %s::bigint[])",
            ([t for t, _ in items], [d for _, d in items]),
        )
        conn.execute("UPDATE text_totals SET docs = %s, terms = %s", (count, length))
        conn.execute("DELETE FROM text_index_stale")

    @contextmanager
    def atomic(self) -> Iterator[None]:
        outer: psycopg.Connection[Any] | None = getattr(self._local, "tx", None)
        if outer is not None:  # nested: a savepoint of the outer transaction
            with self._mapped("transaction"), outer.transaction():
                yield
            return
        with self._mapped("transaction"), self._pool.connection() as conn, conn.transaction():
            _writer_lock(conn)
            self._local.tx = conn
            try:
                yield
            finally:
                self._local.tx = None

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

    def _rows_by_num(self, select: str, nums: Sequence[int]) -> list[Any]:
        return self._query(f"{select} (SELECT unnest(%s::bigint[]))", (list(nums),))

    def _write(self, statement: str, params: Sequence[Any] = ()) -> None:
        conn: psycopg.Connection[Any] = self._local.tx  # set: writers run inside atomic()
        conn.execute(statement, params)

    def _write_many(self, statement: str, params: Sequence[Sequence[Any]]) -> None:
        if params:
            conn: psycopg.Connection[Any] = self._local.tx
            with conn.cursor() as cursor:
                cursor.executemany(statement, params)

    def _check_sealing(self) -> None:
        """Refuse at open, before any write, a notebook sealed with another key (or sealed
        at all, without a key): the newest moment and session tell."""
        for table, order in (("moments", "num"), ("sessions", "started_us")):
            found = self._query(f"SELECT body FROM {table} ORDER BY {order} DESC LIMIT 1")
            if found:
                sealed.check_key(self.cipher, found[0][0], self.location)

    def _moment_row(self, moment: Moment) -> tuple[Any, ...]:
        if self.cipher is None:
            row = rows.moment_row(moment)
        else:
            row = sealed.moment_row(self.cipher, moment)
        return (*row, *schema.text_columns(self._terms(moment.content.text)))

    def _moments_from(self, found: list[Any]) -> list[Moment]:
        try:
            return [sealed.moment_from_row(self.cipher, row) for row in found]
        except (ValueError, ValidationError) as err:
            raise StorageError(f"{self.location}: a stored moment does not load: {err}") from err

    # -- counters ---------------------------------------------------------------------------

    def next_number(self, counter: str, count: int = 1) -> int:
        with self.atomic(), self._mapped("write"):
            (last,) = self._local.tx.execute(
                "INSERT INTO counters (name, value) VALUES (%s, %s) "
                "ON CONFLICT (name) DO UPDATE SET value = counters.value + excluded.value "
                "RETURNING value",
                (counter, count),
            ).fetchone()
            return int(last) - count + 1

    def raise_counter(self, counter: str, at_least: int) -> None:
        with self.atomic():
            self._write(
                "INSERT INTO counters (name, value) VALUES (%s, %s) "
                "ON CONFLICT (name) DO UPDATE SET value = greatest(counters.value, excluded.value)",
                (counter, at_least),
            )

    def counters(self) -> dict[str, int]:
        return dict(self._query('SELECT name, value FROM counters ORDER BY name COLLATE "C"'))

    # -- sessions ---------------------------------------------------------------------------

    def put_session(self, session: Session) -> None:
        row = rows.session_row(session)
        if self.cipher is not None:
            row = (row[0], row[1], sealed.session_body(self.cipher, session))
        with self.atomic():
            self._write(
                "INSERT INTO sessions (id, started_us, body) VALUES (%s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET started_us = excluded.started_us, "
                "body = excluded.body",
                row,
            )

    def list_sessions(self, offset: int = 0, limit: int | None = None) -> list[Session]:
        found = self._query(
            'SELECT body FROM sessions ORDER BY started_us, id COLLATE "C" LIMIT %s OFFSET %s',
            (limit, offset),
        )
        return [sealed.session_from_row(self.cipher, body) for (body,) in found]

    def delete_session(self, session_id: str) -> None:
        with self.atomic():
            found = self._query("SELECT num FROM moments WHERE session_id = %s", (session_id,))
            self._remove_moments([num for (num,) in found])
            self._write(
                "DELETE FROM archived_concepts WHERE num IN "
                "(SELECT num FROM archived WHERE session_id = %s)",
                (session_id,),
            )
            self._write("DELETE FROM archived WHERE session_id = %s", (session_id,))
            self._write("DELETE FROM sessions WHERE id = %s", (session_id,))

    def _remove_moments(self, nums: Sequence[int]) -> None:
        """Delete moments and what is derived from them: their words' document frequencies
        and lengths, concept pairs and vectors (by cascade)."""
        gone = self._moments_by_num(nums)
        emptied = [m.model_copy(update={"content": MomentContent()}) for m in gone.values()]
        self._index_terms(emptied, gone, removed=len(gone))
        numbers = list(gone)
        self._drop_vectors(numbers)
        self._write("DELETE FROM vector_claims WHERE num = ANY(%s::bigint[])", (numbers,))
        self._write("DELETE FROM concept_moments WHERE num = ANY(%s::bigint[])", (numbers,))
        self._write("DELETE FROM moments WHERE num = ANY(%s::bigint[])", (numbers,))

    # -- moments ----------------------------------------------------------------------------

    def put_moments(self, moments: Sequence[Moment]) -> None:
        with self.atomic():
            replaced = self._moments_by_num([m.number for m in moments])
            self._write_many(schema.UPSERT_MOMENT, [self._moment_row(m) for m in moments])
            self._index_terms(moments, replaced)
            self._index_concepts(moments, replaced)
            texts = {m.number: m.content.text for m in moments}
            changed = [num for num, old in replaced.items() if old.content.text != texts[num]]
            self._drop_vectors(changed)  # a vector describes the text it was made from

    def _drop_vectors(self, nums: Sequence[int]) -> None:
        """Delete these moments' vectors, leaving a tombstone in the change log for every
        server's index (see ``vector_changes``), and prune the tombstones older than
        :data:`DROPS_KEPT`, moving the horizon past them."""
        if nums:
            self._write(
                "WITH gone AS (DELETE FROM moment_vectors WHERE num = ANY(%s::bigint[]) "
                "RETURNING num, model) INSERT INTO vector_drops (num, model) "
                "SELECT num, model FROM gone ORDER BY num",
                (list(nums),),
            )
            self._write(
                "WITH pruned AS (DELETE FROM vector_drops WHERE at < now() - %s "
                "RETURNING seq) UPDATE vector_drops_horizon "
                "SET seq = greatest(seq, (SELECT max(seq) FROM pruned)) "
                "WHERE EXISTS (SELECT 1 FROM pruned)",
                (DROPS_KEPT,),
            )

    def _brief_rows(self, nums: Sequence[int]) -> list[Any]:
        return self._query(schema.SELECT_BRIEFS, (list(nums),))

    def _moments_by_num(self, nums: Sequence[int]) -> dict[int, Moment]:
        """The stored moments among ``nums``, by number."""
        found = self._query(
            f"SELECT {rows.MOMENT_READ} FROM moments WHERE num = ANY(%s::bigint[])", (list(nums),)
        )
        return {row[0]: m for row, m in zip(found, self._moments_from(found), strict=True)}

    def _index_terms(
        self, moments: Sequence[Moment], replaced: dict[int, Moment], removed: int = 0
    ) -> None:
        """Keep the document frequencies and the totals BM25 reads in step with a write of
        ``moments`` over ``replaced`` (``removed`` of them are being deleted)."""
        change = sql.frequency_change(moments, replaced, self._terms)
        items = sorted((term, docs) for term, docs in change.items() if docs)
        if items:
            self._write(
                "INSERT INTO term_docs (term, docs) "
                "SELECT * FROM unnest(%s::text[], %s::bigint[]) "
                "ON CONFLICT (term) DO UPDATE SET docs = term_docs.docs + excluded.docs",
                ([t for t, _ in items], [d for _, d in items]),
            )
        added = sum(1 for m in moments if m.number not in replaced) - removed
        length = sum(len(self._terms(m.content.text)) for m in moments) - sum(
            len(self._terms(old.content.text)) for old in replaced.values()
        )
        if added or length:
            self._write(
                "UPDATE text_totals SET docs = docs + %s, terms = terms + %s", (added, length)
            )

    def _index_concepts(self, moments: Sequence[Moment], replaced: dict[int, Moment]) -> None:
        gone = [
            (self._name(c), num) for num, old in replaced.items() for c in old.metadata.concepts
        ]
        if gone:
            self._write(
                "DELETE FROM concept_moments WHERE (concept_id, num) IN (SELECT c.id, x.num "
                "FROM unnest(%s::text[], %s::bigint[]) x (name, num) "
                "JOIN concepts c ON c.name = x.name)",
                ([name for name, _ in gone], [num for _, num in gone]),
            )
        pairs = [(self._name(c), m.number) for m in moments for c in m.metadata.concepts]
        self._link_concepts("concept_moments", pairs)

    def _link_concepts(
        self, table: Literal["concept_moments", "archived_concepts"], pairs: list[tuple[str, int]]
    ) -> None:
        """Add ``(stored concept name, moment number)`` pairs to ``table``, naming the new
        concepts."""
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

    def list_moments(
        self, session_id: str | None = None, offset: int = 0, limit: int | None = None
    ) -> list[Moment]:
        where, params = ("", ()) if session_id is None else ("WHERE session_id = %s", (session_id,))
        found = self._query(
            f"SELECT {rows.MOMENT_READ} FROM moments {where} ORDER BY num LIMIT %s OFFSET %s",
            (*params, limit, offset),
        )
        return self._moments_from(found)

    def media_signatures(self, kind: Literal["image", "audio"]) -> list[tuple[int, str]]:
        if self.cipher is not None:  # sealed bodies: read through the moments, opened
            return super().media_signatures(kind)
        if kind not in ("image", "audio"):
            raise InvalidInput(f"media kind {kind!r} is not image or audio")
        found = self._query(  # read in SQL: no moment is parsed
            "SELECT num, sig FROM (SELECT num, body::jsonb #>> %s::text[] AS sig FROM moments) s "
            "WHERE sig IS NOT NULL AND sig != '' ORDER BY num",
            (["content", f"{kind}_signature"],),
        )
        return [(int(num), str(sig)) for num, sig in found]

    # -- text vectors -----------------------------------------------------------------------

    def put_vectors(self, model: str, vectors: Sequence[tuple[int, str, bytes]]) -> None:
        if (cipher := self.cipher) is not None:  # the text column holds the index's tokens
            vectors = [
                (num, sealed.index_text(cipher, text), cipher.encrypt(blob, sealed.vector_aad(num)))
                for num, text, blob in vectors
            ]
        with self.atomic():
            self._write_many(
                "INSERT INTO moment_vectors (num, model, vector) "
                "SELECT num, %s, %s FROM moments WHERE num = %s AND text = %s "
                "ON CONFLICT (num) DO UPDATE SET model = excluded.model, "
                "vector = excluded.vector, seq = nextval('vector_seq')",
                [(model, blob, num, text) for num, text, blob in vectors],
            )
            self._write(
                "DELETE FROM vector_claims WHERE model = %s AND num = ANY(%s::bigint[])",
                (model, [num for num, _, _ in vectors]),
            )

    def vector_changes(
        self, model: str, after: int = 0, limit: int | None = None
    ) -> tuple[list[tuple[int, bytes | None]], int]:
        """The vector writes and removals after change ``after``, in change order: a
        vector of another model replacing one of ``model`` reads as a removal. Safe to
        follow by seq alone: see the migration that added it (``schema.MIGRATIONS``)."""
        found = self._query(
            "SELECT seq, num, CASE WHEN model = %s THEN vector END FROM moment_vectors "
            "WHERE seq > %s UNION ALL SELECT seq, num, NULL FROM vector_drops "
            "WHERE seq > %s AND model = %s ORDER BY 1 LIMIT %s",
            (model, after, after, model, limit),
        )
        # read after the changes: a pruning between the two is seen, never missed
        if after and after < int(self._query("SELECT seq FROM vector_drops_horizon")[0][0]):
            raise VectorChangesPruned(after)
        changes = [
            (int(num), None if blob is None else bytes(self._open_vector(num, blob)))
            for _, num, blob in found
        ]
        return changes, int(found[-1][0]) if found else after

    def last_vector_change(self) -> int:
        return int(
            self._query(
                "SELECT greatest((SELECT max(seq) FROM moment_vectors), "
                "(SELECT max(seq) FROM vector_drops), 0)"
            )[0][0]
        )

    def claim_unembedded(self, model: str, limit: int, after: int = 0) -> list[int]:
        """Claim up to ``limit`` moments above ``after`` that have no vector of ``model``
        and no live claim, for ``CLAIM_LEASE_S``: each is embedded by one server. ``SKIP
        LOCKED`` lets servers claiming at once take different moments without waiting;
        the upsert's condition settles a race with a claim committed meanwhile. A killed
        server's claims lapse with their lease and are taken over."""
        found = self._query(
            "WITH free AS (SELECT m.num FROM moments m WHERE m.num > %s AND m.speaker != %s "
            "AND NOT EXISTS (SELECT 1 FROM moment_vectors v WHERE v.num = m.num AND v.model = %s) "
            "AND NOT EXISTS (SELECT 1 FROM vector_claims c WHERE c.num = m.num "
            "AND c.model = %s AND c.until > clock_timestamp()) "
            "ORDER BY m.num LIMIT %s FOR UPDATE OF m SKIP LOCKED) "
            "INSERT INTO vector_claims (num, model, owner, until) "
            "SELECT num, %s, %s, clock_timestamp() + make_interval(secs => %s) FROM free "
            "ON CONFLICT (num, model) DO UPDATE SET owner = excluded.owner, "
            "until = excluded.until WHERE vector_claims.until <= clock_timestamp() "
            "RETURNING num",
            (after, CUT_SPEAKER, model, model, limit, model, self.claimant, CLAIM_LEASE_S),
        )
        return sorted(int(num) for (num,) in found)

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

    def get_vectors(
        self, model: str, after: int = 0, limit: int | None = None
    ) -> list[tuple[int, bytes]]:
        found: list[tuple[int, bytes]] = self._query(
            "SELECT num, vector FROM moment_vectors WHERE model = %s AND num > %s "
            "ORDER BY num LIMIT %s",
            (model, after, limit),
        )
        if self.cipher is not None:
            found = [(n, self._open_vector(n, v)) for n, v in found]
        return [(n, bytes(v)) for n, v in found]

    def vector_models(self) -> list[str]:
        found = self._query('SELECT DISTINCT model COLLATE "C" FROM moment_vectors ORDER BY 1')
        return [str(model) for (model,) in found]

    def unembedded(self, model: str, limit: int | None = None, after: int = 0) -> list[int]:
        found = self._query(
            "SELECT m.num FROM moments m WHERE m.num > %s AND m.speaker != %s AND NOT EXISTS "
            "(SELECT 1 FROM moment_vectors v WHERE v.num = m.num AND v.model = %s) "
            "ORDER BY m.num LIMIT %s",
            (after, CUT_SPEAKER, model, limit),
        )
        return [num for (num,) in found]

    # -- concepts ---------------------------------------------------------------------------

    def concept_members(self, concept: str, at_most: int) -> list[int] | None:
        found = self._query(
            "SELECT cm.num FROM concepts c JOIN concept_moments cm ON cm.concept_id = c.id "
            "WHERE c.name = %s ORDER BY cm.num LIMIT %s",
            (self._name(concept), at_most + 1),
        )
        return None if len(found) > at_most else [num for (num,) in found]

    def list_concepts(self, offset: int = 0, limit: int | None = None) -> list[ConceptEntry]:
        named = self._query(
            "SELECT id, name FROM concepts c WHERE EXISTS "
            "(SELECT 1 FROM concept_moments cm WHERE cm.concept_id = c.id) "
            + ('ORDER BY name COLLATE "C" LIMIT %s OFFSET %s' if self.cipher is None else ""),
            (limit, offset) if self.cipher is None else (),
        )
        if self.cipher is None:
            page = [(name, cid) for cid, name in named]
        else:  # sealed names do not sort in SQL: every name is opened and sorted here
            ordered = sorted((self._unname(name), cid) for cid, name in named)
            page = ordered[offset:] if limit is None else ordered[offset : offset + limit]
        members = self._query(
            "SELECT cm.concept_id, cm.num, m.session_id FROM concept_moments cm "
            "JOIN moments m ON m.num = cm.num WHERE cm.concept_id = ANY(%s::bigint[]) "
            "ORDER BY cm.concept_id, cm.num",
            ([cid for _, cid in page],),
        )
        by_concept = {
            cid: [(num, sid) for _, num, sid in group]
            for cid, group in itertools.groupby(members, key=lambda r: r[0])
        }
        return [sql.concept_entry(name, by_concept.get(cid, [])) for name, cid in page]

    # -- search -----------------------------------------------------------------------------

    def search_text(self, query: str, where: MomentFilter, limit: int) -> list[tuple[str, float]]:
        """BM25 as FTS5 ranks it, with SQLite's bounded cost (``sql.choose_terms``): the
        same terms are chosen, weighed from the same statistics, in the same order."""
        words, order = sql.query_words(query, None if self.cipher is None else self.cipher.token)
        if not words:
            return []
        with self._mapped("search"), self._connection(snapshot=True) as conn:
            docs: dict[str, int] = dict(
                conn.execute(
                    "SELECT term, docs FROM term_docs WHERE term = ANY(%s::text[]) AND docs > 0",
                    (list(words),),
                ).fetchall()
            )
            newest = conn.execute("SELECT coalesce(max(num), 0) FROM moments").fetchone()
            total = int(newest[0]) if newest is not None else 0
            chosen, postings = sql.choose_terms(order, docs, total, POSTINGS_BUDGET)
            totals = conn.execute("SELECT docs, terms FROM text_totals").fetchone()
            if not chosen or totals is None or totals[0] <= 0:
                return []
            documents, total_terms = int(totals[0]), int(totals[1])
            idf = [sql.bm25_idf(documents, docs[t]) for t in chosen]
            statement = [schema.score_sql(len(chosen))]
            params = schema.score_params(chosen, idf, total_terms / documents)
            if postings > POSTINGS_BUDGET:
                statement.append("AND m.num > (SELECT max(num) FROM moments) - %s")
                params.append(POSTINGS_BUDGET)
            conditions, values = sql.filter_sql(where, "%s", _NOCASE)
            statement += [f"AND {c}" for c in conditions]
            params += values
            statement.append("ORDER BY score DESC, m.num LIMIT %s")
            params.append(limit)
            found = conn.execute(" ".join(statement), params).fetchall()
        return [(f"m_{num}", float(score)) for num, score in found]

    # -- the cold archive ---------------------------------------------------------------------

    def archive_moments(self, entries: Sequence[ArchiveEntry]) -> None:
        with self.atomic():
            self._remove_moments([e.number for e in entries])
            self._write_many(
                "INSERT INTO archived (num, session_id, body) VALUES (%s, %s, %s) "
                "ON CONFLICT (num) DO UPDATE SET session_id = excluded.session_id, "
                "body = excluded.body",
                [(e.number, e.session, self._archive_body(e)) for e in entries],
            )
            self._write(
                "DELETE FROM archived_concepts WHERE num = ANY(%s::bigint[])",
                ([e.number for e in entries],),
            )
            pairs = [(self._name(c), e.number) for e in entries for c in e.concepts]
            self._link_concepts("archived_concepts", pairs)

    def _archive_body(self, entry: ArchiveEntry) -> str:
        if self.cipher is None:
            return rows.archive_row(entry)[1]
        return sealed.archive_body(self.cipher, entry)

    def get_archived(self, moment_ids: Sequence[str]) -> list[ArchiveEntry]:
        nums = [moment_number(mid) for mid in moment_ids]
        found = self._query("SELECT num, body FROM archived WHERE num = ANY(%s::bigint[])", (nums,))
        entries = {num: sealed.archive_from_row(self.cipher, body) for num, body in found}
        return [entries[n] for n in nums if n in entries]

    def list_archived(self, offset: int = 0, limit: int | None = None) -> list[ArchiveEntry]:
        found = self._query(
            "SELECT body FROM archived ORDER BY num LIMIT %s OFFSET %s", (limit, offset)
        )
        return [sealed.archive_from_row(self.cipher, body) for (body,) in found]

    # -- key rotation (SqlReads.reseal) ---------------------------------------------------------

    def _resealed(self) -> None:
        """Count each term's documents again from the moments' ``tsvector`` (what the
        index holds: every term of an encrypted notebook is a short keyed token)."""
        self._write("DELETE FROM term_docs")
        self._write(
            "INSERT INTO term_docs (term, docs) SELECT t, count(*) FROM moments, "
            "unnest(tsvector_to_array(terms)) AS t GROUP BY t"
        )

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
                while not _one(conn, f"SELECT pg_try_advisory_lock(%s, {key})", params):
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

    # -- API tokens (hashes only: see privacy.tokens.DatabaseTokens) -------------------------

    def api_tokens(self) -> list[tuple[str, str, str, datetime]]:
        found = self._query("SELECT role, name, sha256, created FROM api_tokens ORDER BY 1, 2")
        return [(str(r), str(n), str(h), c) for r, n, h, c in found]

    def add_api_token(self, role: str, name: str, sha256: str, created: datetime) -> bool:
        """Insert a token's row; False (nothing changed) when ``role``/``name`` has one."""
        with self.atomic():
            done = self._local.tx.execute(
                "INSERT INTO api_tokens (role, name, sha256, created) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                (role, name, sha256, created),
            )
            return bool(done.rowcount)

    def set_api_token(self, role: str, name: str, sha256: str, created: datetime) -> None:
        with self.atomic():
            self._write(
                "INSERT INTO api_tokens (role, name, sha256, created) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (role, name) DO UPDATE SET sha256 = excluded.sha256, "
                "created = excluded.created",
                (role, name, sha256, created),
            )

    def delete_api_token(self, role: str, name: str) -> bool:
        with self.atomic():
            done = self._local.tx.execute(
                "DELETE FROM api_tokens WHERE role = %s AND name = %s", (role, name)
            )
            return bool(done.rowcount)

    # -- the web pages' sign-in sessions (hashes only: see privacy.web_sessions) ------------

    def web_sessions(self) -> list[tuple[str, str, datetime]]:
        found = self._query("SELECT sha256, token_sha256, created FROM web_sessions")
        return [(str(h), str(t), c) for h, t, c in found]

    def add_web_session(self, sha256: str, token_sha256: str, created: datetime) -> None:
        with self.atomic():
            self._write(
                "INSERT INTO web_sessions (sha256, token_sha256, created) VALUES (%s, %s, %s)",
                (sha256, token_sha256, created),
            )

    def delete_web_sessions(self, sha256s: list[str]) -> None:
        with self.atomic():
            self._write("DELETE FROM web_sessions WHERE sha256 = ANY(%s)", (sha256s,))

    # -- lifecycle --------------------------------------------------------------------------

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
        tables = ["moments", "term_docs", "concepts", "concept_moments", "moment_vectors"]
        tables += ["archived", "archived_concepts", "sessions"]
        with self._mapped("purge"), self._pool.connection() as conn:
            self._wait_for_older_transactions(conn)
            for table in tables:
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
        started = _one(conn, "SELECT clock_timestamp()")
        newest = str(_one(conn, "SELECT pg_current_xact_id()::text"))  # after every delete
        before = "SELECT pg_snapshot_xmin(pg_current_snapshot()) <= %s::xid8"
        deadline = time.monotonic() + wait_s
        while int(_one(conn, older, (started,))) > 0 or _one(conn, before, (newest,)):
            if time.monotonic() > deadline:
                log.warning(
                    "%s: transactions older than the redaction still run after %.0f s; rows "
                    "they may see stay in the files until 'VACUUM FULL' runs again",
                    self.location,
                    wait_s,
                )
                return
            time.sleep(0.05)

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


def _one(conn: psycopg.Connection[Any], statement: str, params: Sequence[Any] = ()) -> Any:
    """The one value ``statement`` selects."""
    row = conn.execute(statement, params).fetchone()
    if row is None:
        raise StorageError(f"{statement!r} selected no row")
    return row[0]


def _writer_lock(conn: psycopg.Connection[Any], schema_name: str | None = None) -> None:
    """Wait for the writer lock of the notebook in ``schema_name`` (by default the
    connection's schema); it is released when the transaction ends."""
    conn.execute(
        "SELECT pg_advisory_xact_lock(%s, hashtext(coalesce(%s, current_schema())))",
        (WRITER_LOCK, schema_name),
    )
