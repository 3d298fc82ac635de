"""The SQLite backend, the embedded default: one file, WAL, real transactions, FTS5.

Writers take the database's write lock at the start of the outermost ``atomic()`` block
(``BEGIN IMMEDIATE``) and wait for it up to ``busy_timeout``; nested blocks are savepoints.
The file is created owner-only before SQLite opens it, and SQLite gives its ``-wal`` and
``-shm`` files the database file's permissions.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from ...core.files import ensure_private_dir, ensure_private_file, register_live_database
from ...errors import InvalidInput, StorageError
from ...model import (
    CUT_SPEAKER,
    ArchiveEntry,
    ConceptEntry,
    Moment,
    MomentContent,
    Session,
    moment_number,
)
from .. import sql
from ..base import Activity, Capabilities, MomentFilter
from ..rows import MOMENT_READ
from ..sql import concept_entry as _concept_entry
from ..sqlbase import SqlReads
from . import schema, sealed

if TYPE_CHECKING:
    from ...core.crypto import Cipher

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]

#: How many postings (moment, term pairs) one search may score; see ``search_text``.
POSTINGS_BUDGET = sql.POSTINGS_BUDGET
#: Full-text rankings remembered at most (see ``SqliteBackend._ranked``).
RANKINGS_KEPT = 16
#: :meth:`SqliteBackend.fold_log` checkpoints the log on every this many calls (a chat turn
#: adds some 40 pages to it; SQLite's own checkpoint runs in the commit that passes 1,000).
FOLD_LOG_EVERY = 8


class SqliteBackend(SqlReads):
    _upsert_moment = schema.UPSERT_MOMENT
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
        self._owner: int | None = None  # the thread whose transaction is open
        self._savepoints = itertools.count()
        self._reader: sqlite3.Connection | None = None
        self._reader_lock = threading.Lock()
        self._fold_calls = 0
        #: Recent full-text rankings: (statement, params) -> (generation, limit, rows).
        self._rankings: dict[tuple[Any, ...], tuple[int, int, list[Any]]] = {}
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
                # Reads outside a transaction go here: WAL lets them see the last commit
                # while a writer (the embedding worker, say) holds the write connection.
                self._reader = sqlite3.connect(
                    self.path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_s
                )
                self._reader.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        self._check_sealing()

    @property
    def location(self) -> str:
        return self.path

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection (autocommit), for code that shares the file."""
        return self._conn

    # -- plumbing ---------------------------------------------------------------------------

    @contextmanager
    def _mapped(self, doing: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as err:
            hint = ""
            if "locked" in str(err) or "busy" in str(err):
                hint = "; another process held the write lock too long, retry"
            raise StorageError(f"{self.path}: {doing} failed: {err}{hint}") from err

    def _migrate(self) -> None:
        with self.atomic():
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            for number, statements in enumerate(schema.MIGRATIONS[version:], start=version + 1):
                for statement in statements:
                    self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {number}")

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

    def _query(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        """Rows of ``statement``: inside this thread's transaction from the write connection
        (it sees what the transaction wrote), else from the read connection, without waiting
        for another thread's transaction."""
        if self._reader is not None and self._owner != threading.get_ident():
            with self._reader_lock, self._mapped("read"):
                return self._reader.execute(statement, params).fetchall()
        with self._lock, self._mapped("read"):
            return self._conn.execute(statement, params).fetchall()

    def _rows_by_num(self, select: str, nums: Sequence[int]) -> list[Any]:
        """Rows of ``select`` (ending in ``WHERE num IN``) for ``nums``, in chunks: SQLite
        caps the number of parameters of a statement."""
        rows: list[Any] = []
        for start in range(0, len(nums), 500):
            chunk = nums[start : start + 500]
            rows += self._query(f"{select} ({','.join('?' * len(chunk))})", chunk)
        return rows

    def _check_sealing(self) -> None:
        """Refuse at open, before any write, a notebook sealed with another key (or
        sealed at all, without a key): the newest moment and session tell."""
        for table in ("moments", "sessions"):
            rows = self._query(f"SELECT body FROM {table} ORDER BY rowid DESC LIMIT 1")
            if rows:
                sealed.check_key(self.cipher, rows[0][0], self.path)

    def _moment_row(self, moment: Moment) -> tuple[int, str, int, str, str, str, str]:
        if self.cipher is None:
            return schema.moment_row(moment)
        return sealed.moment_row(self.cipher, moment)

    def _moments_from(self, rows: list[Any]) -> list[Moment]:
        try:
            return [sealed.moment_from_row(self.cipher, row) for row in rows]
        except (ValueError, ValidationError) as err:
            raise StorageError(f"{self.path}: a stored moment does not load: {err}") from err

    # -- counters ---------------------------------------------------------------------------

    def next_number(self, counter: str, count: int = 1) -> int:
        with self.atomic():
            (last,) = self._conn.execute(
                "INSERT INTO counters (name, value) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET value = value + excluded.value "
                "RETURNING value",
                (counter, count),
            ).fetchone()
            return int(last) - count + 1

    def raise_counter(self, counter: str, at_least: int) -> None:
        with self.atomic():
            self._conn.execute(
                "INSERT INTO counters (name, value) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)",
                (counter, at_least),
            )

    def counters(self) -> dict[str, int]:
        return dict(self._query("SELECT name, value FROM counters ORDER BY name"))

    # -- sessions ---------------------------------------------------------------------------

    def put_session(self, session: Session) -> None:
        with self.atomic():
            self._conn.execute(
                "INSERT INTO sessions (id, started_us, body) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET started_us = excluded.started_us, "
                "body = excluded.body",
                self._session_row(session),
            )

    def _session_row(self, session: Session) -> tuple[str, int, str]:
        row = schema.session_row(session)
        if self.cipher is None:
            return row
        return (row[0], row[1], sealed.session_body(self.cipher, session))

    def list_sessions(self, offset: int = 0, limit: int | None = None) -> list[Session]:
        rows = self._query(
            "SELECT body FROM sessions ORDER BY started_us, id LIMIT ? OFFSET ?",
            (_limit(limit), offset),
        )
        return [sealed.session_from_row(self.cipher, body) for (body,) in rows]

    def delete_session(self, session_id: str) -> None:
        with self.atomic():
            rows = self._query("SELECT num FROM moments WHERE session_id = ?", (session_id,))
            self._remove_moments([num for (num,) in rows])
            archived = [e.number for e in self.list_archived() if e.session == session_id]
            gone = [(num,) for num in archived]
            self._conn.executemany("DELETE FROM archived_concepts WHERE num = ?", gone)
            self._conn.executemany("DELETE FROM archived WHERE num = ?", gone)
            self._conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    def _remove_moments(self, nums: Sequence[int]) -> None:
        """Delete moments and what is derived from them: their words' document frequencies,
        full-text rows (by trigger), concept pairs and vectors."""
        self._index_pending()  # so every moment removed has its index rows to take out
        gone = self._moments_by_num(nums)
        emptied = [m.model_copy(update={"content": MomentContent()}) for m in gone.values()]
        self._index_terms(emptied, gone)  # their words leave the document frequencies
        rows = [(num,) for num in gone]
        self._conn.executemany("DELETE FROM concept_moments WHERE num = ?", rows)
        self._conn.executemany("DELETE FROM moment_vectors WHERE num = ?", rows)
        self._conn.executemany("DELETE FROM moments WHERE num = ?", rows)

    # -- deferred index upkeep --------------------------------------------------------------
    # The moment rows are the truth; the full-text index, ``term_docs`` and the concept pairs
    # are derived from them and cover the moments up to ``upkeep.indexed_through``. A crash
    # between a record and its upkeep loses nothing: the next settle indexes what is above.

    def _indexed_through(self) -> int:
        return int(self._conn.execute("SELECT indexed_through FROM upkeep").fetchone()[0])

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

    def settle(self) -> None:
        """Index the moments recorded since the last upkeep, in one transaction. Reads that
        use the derived indexes call it first, so they never miss a committed moment. Its
        commit does not wait for the disk (``synchronous = NORMAL`` in WAL mode): what it
        writes is derived, and a power cut that loses it only leaves the mark lower."""
        pending = self._query(
            "SELECT EXISTS (SELECT 1 FROM moments WHERE num > (SELECT indexed_through FROM upkeep))"
        )[0][0]
        if pending:
            with self._mapped("index upkeep"), self._derived_transaction():
                self._index_pending()

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

    def _index_pending(self, batch: int = 2000) -> int:
        """Index every moment above the mark (inside a transaction); return the new mark."""
        through = self._indexed_through()
        while rows := self._conn.execute(
            f"SELECT {MOMENT_READ} FROM moments WHERE num > ? ORDER BY num LIMIT ?",
            (through, batch),
        ).fetchall():
            last = rows[-1][0]
            self._conn.execute(
                "INSERT INTO moments_fts (rowid, text) SELECT num, text FROM moments "
                "WHERE num > ? AND num <= ?",
                (through, last),
            )
            counts: Counter[str] = Counter()
            pairs: list[tuple[str, int]] = []
            for num, text, concepts in self._index_inputs(rows):
                counts.update(set(self._terms(text)))
                pairs += [(self._name(c), num) for c in concepts]
            self._add_term_docs(counts)
            self._add_concept_pairs(sorted(pairs))
            through = last
        self._conn.execute("UPDATE upkeep SET indexed_through = ?", (through,))
        return through

    def _index_inputs(self, rows: list[Any]) -> list[tuple[int, str, list[str]]]:
        """``(number, text, concepts)`` of stored rows (:data:`MOMENT_READ`'s columns); a
        plain body is read as JSON alone (no moment is validated), a sealed one is opened."""
        if self.cipher is None:
            return [
                (num, text, json.loads(body).get("metadata", {}).get("concepts", []))
                for num, *_, text, body in rows
            ]
        moments = self._moments_from(rows)
        return [(m.number, m.content.text, list(m.metadata.concepts)) for m in moments]

    # -- moments ----------------------------------------------------------------------------

    def put_moments(self, moments: Sequence[Moment]) -> None:
        """New moments above the indexed ones are written alone (their index rows come with
        the next :meth:`settle`); replacing a moment, or writing one below that mark (an
        import), settles first and keeps the indexes in step at once."""
        if not moments:
            return
        with self.atomic():
            replaced = self._replaced(moments)
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
            texts = {m.number: m.content.text for m in moments}
            self._conn.executemany(  # a vector describes the text it was made from
                "DELETE FROM moment_vectors WHERE num = ?",
                [(num,) for num, old in replaced.items() if old.content.text != texts[num]],
            )

    def _replaced(self, moments: Sequence[Moment]) -> dict[int, Moment]:
        """The stored versions of the moments about to be overwritten, by number."""
        return self._moments_by_num([m.number for m in moments])

    def _brief_rows(self, nums: Sequence[int]) -> list[Any]:
        return self._rows_by_num(schema.SELECT_BRIEFS, nums)

    def _moments_by_num(self, nums: Sequence[int]) -> dict[int, Moment]:
        """The stored moments among ``nums``, by number."""
        rows = self._rows_by_num(f"SELECT {MOMENT_READ} FROM moments WHERE num IN", nums)
        return {row[0]: moment for row, moment in zip(rows, self._moments_from(rows), strict=True)}

    def _index_terms(self, moments: Sequence[Moment], replaced: dict[int, Moment]) -> None:
        self._add_term_docs(sql.frequency_change(moments, replaced, self._terms))

    def _add_term_docs(self, change: Counter[str]) -> None:
        self._conn.executemany(
            "INSERT INTO term_docs (term, docs) VALUES (?, ?) "
            "ON CONFLICT (term) DO UPDATE SET docs = docs + excluded.docs",
            sorted(item for item in change.items() if item[1]),  # in key order: fewer pages
        )

    def _index_concepts(self, moments: Sequence[Moment], replaced: dict[int, Moment]) -> None:
        gone = [(name, num) for num, old in replaced.items() for name in old.metadata.concepts]
        self._conn.executemany(
            "DELETE FROM concept_moments WHERE num = ? "
            "AND concept_id = (SELECT id FROM concepts WHERE name = ?)",
            [(num, self._name(name)) for name, num in gone],
        )
        self._add_concept_pairs(
            [(self._name(c), m.number) for m in moments for c in m.metadata.concepts]
        )

    def _add_concept_pairs(self, pairs: Sequence[tuple[str, int]]) -> None:
        """Index moment ``num`` under concept ``name`` (stored form) for each pair."""
        self._conn.executemany(
            schema.INSERT_CONCEPT,
            [(name,) for name in dict.fromkeys(c for c, _ in pairs)],
        )
        self._conn.executemany(
            "INSERT OR IGNORE INTO concept_moments (concept_id, num) "
            "SELECT id, ? FROM concepts WHERE name = ?",
            [(num, name) for name, num in pairs],
        )

    def list_moments(
        self, session_id: str | None = None, offset: int = 0, limit: int | None = None
    ) -> list[Moment]:
        params: tuple[str, ...] = ()
        if session_id is None:
            sql = f"SELECT {MOMENT_READ} FROM moments ORDER BY num LIMIT ? OFFSET ?"
        else:
            sql = (
                f"SELECT {MOMENT_READ} FROM moments WHERE session_id = ? "
                "ORDER BY num LIMIT ? OFFSET ?"
            )
            params = (session_id,)
        return self._moments_from(self._query(sql, (*params, _limit(limit), offset)))

    def session_activity_after(self, session_id: str, after: int) -> list[Activity]:
        if self.cipher is not None:  # sealed text and bodies: read through the moments
            return super().session_activity_after(session_id, after)
        rows = self._query(  # read in SQL: no moment is parsed
            "SELECT num, ts_us, text FROM moments WHERE session_id = ? AND num > ? "
            "AND json_type(body, '$.rollup') IS NULL ORDER BY num",
            (session_id, after),
        )
        return [Activity(num, schema.from_us(us), text) for num, us, text in rows]

    def media_signatures(self, kind: Literal["image", "audio"]) -> list[tuple[int, str]]:
        if self.cipher is not None:  # sealed bodies: read through the moments, opened
            return super().media_signatures(kind)
        if kind not in ("image", "audio"):
            raise InvalidInput(f"media kind {kind!r} is not image or audio")
        path = f"$.content.{kind}_signature"  # read in SQL: no moment is parsed
        rows = self._query(
            "SELECT num, json_extract(body, ?) AS sig FROM moments WHERE sig IS NOT NULL "
            "AND sig != '' ORDER BY num",
            (path,),
        )
        return [(int(num), str(sig)) for num, sig in rows]

    # -- text vectors -----------------------------------------------------------------------

    def put_vectors(self, model: str, vectors: Sequence[tuple[int, str, bytes]]) -> None:
        # In number order: rows inserted out of order split the table's pages half full (the
        # embedder takes a batch shortest text first), a fifth more bytes per vector.
        vectors = sorted(vectors, key=lambda v: v[0])
        if (cipher := self.cipher) is not None:  # the text column holds the index's tokens
            vectors = [
                (num, sealed.index_text(cipher, text), cipher.encrypt(blob, sealed.vector_aad(num)))
                for num, text, blob in vectors
            ]
        with self._derived_transaction():  # a vector is made again from the text
            self._conn.execute(schema.INSERT_VECTOR_MODEL, (model, model))
            self._conn.executemany(
                "INSERT INTO moment_vectors (num, model_id, vector) "
                f"SELECT num, {schema.MODEL_ID}, ? FROM moments WHERE num = ? AND text = ? "
                "ON CONFLICT (num) DO UPDATE SET model_id = excluded.model_id, "
                "vector = excluded.vector",
                [(model, blob, num, text) for num, text, blob in vectors],
            )

    def get_vectors(
        self, model: str, after: int = 0, limit: int | None = None
    ) -> list[tuple[int, bytes]]:
        rows: list[tuple[int, bytes]] = self._query(
            f"SELECT num, vector FROM moment_vectors WHERE model_id = {schema.MODEL_ID} "
            "AND num > ? "
            "ORDER BY num LIMIT ?",
            (model, after, _limit(limit)),
        )
        if self.cipher is not None:
            rows = [(n, self._open_vector(n, v)) for n, v in rows]
        return rows

    def vector_models(self) -> list[str]:
        rows = self._query(
            "SELECT name FROM vector_models m WHERE EXISTS "
            "(SELECT 1 FROM moment_vectors v WHERE v.model_id = m.id) ORDER BY name"
        )
        return [str(model) for (model,) in rows]

    def unembedded(self, model: str, limit: int | None = None, after: int = 0) -> list[int]:
        rows = self._query(
            "SELECT m.num FROM moments m WHERE m.num > ? AND m.speaker != ? AND NOT EXISTS "
            f"(SELECT 1 FROM moment_vectors v WHERE v.num = m.num AND v.model_id = "
            f"{schema.MODEL_ID}) ORDER BY m.num LIMIT ?",
            (after, CUT_SPEAKER, model, _limit(limit)),
        )
        return [num for (num,) in rows]

    # -- concepts ---------------------------------------------------------------------------

    def concept_members(self, concept: str, at_most: int) -> list[int] | None:
        self.settle()
        # A concept pair goes with its moment in one transaction (``_remove_moments``), so
        # the moments table is not read: a third of the concept signal's cost at 100k.
        rows = self._query(
            "SELECT cm.num FROM concepts c JOIN concept_moments cm ON cm.concept_id = c.id "
            "WHERE c.name = ? ORDER BY cm.num LIMIT ?",
            (self._name(concept), at_most + 1),
        )
        return None if len(rows) > at_most else [num for (num,) in rows]

    def list_concepts(self, offset: int = 0, limit: int | None = None) -> list[ConceptEntry]:
        self.settle()
        if self.cipher is not None:
            return self._list_sealed_concepts(offset, limit)
        rows = self._query(
            "WITH page AS (SELECT id, name FROM concepts "
            "  WHERE EXISTS (SELECT 1 FROM concept_moments cm WHERE cm.concept_id = id) "
            "  ORDER BY name LIMIT ? OFFSET ?) "
            "SELECT page.name, cm.num, m.session_id FROM page "
            "JOIN concept_moments cm ON cm.concept_id = page.id JOIN moments m ON m.num = cm.num "
            "ORDER BY page.name, cm.num",
            (_limit(limit), offset),
        )
        return [
            _concept_entry(name, [(num, sid) for _, num, sid in group])
            for name, group in itertools.groupby(rows, key=lambda r: r[0])
        ]

    def _list_sealed_concepts(self, offset: int, limit: int | None) -> list[ConceptEntry]:
        """Sealed names do not sort in SQL: every name is opened and sorted here, then the
        page's moments are read (a listing costs time in the number of concepts)."""
        named = self._query(
            "SELECT id, name FROM concepts WHERE EXISTS "
            "(SELECT 1 FROM concept_moments cm WHERE cm.concept_id = id)"
        )
        ordered = sorted((self._unname(name), cid) for cid, name in named)
        page = ordered[offset:] if limit is None else ordered[offset : offset + limit]
        entries = []
        for name, cid in page:
            rows = self._query(
                "SELECT cm.num, m.session_id FROM concept_moments cm "
                "JOIN moments m ON m.num = cm.num WHERE cm.concept_id = ? ORDER BY cm.num",
                (cid,),
            )
            entries.append(_concept_entry(name, rows))
        return entries

    # -- search -----------------------------------------------------------------------------

    def search_text(self, query: str, where: MomentFilter, limit: int) -> list[tuple[str, float]]:
        """BM25 over FTS5 with bounded cost: the query's terms are taken by weight (rarity,
        recency in the query) while their postings fit ``POSTINGS_BUDGET``
        (``sql.choose_terms``). When even the first is over budget, only the newest moments
        count."""
        self.settle()
        # FTS5 stems the words of a MATCH itself; term_docs is keyed by their stems.
        words, order = sql.query_words(query, None if self.cipher is None else self.cipher.token)
        if not words:
            return []
        stems = list(words)
        docs: dict[str, int] = {}
        for start in range(0, len(stems), 500):  # SQLite caps a statement's parameters
            part = stems[start : start + 500]
            marks = ",".join("?" * len(part))
            docs.update(
                self._query(
                    f"SELECT term, docs FROM term_docs WHERE term IN ({marks}) AND docs > 0",
                    part,
                )
            )
        total = int(self._query("SELECT coalesce(max(num), 0) FROM moments")[0][0])
        chosen, postings = sql.choose_terms(order, docs, total, POSTINGS_BUDGET)
        if not chosen:
            return []
        # bm25() is computed once per row (ordered by its alias), and the moments table is
        # joined only to filter: a full-text row always has its moment (the triggers), and
        # reading each match's row doubled the cost of a search at 100k moments.
        conditions, values = sql.filter_sql(where)
        statement = [
            "SELECT moments_fts.rowid, bm25(moments_fts) AS rank_ FROM moments_fts",
            "JOIN moments m ON m.num = moments_fts.rowid" if conditions else "",
            "WHERE moments_fts MATCH ?",
        ]
        params: list[Any] = [" OR ".join(f'"{words[t]}"' for t in chosen)]
        if postings > POSTINGS_BUDGET:
            statement.append("AND moments_fts.rowid > ?")
            params.append(total - POSTINGS_BUDGET)
        statement += [f"AND {c}" for c in conditions]
        params += values
        statement.append("ORDER BY rank_, moments_fts.rowid LIMIT ?")
        rows = self._ranked(" ".join(statement), params, limit)
        return [(f"m_{num}", -float(score)) for num, score in rows]

    def _ranked(self, statement: str, params: list[Any], limit: int) -> list[Any]:
        """The first ``limit`` rows of a full-text ranking (``statement`` ends in ``LIMIT
        ?``), remembered while the file is unchanged: one search often ranks the same terms
        twice (the query's words, then its words that are not stopwords, which at scale
        are the same terms within the budget), and a ranking is most of its cost."""
        generation = self._generation()
        key = (statement, tuple(params))
        memo = self._rankings.get(key)
        if generation is not None and memo is not None and memo[0] == generation:
            _, had, rows = memo
            if limit <= had or len(rows) < had:  # a prefix, or the whole ranking
                return rows[:limit]
        rows = self._query(statement, [*params, limit])
        if generation is not None:
            if len(self._rankings) >= RANKINGS_KEPT:
                self._rankings.clear()
            self._rankings[key] = (generation, limit, rows)
        return rows

    def forget_rankings(self) -> None:
        """Drop the remembered rankings (a benchmark timing each search from cold)."""
        self._rankings.clear()

    def _generation(self) -> int | None:
        """A number that changes with every commit to the file, by any connection (the read
        connection's ``data_version``), or None where reads are not remembered: in memory,
        and inside this thread's transaction (its writes are not committed)."""
        if self._reader is None or self._owner == threading.get_ident():
            return None
        return int(self._query("PRAGMA data_version")[0][0])

    # -- the cold archive ---------------------------------------------------------------------

    def archive_moments(self, entries: Sequence[ArchiveEntry]) -> None:
        with self.atomic():
            self._remove_moments([e.number for e in entries])
            self._conn.executemany(
                "INSERT INTO archived (num, body) VALUES (?, ?) "
                "ON CONFLICT (num) DO UPDATE SET body = excluded.body",
                [self._archive_row(e) for e in entries],
            )
            self._conn.executemany(
                "DELETE FROM archived_concepts WHERE num = ?", [(e.number,) for e in entries]
            )
            pairs = [(self._name(c), e.number) for e in entries for c in e.concepts]
            self._conn.executemany(
                schema.INSERT_CONCEPT,
                [(name,) for name in dict.fromkeys(c for c, _ in pairs)],
            )
            self._conn.executemany(
                "INSERT OR IGNORE INTO archived_concepts (concept_id, num) "
                "SELECT id, ? FROM concepts WHERE name = ?",
                [(num, name) for name, num in pairs],
            )

    def _archive_row(self, entry: ArchiveEntry) -> tuple[int, str]:
        if self.cipher is None:
            return schema.archive_row(entry)
        return (entry.number, sealed.archive_body(self.cipher, entry))

    def get_archived(self, moment_ids: Sequence[str]) -> list[ArchiveEntry]:
        nums = [moment_number(mid) for mid in moment_ids]
        rows = self._rows_by_num("SELECT num, body FROM archived WHERE num IN", nums)
        found = {num: sealed.archive_from_row(self.cipher, body) for num, body in rows}
        return [found[n] for n in nums if n in found]

    def list_archived(self, offset: int = 0, limit: int | None = None) -> list[ArchiveEntry]:
        rows = self._query(
            "SELECT body FROM archived ORDER BY num LIMIT ? OFFSET ?", (_limit(limit), offset)
        )
        return [sealed.archive_from_row(self.cipher, body) for (body,) in rows]

    # -- key rotation (SqlReads.reseal) ---------------------------------------------------------

    def _write(self, statement: str, params: Sequence[Any] = ()) -> None:
        self._conn.execute(statement, params)

    def _write_many(self, statement: str, params: Sequence[Sequence[Any]]) -> None:
        self._conn.executemany(statement, params)

    def _resealed(self) -> None:
        # Count the new tokens' documents from the full-text index.
        self._conn.execute("DELETE FROM term_docs")
        self._conn.execute(
            "CREATE VIRTUAL TABLE temp.moments_vocab USING fts5vocab (main, moments_fts, 'row')"
        )
        self._conn.execute(
            "INSERT INTO term_docs (term, docs) SELECT term, doc FROM temp.moments_vocab"
        )
        self._conn.execute("DROP TABLE temp.moments_vocab")
        # The replaced rows' tokens stay in the older full-text segments until they are
        # merged: merge them all now (and zero what that frees), so none stays readable.
        self._conn.execute("PRAGMA secure_delete = ON")
        self._conn.execute("INSERT INTO moments_fts (moments_fts) VALUES ('optimize')")

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

    def close(self) -> None:
        with self._lock, self._reader_lock:
            if self._reader is not None:
                self._reader.close()
            self._conn.close()


def _limit(limit: int | None) -> int:
    return -1 if limit is None else limit


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
