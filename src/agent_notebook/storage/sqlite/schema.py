"""The SQLite schema as numbered migrations (row conversions: :mod:`..rows`).

``PRAGMA user_version`` is the number of migrations applied. A moment's text lives in its own
column (the full-text index reads it from there) and is left out of the JSON body, so it is
stored once.
"""

from __future__ import annotations

from typing import Final

from ...core.lexical import FTS5_TOKENIZER
from ...model import DEFAULT_DECAY_RATE, DEFAULT_IMPORTANCE
from ..rows import (  # re-exported: the SQLite modules read them from here
    archive_from_row,
    archive_row,
    from_us,
    moment_from_row,
    moment_row,
    session_from_row,
    session_row,
    to_us,
)

__all__ = [
    "INSERT_MOMENT",
    "MIGRATIONS",
    "MOMENT_COLUMNS",
    "SELECT_BRIEFS",
    "UPSERT_ARCHIVED",
    "UPSERT_MOMENT",
    "archive_from_row",
    "archive_row",
    "from_us",
    "moment_from_row",
    "moment_row",
    "session_from_row",
    "session_row",
    "to_us",
]


def _full_text_index(tokenizer: str) -> list[str]:
    """The FTS5 index over the moments' text, kept in step by triggers."""
    return [
        f"""CREATE VIRTUAL TABLE moments_fts USING fts5 (
            text, content='moments', content_rowid='num', tokenize='{tokenizer}'
        )""",
        """CREATE TRIGGER moments_fts_insert AFTER INSERT ON moments BEGIN
            INSERT INTO moments_fts (rowid, text) VALUES (new.num, new.text);
        END""",
        """CREATE TRIGGER moments_fts_delete AFTER DELETE ON moments BEGIN
            INSERT INTO moments_fts (moments_fts, rowid, text) VALUES ('delete', old.num, old.text);
        END""",
        """CREATE TRIGGER moments_fts_update AFTER UPDATE OF text ON moments BEGIN
            INSERT INTO moments_fts (moments_fts, rowid, text) VALUES ('delete', old.num, old.text);
            INSERT INTO moments_fts (rowid, text) VALUES (new.num, new.text);
        END""",
    ]


#: With deferred upkeep only a moment already indexed has full-text rows to take out.
_INDEXED = "old.num <= (SELECT indexed_through FROM upkeep)"
_UNINDEX_TRIGGERS: Final = [
    f"""CREATE TRIGGER moments_fts_delete AFTER DELETE ON moments WHEN {_INDEXED} BEGIN
        INSERT INTO moments_fts (moments_fts, rowid, text) VALUES ('delete', old.num, old.text);
    END""",
    f"""CREATE TRIGGER moments_fts_update AFTER UPDATE OF text ON moments WHEN {_INDEXED} BEGIN
        INSERT INTO moments_fts (moments_fts, rowid, text) VALUES ('delete', old.num, old.text);
        INSERT INTO moments_fts (rowid, text) VALUES (new.num, new.text);
    END""",
]

MIGRATIONS: Final[list[list[str]]] = [
    [
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            started_us INTEGER NOT NULL,
            body TEXT NOT NULL
        )""",
        "CREATE INDEX sessions_by_start ON sessions (started_us, id)",
        """CREATE TABLE moments (
            num INTEGER PRIMARY KEY,          -- the N of m_N
            session_id TEXT NOT NULL,
            ts_us INTEGER NOT NULL,           -- microseconds since the epoch, UTC
            speaker TEXT NOT NULL,
            role TEXT NOT NULL,
            text TEXT NOT NULL,
            body TEXT NOT NULL                -- the record as JSON, without content.text
        )""",
        "CREATE INDEX moments_by_session ON moments (session_id, num)",
        "CREATE INDEX moments_by_time ON moments (ts_us)",
        *_full_text_index("unicode61 remove_diacritics 2"),
        """CREATE TABLE moment_concepts (
            concept TEXT NOT NULL,
            num INTEGER NOT NULL,
            session_id TEXT NOT NULL,
            PRIMARY KEY (concept, num)
        ) WITHOUT ROWID""",
        "CREATE INDEX moment_concepts_by_moment ON moment_concepts (num)",
        "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID",
    ],
    [  # document frequencies, so a search can pick its terms within a cost budget
        "CREATE VIRTUAL TABLE moments_vocab USING fts5vocab (moments_fts, 'row')",
    ],
    [
        # fts5vocab counts a term's documents by reading all its postings, so the frequencies
        # a search needs are kept here instead, in step with ``put_moments``.
        """CREATE TABLE term_docs (
            term TEXT PRIMARY KEY,
            docs INTEGER NOT NULL
        ) WITHOUT ROWID""",
        "INSERT INTO term_docs (term, docs) SELECT term, doc FROM moments_vocab",
        "DROP TABLE moments_vocab",
        # Concept names stored once; a moment's concepts are known from its body, so the
        # pairs need no index by moment. About a third of the bytes of the old layout.
        "CREATE TABLE concepts (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
        """CREATE TABLE concept_moments (
            concept_id INTEGER NOT NULL,
            num INTEGER NOT NULL,
            PRIMARY KEY (concept_id, num)
        ) WITHOUT ROWID""",
        "INSERT INTO concepts (name) SELECT DISTINCT concept FROM moment_concepts ORDER BY concept",
        """INSERT INTO concept_moments (concept_id, num)
            SELECT c.id, mc.num FROM moment_concepts mc JOIN concepts c ON c.name = mc.concept""",
        "DROP TABLE moment_concepts",
    ],
    [  # one text vector per moment, from the notebook's current embedding model
        """CREATE TABLE moment_vectors (
            num INTEGER PRIMARY KEY REFERENCES moments (num),
            model TEXT NOT NULL,
            vector BLOB NOT NULL
        )""",
    ],
    [  # words indexed by their Porter stems ("painted" finds "painting"); counts follow
        "DROP TRIGGER moments_fts_insert",
        "DROP TRIGGER moments_fts_delete",
        "DROP TRIGGER moments_fts_update",
        "DROP TABLE moments_fts",
        *_full_text_index(FTS5_TOKENIZER),
        "INSERT INTO moments_fts (moments_fts) VALUES ('rebuild')",
        "DELETE FROM term_docs",
        "CREATE VIRTUAL TABLE moments_vocab USING fts5vocab (moments_fts, 'row')",
        "INSERT INTO term_docs (term, docs) SELECT term, doc FROM moments_vocab",
        "DROP TABLE moments_vocab",
    ],
    [  # the cold archive's index: where compaction put each archived moment
        """CREATE TABLE archived (
            num INTEGER PRIMARY KEY,          -- the N of m_N
            body TEXT NOT NULL                -- the ArchiveEntry as JSON
        )""",
        """CREATE TABLE archived_concepts (
            concept_id INTEGER NOT NULL,
            num INTEGER NOT NULL,
            PRIMARY KEY (concept_id, num)
        ) WITHOUT ROWID""",
    ],
    [
        # Deferred index upkeep: a recorded moment is written alone (its row and the indexes
        # of the moments table); its full-text rows, word counts and concept pairs are added
        # later in batches (``SqliteBackend.settle``), before any read that uses them. The
        # moments above ``indexed_through`` are the ones not in those indexes yet.
        """CREATE TABLE upkeep (
            id INTEGER PRIMARY KEY CHECK (id = 0),
            indexed_through INTEGER NOT NULL
        )""",
        "INSERT INTO upkeep (id, indexed_through) SELECT 0, coalesce(max(num), 0) FROM moments",
        "DROP TRIGGER moments_fts_insert",
        "DROP TRIGGER moments_fts_delete",
        "DROP TRIGGER moments_fts_update",
        *_UNINDEX_TRIGGERS,
    ],
    [  # term_docs keyed by FTS5's own stems (snowball's Porter differed on a few words)
        "DELETE FROM term_docs",
        "CREATE VIRTUAL TABLE moments_vocab USING fts5vocab (moments_fts, 'row')",
        "INSERT INTO term_docs (term, docs) SELECT term, doc FROM moments_vocab",
        "DROP TABLE moments_vocab",
    ],
    [
        # A vector's model by a small id, its name stored once (issue 17: the name in every
        # row was a sixth of the table, and a row of int8 vector and name filled pages
        # badly). ``model_id`` 1 takes no byte at all in the record.
        "CREATE TABLE vector_models (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
        "INSERT INTO vector_models (name) SELECT DISTINCT model FROM moment_vectors ORDER BY 1",
        """CREATE TABLE moment_vectors_by_id (
            num INTEGER PRIMARY KEY REFERENCES moments (num),
            model_id INTEGER NOT NULL REFERENCES vector_models (id),
            vector BLOB NOT NULL
        )""",
        """INSERT INTO moment_vectors_by_id (num, model_id, vector)
            SELECT v.num, m.id, v.vector FROM moment_vectors v
            JOIN vector_models m ON m.name = v.model ORDER BY v.num""",
        "DROP TABLE moment_vectors",
        "ALTER TABLE moment_vectors_by_id RENAME TO moment_vectors",
    ],
    [
        # Concepts keyed by name, without a rowid: a name is stored once, not in the table
        # and again in its unique index (issue 17: a third of the concept tables' bytes).
        # Ids are lookups' handles only (``concept_moments``); the next is numbered from
        # ``upkeep.last_concept``, which a trigger keeps.
        """CREATE TABLE concepts_by_name (
            name TEXT PRIMARY KEY,
            id INTEGER NOT NULL
        ) WITHOUT ROWID""",
        "INSERT INTO concepts_by_name (name, id) SELECT name, id FROM concepts ORDER BY name",
        "DROP TABLE concepts",
        "ALTER TABLE concepts_by_name RENAME TO concepts",
        "ALTER TABLE upkeep ADD COLUMN last_concept INTEGER NOT NULL DEFAULT 0",
        "UPDATE upkeep SET last_concept = (SELECT coalesce(max(id), 0) FROM concepts)",
        """CREATE TRIGGER concepts_numbered AFTER INSERT ON concepts BEGIN
            UPDATE upkeep SET last_concept = max(last_concept, new.id);
        END""",
    ],
    [
        # Vector model names without the unique index beside them (issue 17: a page of
        # every file that has vectors, for a table of a name or two). A name is added only
        # when absent (:data:`INSERT_VECTOR_MODEL`, in the write transaction); the lookups
        # by name read the whole table, which holds one row per embedding model ever used.
        """CREATE TABLE vector_models_numbered (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL
        )""",
        "INSERT INTO vector_models_numbered (id, name) SELECT id, name FROM vector_models",
        "DROP TABLE vector_models",
        "ALTER TABLE vector_models_numbered RENAME TO vector_models",
    ],
    [
        # The fact index (issue 39): each moment filed under the subjects its claims are
        # about (``metadata.fact_keys``), so a statement meets the latest earlier ones on
        # the same key in any session. Written with every moment, never deferred. An older
        # notebook's moments are filed by ``agent-notebook facts reindex``.
        """CREATE TABLE fact_keys (
            name TEXT NOT NULL,
            num INTEGER NOT NULL,
            PRIMARY KEY (name, num)
        ) WITHOUT ROWID""",
    ],
]

#: Adds a concept name (the parameter) not stored yet, with the next id.
INSERT_CONCEPT: Final = (
    "INSERT INTO concepts (name, id) VALUES (?, (SELECT last_concept + 1 FROM upkeep)) "
    "ON CONFLICT (name) DO NOTHING"
)

#: The id of a vector model named by the statement's parameter (NULL: none stored yet).
MODEL_ID: Final = "(SELECT min(id) FROM vector_models WHERE name = ?)"

#: Adds a vector model name (both parameters) not stored yet, with the next id.
INSERT_VECTOR_MODEL: Final = (
    "INSERT INTO vector_models (name) SELECT ? "
    "WHERE NOT EXISTS (SELECT 1 FROM vector_models WHERE name = ?)"
)

MOMENT_COLUMNS: Final = "num, session_id, ts_us, speaker, role, text, body"

#: Writes a new moment row (a number already stored fails).
INSERT_MOMENT: Final = f"INSERT INTO moments ({MOMENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"
UPSERT_MOMENT: Final = f"""
    {INSERT_MOMENT}
    ON CONFLICT (num) DO UPDATE SET
        session_id = excluded.session_id, ts_us = excluded.ts_us, speaker = excluded.speaker,
        role = excluded.role, text = excluded.text, body = excluded.body
"""

#: Writes an archive row (:meth:`SqliteBackend._archive_row`'s columns).
UPSERT_ARCHIVED: Final = (
    "INSERT INTO archived (num, body) VALUES (?, ?) "
    "ON CONFLICT (num) DO UPDATE SET body = excluded.body"
)

#: A moment's :class:`MomentBrief` fields (fields at their defaults are not in the body).
SELECT_BRIEFS: Final = f"""
    SELECT num, session_id, ts_us, role, speaker,
        coalesce(json_extract(body, '$.metadata.importance'), {DEFAULT_IMPORTANCE}),
        coalesce(json_extract(body, '$.metadata.decay_rate'), {DEFAULT_DECAY_RATE}),
        json_type(body, '$.redacted') IS NOT NULL AND json_type(body, '$.redacted') != 'null',
        instr(text, '?') > 0
    FROM moments WHERE num"""
