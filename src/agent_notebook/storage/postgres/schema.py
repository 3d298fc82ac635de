"""The PostgreSQL schema as numbered migrations, and the full-text columns of a moment.

``notebook_schema.version`` is the number of migrations applied (the first creates it). The
tables are SQLite's (same rows, :mod:`..rows`), in the connection's schema (``search_path``),
plus what FTS5 keeps inside itself: each moment's index terms as a ``tsvector`` (GIN) and its
length in terms, and the totals BM25 needs (``text_totals``); ``term_docs`` is kept in step
by the backend as on SQLite.

A moment's ``terms`` hold each term once, with positions ``1..tf`` standing for how often it
occurs (a ``tsvector`` keeps at most 256 positions of a lexeme: a term more frequent than
that has its count in ``frequent``). Words longer than a lexeme may be are not indexed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Final

from ...model import DEFAULT_DECAY_RATE, DEFAULT_IMPORTANCE

MIGRATIONS: Final[list[list[str]]] = [
    [
        "CREATE TABLE notebook_schema (version integer NOT NULL)",
        "INSERT INTO notebook_schema (version) VALUES (0)",
        """CREATE TABLE sessions (
            id text PRIMARY KEY,
            started_us bigint NOT NULL,
            body text NOT NULL
        )""",
        'CREATE INDEX sessions_by_start ON sessions (started_us, id COLLATE "C")',
        """CREATE TABLE moments (
            num bigint PRIMARY KEY,           -- the N of m_N
            session_id text NOT NULL,
            ts_us bigint NOT NULL,            -- microseconds since the epoch, UTC
            speaker text NOT NULL,
            role text NOT NULL,
            text text NOT NULL,
            body text NOT NULL,               -- the record as JSON, without content.text
            terms tsvector NOT NULL,          -- index terms, positions 1..tf
            frequent jsonb,                   -- {term: tf} of the terms with tf > 256
            length integer NOT NULL           -- how many terms (BM25's document length)
        )""",
        "CREATE INDEX moments_by_session ON moments (session_id, num)",
        "CREATE INDEX moments_by_time ON moments (ts_us)",
        "CREATE INDEX moments_terms ON moments USING gin (terms)",
        "CREATE TABLE term_docs (term text PRIMARY KEY, docs bigint NOT NULL)",
        """CREATE TABLE text_totals (
            one boolean PRIMARY KEY DEFAULT true CHECK (one),
            docs bigint NOT NULL,             -- moments (FTS5's row count)
            terms bigint NOT NULL             -- their lengths, added up
        )""",
        "INSERT INTO text_totals (docs, terms) VALUES (0, 0)",
        "CREATE TABLE counters (name text PRIMARY KEY, value bigint NOT NULL)",
        "CREATE TABLE concepts (id bigserial PRIMARY KEY, name text NOT NULL UNIQUE)",
        """CREATE TABLE concept_moments (
            concept_id bigint NOT NULL,
            num bigint NOT NULL,
            PRIMARY KEY (concept_id, num)
        )""",
        "CREATE INDEX concept_moments_by_moment ON concept_moments (num)",
        """CREATE TABLE moment_vectors (
            num bigint PRIMARY KEY REFERENCES moments (num) ON DELETE CASCADE,
            model text NOT NULL,
            vector bytea NOT NULL
        )""",
        """CREATE TABLE archived (
            num bigint PRIMARY KEY,           -- the N of m_N
            session_id text NOT NULL,
            body text NOT NULL                -- the ArchiveEntry as JSON
        )""",
        "CREATE INDEX archived_by_session ON archived (session_id)",
        """CREATE TABLE archived_concepts (
            concept_id bigint NOT NULL,
            num bigint NOT NULL,
            PRIMARY KEY (concept_id, num)
        )""",
    ],
]

#: The most positions a ``tsvector`` keeps of one lexeme, and the longest lexeme (bytes).
MAX_POSITIONS: Final = 256
MAX_LEXEME_BYTES: Final = 2046

MOMENT_COLUMNS: Final = "num, session_id, ts_us, speaker, role, text, body, terms, frequent, length"

UPSERT_MOMENT: Final = f"""
    INSERT INTO moments ({MOMENT_COLUMNS})
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s::tsvector, %s::jsonb, %s)
    ON CONFLICT (num) DO UPDATE SET
        session_id = excluded.session_id, ts_us = excluded.ts_us, speaker = excluded.speaker,
        role = excluded.role, text = excluded.text, body = excluded.body,
        terms = excluded.terms, frequent = excluded.frequent, length = excluded.length
"""

#: A moment's :class:`MomentBrief` fields (fields at their defaults are not in the body).
SELECT_BRIEFS: Final = f"""
    SELECT num, session_id, ts_us, role, speaker,
        coalesce((body::jsonb #>> '{{metadata,importance}}')::float8, {DEFAULT_IMPORTANCE}),
        coalesce((body::jsonb #>> '{{metadata,decay_rate}}')::float8, {DEFAULT_DECAY_RATE}),
        coalesce(jsonb_typeof(body::jsonb -> 'redacted'), 'null') != 'null',
        strpos(text, '?') > 0
    FROM moments WHERE num = ANY(%s)"""

#: BM25 as FTS5 computes it (``fts5_aux.c``), term by term in the query's order: parameters
#: the query's terms, their order and IDF, the tsquery of the terms, then the average length.
SCORE: Final = """
    WITH q (term, ord, idf) AS (SELECT * FROM unnest(%s::text[], %s::int[], %s::float8[]))
    SELECT m.num, sum(
        q.idf * ((f.tf * (1.2::float8 + 1.0::float8))
            / (f.tf + 1.2::float8 * (1 - 0.75::float8 + 0.75::float8 * m.length / %s::float8)))
        ORDER BY q.ord) AS score
    FROM moments m
    CROSS JOIN LATERAL unnest(m.terms) AS t (lexeme, positions, weights)
    JOIN q ON q.term = t.lexeme
    CROSS JOIN LATERAL (SELECT coalesce((m.frequent ->> t.lexeme)::float8,
        cardinality(t.positions)::float8) AS tf) f
    WHERE m.terms @@ %s::tsquery"""


def quote(lexeme: str) -> str:
    """``lexeme`` as a quoted lexeme of a ``tsvector`` or ``tsquery`` literal."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def indexable(terms: Iterable[str]) -> list[str]:
    """The terms a ``tsvector`` can hold (a lexeme has at most 2046 bytes)."""
    return [t for t in terms if len(t.encode("utf-8")) <= MAX_LEXEME_BYTES]


def text_columns(terms: list[str]) -> tuple[str, str | None, int]:
    """The ``terms``, ``frequent`` and ``length`` columns of a text with these terms."""
    counts = Counter(indexable(terms))
    parts = []
    frequent: dict[str, int] = {}
    for term, tf in sorted(counts.items()):
        positions = ",".join(str(p) for p in range(1, min(tf, MAX_POSITIONS) + 1))
        parts.append(f"{quote(term)}:{positions}")
        if tf > MAX_POSITIONS:
            frequent[term] = tf
    return " ".join(parts), _json(frequent) if frequent else None, len(terms)


def tsquery(terms: Iterable[str]) -> str:
    """A ``tsquery`` literal matching any of ``terms``."""
    return " | ".join(quote(t) for t in indexable(terms))


def _json(data: dict[str, int]) -> str:
    return json.dumps(data, ensure_ascii=False)
