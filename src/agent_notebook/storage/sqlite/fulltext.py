"""The SQLite backend's derived indexes and its full-text search (FTS5, BM25).

The moment rows are the truth; the full-text index, ``term_docs`` and the concept pairs
are derived from them and cover the moments up to ``upkeep.indexed_through``. A recorded
moment is written alone; its index rows come with the next :meth:`SqliteFullText.settle`,
which every read of those indexes calls first. A crash between a record and its upkeep
loses nothing: the next settle indexes what is above the mark.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ...model import Moment
from ..base import MomentFilter
from ..rows import MOMENT_READ
from ..sql import ranking
from ..sql.backend import NUMBERS_PER_STATEMENT
from ..sql.writes import ConceptPairs
from . import schema
from .connection import SqliteConnection

#: How many postings (moment, term pairs) one search may score; see ``search_text``.
POSTINGS_BUDGET = ranking.POSTINGS_BUDGET
#: Full-text rankings remembered at most (see ``SqliteFullText._ranked``).
RANKINGS_KEPT = 16


class SqliteFullText(SqliteConnection):
    """Index upkeep (full text, term counts, concept pairs) and the search by words."""

    #: Recent full-text rankings: (statement, params) -> (generation, limit, rows).
    _rankings: dict[tuple[Any, ...], tuple[int, int, list[Any]]]

    # -- deferred index upkeep --------------------------------------------------------------

    def _indexed_through(self) -> int:
        return int(self._conn.execute("SELECT indexed_through FROM upkeep").fetchone()[0])

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
            self._link_concepts("concept_moments", sorted(pairs))
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

    def _index_terms(
        self, moments: Sequence[Moment], replaced: dict[int, Moment], removed: int = 0
    ) -> None:
        # FTS5 keeps its own document count and lengths: only term_docs follows a write.
        self._add_term_docs(ranking.frequency_change(moments, replaced, self._terms))

    def _add_term_docs(self, change: Counter[str]) -> None:
        self._conn.executemany(
            "INSERT INTO term_docs (term, docs) VALUES (?, ?) "
            "ON CONFLICT (term) DO UPDATE SET docs = docs + excluded.docs",
            sorted(item for item in change.items() if item[1]),  # in key order: fewer pages
        )

    def _unlink_concepts(self, pairs: Sequence[tuple[str, int]]) -> None:
        self._conn.executemany(
            "DELETE FROM concept_moments WHERE num = ? "
            "AND concept_id = (SELECT id FROM concepts WHERE name = ?)",
            [(num, name) for name, num in pairs],
        )

    def _link_concepts(self, table: ConceptPairs, pairs: Sequence[tuple[str, int]]) -> None:
        self._conn.executemany(
            schema.INSERT_CONCEPT,
            [(name,) for name in dict.fromkeys(c for c, _ in pairs)],
        )
        self._conn.executemany(
            f"INSERT OR IGNORE INTO {table} (concept_id, num) "
            "SELECT id, ? FROM concepts WHERE name = ?",
            [(num, name) for name, num in pairs],
        )

    # -- search -----------------------------------------------------------------------------

    def term_documents(self, query: str) -> tuple[int, dict[str, int]] | None:
        self.settle()
        cipher = self.cipher
        words, _ = ranking.query_words(query, None if cipher is None else cipher.token)
        # the newest number stands for the count, as in search_text (count(*) reads them all)
        total = self._count("SELECT coalesce(max(num), 0) FROM moments")
        return total, self._term_docs(list(words))

    def _count(self, statement: str) -> int:
        return int(self._query(statement)[0][0])

    def _term_docs(self, stems: list[str]) -> dict[str, int]:
        docs: dict[str, int] = {}
        for start in range(0, len(stems), NUMBERS_PER_STATEMENT):  # SQLite caps parameters
            part = stems[start : start + NUMBERS_PER_STATEMENT]
            marks = ",".join("?" * len(part))
            docs.update(
                self._query(
                    f"SELECT term, docs FROM term_docs WHERE term IN ({marks}) AND docs > 0",
                    part,
                )
            )
        return docs

    def search_text(self, query: str, where: MomentFilter, limit: int) -> list[tuple[str, float]]:
        """BM25 over FTS5 with bounded cost: the query's terms are taken by weight (rarity,
        recency in the query) while their postings fit ``POSTINGS_BUDGET``
        (``ranking.choose_terms``). When even the first is over budget, only the newest
        moments count."""
        self.settle()
        # FTS5 stems the words of a MATCH itself; term_docs is keyed by their stems.
        cipher = self.cipher
        words, order = ranking.query_words(query, None if cipher is None else cipher.token)
        if not words:
            return []
        docs = self._term_docs(list(words))
        total = self._count("SELECT coalesce(max(num), 0) FROM moments")
        chosen, postings = ranking.choose_terms(order, docs, total, POSTINGS_BUDGET)
        if not chosen:
            return []
        # bm25() is computed once per row (ordered by its alias), and the moments table is
        # joined only to filter: a full-text row always has its moment (the triggers), and
        # reading each match's row doubled the cost of a search at 100k moments.
        conditions, values = self._dialect.filter(where)
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
        found = self._ranked(" ".join(statement), params, limit)
        return [(f"m_{num}", -float(score)) for num, score in found]

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

    # -- key rotation (SqlKeyRotation.reseal) -----------------------------------------------

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
