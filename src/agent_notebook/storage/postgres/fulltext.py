"""The PostgreSQL backend's full-text index and search.

Lexical search ranks with FTS5's BM25 from statistics this backend keeps (document
frequencies in ``term_docs``, each moment's length, the totals in ``text_totals``) over the
same index terms as SQLite, so both order the same notebook the same way; the GIN index
over each moment's ``tsvector`` finds the candidates. Every write keeps the statistics in
step, in its own transaction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...model import Moment
from .. import rows
from ..base import MomentFilter
from ..sql import ranking
from . import schema
from .connection import PostgresConnection

if TYPE_CHECKING:
    import psycopg

#: How many postings (moment, term pairs) one search may score; see ``ranking.choose_terms``.
POSTINGS_BUDGET = ranking.POSTINGS_BUDGET


class PostgresFullText(PostgresConnection):
    """The term statistics a write changes, their rebuild, and the search by words."""

    def _text_columns(self, moment: Moment) -> tuple[Any, ...]:
        return schema.text_columns(self._terms(moment.content.text))

    def _index_terms(
        self, moments: Sequence[Moment], replaced: dict[int, Moment], removed: int = 0
    ) -> None:
        """Keep the document frequencies and the totals BM25 reads in step with a write of
        ``moments`` over ``replaced`` (``removed`` of them are being deleted)."""
        change = ranking.frequency_change(moments, replaced, self._terms)
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

    def term_documents(self, query: str) -> tuple[int, dict[str, int]] | None:
        cipher = self.cipher
        words, _ = ranking.query_words(query, None if cipher is None else cipher.token)
        with self._mapped("search"), self._connection(snapshot=True) as conn:
            docs = _term_docs(conn, list(words))
            totals = conn.execute("SELECT docs FROM text_totals").fetchone()
        return (int(totals[0]) if totals is not None else 0), docs

    def search_text(self, query: str, where: MomentFilter, limit: int) -> list[tuple[str, float]]:
        """BM25 as FTS5 ranks it, with SQLite's bounded cost (``ranking.choose_terms``): the
        same terms are chosen, weighed from the same statistics, in the same order."""
        cipher = self.cipher
        words, order = ranking.query_words(query, None if cipher is None else cipher.token)
        if not words:
            return []
        with self._mapped("search"), self._connection(snapshot=True) as conn:
            docs = _term_docs(conn, list(words))
            newest = conn.execute("SELECT coalesce(max(num), 0) FROM moments").fetchone()
            total = int(newest[0]) if newest is not None else 0
            chosen, postings = ranking.choose_terms(order, docs, total, POSTINGS_BUDGET)
            totals = conn.execute("SELECT docs, terms FROM text_totals").fetchone()
            if not chosen or totals is None or totals[0] <= 0:
                return []
            documents, total_terms = int(totals[0]), int(totals[1])
            idf = [ranking.bm25_idf(documents, docs[t]) for t in chosen]
            statement = [schema.score_sql(len(chosen))]
            params = schema.score_params(chosen, idf, total_terms / documents)
            if postings > POSTINGS_BUDGET:
                statement.append("AND m.num > (SELECT max(num) FROM moments) - %s")
                params.append(POSTINGS_BUDGET)
            conditions, values = self._dialect.filter(where)
            statement += [f"AND {c}" for c in conditions]
            params += values
            statement.append("ORDER BY score DESC, m.num LIMIT %s")
            params.append(limit)
            found = conn.execute(" ".join(statement), params).fetchall()
        return [(f"m_{num}", float(score)) for num, score in found]

    def _resealed(self) -> None:
        """Count each term's documents again from the moments' ``tsvector`` (what the
        index holds: every term of an encrypted notebook is a short keyed token)."""
        self._write("DELETE FROM term_docs")
        self._write(
            "INSERT INTO term_docs (term, docs) SELECT t, count(*) FROM moments, "
            "unnest(tsvector_to_array(terms)) AS t GROUP BY t"
        )


def _term_docs(conn: Any, terms: list[str]) -> dict[str, int]:
    """How many moments hold each of ``terms`` (those none holds left out)."""
    found = conn.execute(
        "SELECT term, docs FROM term_docs WHERE term = ANY(%s::text[]) AND docs > 0", (terms,)
    ).fetchall()
    return {str(term): int(docs) for term, docs in found}
