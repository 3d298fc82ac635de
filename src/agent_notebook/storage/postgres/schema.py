"""The PostgreSQL schema as numbered migrations, and the full-text columns of a moment.

``notebook_schema.version`` is the number of migrations applied (the first creates it). The
tables are SQLite's (same rows, :mod:`..rows`), in the connection's schema (``search_path``),
plus what FTS5 keeps inside itself: each moment's index terms as a ``tsvector`` (GIN) and its
length in terms, and the totals BM25 needs (``text_totals``); ``term_docs`` is kept in step
by the backend as on SQLite.

A moment's ``terms`` hold each term once, without positions (nothing searches phrases);
``frequent`` has the counts of the terms it holds more than once, which BM25 reads by name
(reading a count from a ``tsvector`` means unnesting it, far slower). Words longer than a
lexeme may be are not indexed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Final

from ...model import DEFAULT_DECAY_RATE, DEFAULT_IMPORTANCE

#: The columns that hold a moment's words (or what they are made from), in any form.
WORDS_COLUMNS: Final = [
    ("sessions", "body"),
    *(("moments", c) for c in ("speaker", "text", "body", "terms", "frequent")),
    ("term_docs", "term"),
    ("concepts", "name"),
    ("moment_vectors", "vector"),
    ("archived", "body"),
]

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
            terms tsvector NOT NULL,          -- index terms, each once
            frequent jsonb,                   -- {term: tf} of the terms with tf > 1
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
    [  # 2: the API tokens of 'serve', as hashes, shared by every server (privacy.tokens)
        """CREATE TABLE api_tokens (
            role text NOT NULL CHECK (role IN ('owner', 'guest')),
            name text NOT NULL,
            sha256 text NOT NULL,             -- of the token; the token is never stored
            created timestamptz NOT NULL,
            PRIMARY KEY (role, name)
        )""",
        # No column that holds a moment's words is sampled by ANALYZE: pg_statistic would
        # keep copies of them (its most common values, histograms) that a redaction's
        # VACUUM never reaches (a dead statistics row stays in pg_statistic's files).
        *(
            f"ALTER TABLE {table} ALTER COLUMN {column} SET STATISTICS 0"
            for table, column in WORDS_COLUMNS
        ),
    ],
    # 3: vectors as a change log every server's in-process index follows (``seq``), with
    # tombstones for the vectors removed (``vector_drops``), and the embedding claims.
    # ``seq`` is taken by every write of a vector or a tombstone, inside a transaction that
    # holds the notebook's writer lock (``connection.writer_lock``) to its commit: so seqs
    # become visible in the order they were taken, and a reader that has seen seq N can
    # never later find a committed change below N (the usual hazard of a sequence, a
    # transaction committing after a later one). Nothing may write these tables without
    # that lock.
    [
        "CREATE SEQUENCE vector_seq",
        "ALTER TABLE moment_vectors ADD COLUMN seq bigint NOT NULL DEFAULT nextval('vector_seq')",
        "CREATE INDEX moment_vectors_by_seq ON moment_vectors (seq)",
        """CREATE TABLE vector_drops (
            seq bigint PRIMARY KEY DEFAULT nextval('vector_seq'),
            num bigint NOT NULL,
            model text NOT NULL
        )""",
        """CREATE TABLE vector_claims (
            num bigint NOT NULL,
            model text NOT NULL,
            owner text NOT NULL,              -- the claiming backend instance
            until timestamptz NOT NULL,       -- the lease: after it, anyone may take it
            PRIMARY KEY (num, model)
        )""",
    ],
    # 4: the index terms are FTS5's own Porter stems (snowball's, before, differed on a few
    # words): a notebook that has moments is marked, and the backend computes its terms,
    # counts and totals again (``PostgresBackend._rebuild_text_index``) before anything reads.
    [
        "CREATE TABLE text_index_stale (one boolean PRIMARY KEY DEFAULT true CHECK (one))",
        "INSERT INTO text_index_stale SELECT true WHERE EXISTS (SELECT 1 FROM moments)",
    ],
    # 5: tombstones are pruned once older than ``DROPS_KEPT`` (``vectors._drop_vectors``);
    # ``vector_drops_horizon`` holds the newest seq pruned, and an index that has not seen
    # that far is loaded again from the start (``VectorChangesPruned``). The tombstones
    # already there count from now. (Idempotent: a test replays it on a faked version.)
    [
        "ALTER TABLE vector_drops ADD COLUMN IF NOT EXISTS at timestamptz NOT NULL DEFAULT now()",
        "CREATE TABLE IF NOT EXISTS vector_drops_horizon (seq bigint NOT NULL)",
        "INSERT INTO vector_drops_horizon SELECT 0 "
        "WHERE NOT EXISTS (SELECT 1 FROM vector_drops_horizon)",
    ],
    # 6: the web pages' sign-in sessions, beside the API tokens (privacy.web_sessions):
    # hashes only, so a session made on one server is honoured (and ended) on every other.
    # (Idempotent, like 5: a test replays the migrations from a faked version.)
    [
        """CREATE TABLE IF NOT EXISTS web_sessions (
            sha256 text PRIMARY KEY,          -- of the session id; the id is never stored
            token_sha256 text NOT NULL,       -- of the token signed in with
            created timestamptz NOT NULL
        )""",
    ],
    # 7: the fact index (issue 39): each moment filed under the subjects its claims are
    # about (``metadata.fact_keys``); an older notebook's moments are filed by
    # ``agent-notebook facts reindex``. (Idempotent, like 5.)
    [
        """CREATE TABLE IF NOT EXISTS fact_keys (
            name text NOT NULL,
            num bigint NOT NULL,
            PRIMARY KEY (name, num)
        )""",
        # a key holds words: no statistics copies of them (see migration 2)
        "ALTER TABLE fact_keys ALTER COLUMN name SET STATISTICS 0",
    ],
    # 8: what a guest token may read (privacy.guest_scope, as JSON; NULL: everything), so a
    # scope set on one server holds on every other. It names concepts: not sampled either.
    [
        "ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS scope text",
        "ALTER TABLE api_tokens ALTER COLUMN scope SET STATISTICS 0",
    ],
]

#: The longest lexeme a ``tsvector`` holds (bytes).
MAX_LEXEME_BYTES: Final = 2046

MOMENT_COLUMNS: Final = "num, session_id, ts_us, speaker, role, text, body, terms, frequent, length"

#: Writes a new moment row (a number already stored fails).
INSERT_MOMENT: Final = (
    f"INSERT INTO moments ({MOMENT_COLUMNS}) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s::tsvector, %s::jsonb, %s)"
)
UPSERT_MOMENT: Final = f"""
    {INSERT_MOMENT}
    ON CONFLICT (num) DO UPDATE SET
        session_id = excluded.session_id, ts_us = excluded.ts_us, speaker = excluded.speaker,
        role = excluded.role, text = excluded.text, body = excluded.body,
        terms = excluded.terms, frequent = excluded.frequent, length = excluded.length
"""

#: Writes an archive row (:meth:`PostgresBackend._archive_row`'s columns).
UPSERT_ARCHIVED: Final = (
    "INSERT INTO archived (num, session_id, body) VALUES (%s, %s, %s) "
    "ON CONFLICT (num) DO UPDATE SET session_id = excluded.session_id, body = excluded.body"
)

#: A moment's :class:`MomentBrief` fields (fields at their defaults are not in the body).
SELECT_BRIEFS: Final = f"""
    SELECT num, session_id, ts_us, role, speaker,
        coalesce((body::jsonb #>> '{{metadata,importance}}')::float8, {DEFAULT_IMPORTANCE}),
        coalesce((body::jsonb #>> '{{metadata,decay_rate}}')::float8, {DEFAULT_DECAY_RATE}),
        coalesce(jsonb_typeof(body::jsonb -> 'redacted'), 'null') != 'null',
        strpos(text, '?') > 0
    FROM moments WHERE num"""


def score_sql(count: int) -> str:
    """BM25 as FTS5 computes it (``fts5_aux.c``), added up term by term in the query's
    order, for ``count`` terms. Parameters: each term's IDF, the average length, each
    term's tsquery and name, then the tsquery of them all (see :func:`score_params`)."""
    frequencies = ", ".join(
        f"CASE WHEN m.terms @@ %s::tsquery THEN coalesce((m.frequent ->> %s)::float8, 1) "
        f"ELSE 0 END AS tf{i}"
        for i in range(count)
    )
    score = "0::float8"
    for i in range(count):
        score = (
            f"({score} + %s::float8 * ((f.tf{i} * (1.2::float8 + 1.0::float8)) / (f.tf{i} + f.k)))"
        )
    return f"""
    SELECT m.num, {score} AS score FROM moments m
    CROSS JOIN LATERAL (SELECT
        1.2::float8 * (1 - 0.75::float8 + 0.75::float8 * m.length / %s::float8) AS k) n
    CROSS JOIN LATERAL (SELECT n.k AS k, {frequencies}) f
    WHERE m.terms @@ %s::tsquery"""


def score_params(chosen: list[str], idf: list[float], average_length: float) -> list[object]:
    """The parameters of :func:`score_sql` for the ``chosen`` terms."""
    per_term = [value for term in chosen for value in (quote(term), term)]
    return [*idf, average_length, *per_term, tsquery(chosen)]


def quote(lexeme: str) -> str:
    """``lexeme`` as a quoted lexeme of a ``tsvector`` or ``tsquery`` literal."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def indexable(terms: Iterable[str]) -> list[str]:
    """The terms a ``tsvector`` can hold (a lexeme has at most 2046 bytes)."""
    return [t for t in terms if len(t.encode("utf-8")) <= MAX_LEXEME_BYTES]


def text_columns(terms: list[str]) -> tuple[str, str | None, int]:
    """The ``terms``, ``frequent`` and ``length`` columns of a text with these terms."""
    counts = Counter(indexable(terms))
    frequent = {term: tf for term, tf in sorted(counts.items()) if tf > 1}
    lexemes = " ".join(quote(term) for term in sorted(counts))
    return lexemes, _json(frequent) if frequent else None, len(terms)


def tsquery(terms: Iterable[str]) -> str:
    """A ``tsquery`` literal matching any of ``terms``."""
    return " | ".join(quote(t) for t in indexable(terms))


def _json(data: dict[str, int]) -> str:
    return json.dumps(data, ensure_ascii=False)
