"""What only the SQLite backend has: its migrations, its term counts, its bounded search."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_notebook.core.lexical import terms
from agent_notebook.model import Moment, Session
from agent_notebook.storage.base import MomentFilter
from agent_notebook.storage.sqlite import SqliteBackend, schema
from agent_notebook.storage.sqlite import fulltext as sqlite_fulltext
from tests.support.moments import SESSION, WHEN, moment


def open_with(tmp_path: Path) -> SqliteBackend:
    backend = SqliteBackend(tmp_path / "notebook.db")
    backend.put_session(Session(id=SESSION, started=WHEN))
    return backend


def term_docs(backend: SqliteBackend) -> dict[str, int]:
    backend.settle()  # as every read of the derived indexes does first
    rows = backend.connection.execute("SELECT term, docs FROM term_docs WHERE docs > 0")
    return dict(rows.fetchall())


def old_layout(path: Path, version: int) -> sqlite3.Connection:
    """A file as a notebook of schema ``version`` left it (its first migrations only)."""
    conn = sqlite3.connect(path, isolation_level=None)
    for number, statements in enumerate(schema.MIGRATIONS[:version], start=1):
        for statement in statements:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {number}")
    return conn


def old_layout_with_moments(path: Path, version: int) -> sqlite3.Connection:
    """:func:`old_layout` holding one session and its moments m_1..m_3 ("text N")."""
    conn = old_layout(path, version)
    conn.execute(
        "INSERT INTO sessions (id, started_us, body) VALUES (?, ?, ?)",
        schema.session_row(Session(id=SESSION, started=WHEN)),
    )
    for n in (1, 2, 3):
        conn.execute(schema.UPSERT_MOMENT, schema.moment_row(moment(n, f"text {n}", [])))
    return conn


def test_a_version_2_file_is_migrated_with_its_concepts_and_term_counts(tmp_path: Path) -> None:
    path = tmp_path / "notebook.db"
    conn = old_layout(path, 2)
    old = [
        moment(1, "the deploy failed", ["deploy"]),
        moment(2, "deploy again", ["deploy", "retry"]),
    ]
    conn.execute(
        "INSERT INTO sessions (id, started_us, body) VALUES (?, ?, ?)",
        schema.session_row(Session(id=SESSION, started=WHEN)),
    )
    for m in old:
        conn.execute(schema.UPSERT_MOMENT, schema.moment_row(m))
        conn.executemany(
            "INSERT INTO moment_concepts (concept, num, session_id) VALUES (?, ?, ?)",
            [(c, m.number, SESSION) for c in m.metadata.concepts],
        )
    conn.close()

    backend = SqliteBackend(path)
    entry = backend.get_concept("deploy")
    assert entry is not None and entry.moments == ["m_1", "m_2"] and entry.sessions == [SESSION]
    assert [c.concept for c in backend.list_concepts()] == ["deploy", "retry"]
    assert term_docs(backend) == {"the": 1, "deploi": 2, "fail": 1, "again": 1}  # stems
    assert backend.connection.execute("PRAGMA user_version").fetchone()[0] == len(schema.MIGRATIONS)
    assert {m for m, _ in backend.search_text("deploying", MomentFilter(), 5)} == {"m_1", "m_2"}


def undo_migrations_9_and_10(conn: sqlite3.Connection) -> None:
    """The vectors table as it was before migration 9 (empty) and the upkeep row before 10,
    for a file said to be older (10 copies any concepts table), and no fact index (12)."""
    conn.execute("DROP TABLE fact_keys")
    conn.execute("DROP TRIGGER concepts_numbered")
    conn.execute("ALTER TABLE upkeep DROP COLUMN last_concept")
    conn.execute("DROP TABLE moment_vectors")
    conn.execute("DROP TABLE vector_models")
    conn.execute(
        "CREATE TABLE moment_vectors (num INTEGER PRIMARY KEY REFERENCES moments (num), "
        "model TEXT NOT NULL, vector BLOB NOT NULL)"
    )


def test_python_stems_like_fts5(tmp_path: Path) -> None:
    """term_docs is kept by Python's stemmer and rebuilt by FTS5's: they must agree."""
    backend = open_with(tmp_path)
    texts = [
        "Caroline painted a sunrise; she's been painting since the relational databases died.",
        "Généralisation: the agreed feed happily flies over nationalities and skies.",
        "Ticket EXP-5839 (auth/middleware.py:42) raised KeyError 'user_id' on 2026-06-14.",
        # words snowball's Porter stems unlike FTS5's (the stemmer used before)
        "We trekked, possibly incredibly far: an apology to ecology and psychology.",
    ]
    backend.put_moments([moment(n, t, []) for n, t in enumerate(texts, start=1)])
    kept = term_docs(backend)
    conn = backend.connection
    conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab (main, moments_fts, 'row')")
    assert kept == dict(conn.execute("SELECT term, doc FROM temp.v").fetchall())


def test_a_version_7_file_gets_its_term_counts_keyed_by_fts5_stems(tmp_path: Path) -> None:
    backend = open_with(tmp_path)
    backend.put_moments([moment(1, "We trekked through the hills", [])])
    term_docs(backend)
    conn = backend.connection
    # as the snowball stemmer left it: "trekked" counted under "trekk"
    conn.execute("UPDATE term_docs SET term = 'trekk' WHERE term = 'trek'")
    undo_migrations_9_and_10(conn)
    conn.execute("PRAGMA user_version = 7")
    backend.close()

    again = SqliteBackend(tmp_path / "notebook.db")
    assert term_docs(again) == {t: 1 for t in terms("We trekked through the hills")}
    assert "trek" in term_docs(again)
    assert again.connection.execute("PRAGMA user_version").fetchone()[0] == len(schema.MIGRATIONS)


def test_term_counts_follow_every_overwrite(tmp_path: Path) -> None:
    backend = open_with(tmp_path)
    backend.put_moments([moment(1, "alpha beta", ["alpha"]), moment(2, "beta gamma", ["gamma"])])
    backend.put_moments([moment(1, "beta delta delta", ["delta"])])
    expected: dict[str, int] = {}
    for text in ["beta delta delta", "beta gamma"]:
        for term in set(terms(text)):
            expected[term] = expected.get(term, 0) + 1
    assert term_docs(backend) == expected
    assert backend.get_concept("alpha") is None
    assert [c.concept for c in backend.list_concepts()] == ["delta", "gamma"]
    assert backend.count_concepts() == 2


def test_search_takes_rare_terms_first_within_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = open_with(tmp_path)
    backend.put_moments(
        [moment(n, f"common words here {n}", []) for n in range(1, 41)]
        + [moment(41, "common rare-ish zebra", [])]
    )
    monkeypatch.setattr(sqlite_fulltext, "POSTINGS_BUDGET", 10)
    hits = backend.search_text("common zebra", MomentFilter(), limit=5)
    # "zebra" (1 moment) fits the budget, "common" (41) does not: only zebra's moment scores.
    assert [moment_id for moment_id, _ in hits] == ["m_41"]
    monkeypatch.undo()
    assert len(backend.search_text("common zebra", MomentFilter(), limit=50)) == 41


def test_a_remembered_ranking_never_outlives_a_write(tmp_path: Path) -> None:
    """Rankings are remembered while the file is unchanged: a write by this backend or by
    another connection to the file (another process) makes the next search rank afresh."""
    backend = open_with(tmp_path)
    backend.put_moments([moment(n, f"the kayak trip {n}", []) for n in range(1, 6)])
    first = backend.search_text("kayak", MomentFilter(), limit=3)
    assert backend.search_text("kayak", MomentFilter(), limit=3) == first
    assert len(backend.search_text("kayak", MomentFilter(), limit=10)) == 5  # not the prefix
    backend.put_moments([moment(6, "kayak kayak kayak", [])])
    assert backend.search_text("kayak", MomentFilter(), limit=1)[0][0] == "m_6"
    other = SqliteBackend(tmp_path / "notebook.db")
    other.put_moments([moment(7, "kayak kayak kayak kayak", [])])
    other.close()
    assert backend.search_text("kayak", MomentFilter(), limit=1)[0][0] == "m_7"
    with backend.atomic():  # inside a transaction, its own uncommitted writes are seen
        backend.put_moments([moment(8, "kayak " * 6, [])])
        assert backend.search_text("kayak", MomentFilter(), limit=1)[0][0] == "m_8"
    backend.close()


def test_a_moment_body_holds_only_what_its_columns_do_not(tmp_path: Path) -> None:
    backend = open_with(tmp_path)
    said = Moment.model_validate(
        {
            "id": "m_3",
            "session": SESSION,
            "timestamp": datetime(2026, 3, 1, 9, 0, 0, 123456, tzinfo=UTC),
            "role": "assistant",
            "speaker": "planner",
            "content": {"text": "the deploy failed"},
            "metadata": {"concepts": ["deploy"]},
        }
    )
    backend.put_moments([said])
    (body,) = backend.connection.execute("SELECT body FROM moments WHERE num = 3").fetchone()
    stored = json.loads(body)
    assert not {"id", "session", "timestamp", "role", "speaker", "content"} & set(stored)
    # schema_version 1 is a default too: a body without one reads as version 1
    assert stored == {"metadata": {"concepts": ["deploy"]}}
    assert backend.get_moment("m_3") == said and said.schema_version == 1
    assert backend.list_moments(SESSION) == [said]


def test_a_moment_body_written_before_issue_17_reads_the_same(tmp_path: Path) -> None:
    """Bodies used to repeat the id, session, time, role and speaker of their columns."""
    backend = open_with(tmp_path)
    old_body = (
        '{"id":"m_5","session":"s_2026-03-01_001","timestamp":"2026-03-01T09:00:00.000042Z",'
        '"role":"assistant","speaker":"planner","content":{},'
        '"metadata":{"concepts":["deploy"],"importance":0.7},"schema_version":1}'
    )
    backend.connection.execute(
        schema.UPSERT_MOMENT,
        (5, SESSION, 1772355600000042, "planner", "assistant", "deploy again", old_body),
    )
    found = backend.get_moment("m_5")
    assert found is not None
    assert (found.id, found.session, found.role, found.speaker) == (
        "m_5",
        SESSION,
        "assistant",
        "planner",
    )
    assert found.timestamp == datetime(2026, 3, 1, 9, 0, 0, 42, tzinfo=UTC)
    assert found.content.text == "deploy again" and found.metadata.importance == 0.7
    assert backend.get_concept("deploy") is not None  # indexed from the old body too
    backend.put_moments([found.model_copy(update={"speaker": "reviewer"})])
    assert backend.get_moment("m_5") == found.model_copy(update={"speaker": "reviewer"})


def test_a_version_8_file_keeps_its_vectors_with_their_model_stored_once(tmp_path: Path) -> None:
    """Migration 9: ``moment_vectors.model`` (a name in every row) becomes an id."""
    path = tmp_path / "notebook.db"
    conn = old_layout_with_moments(path, 8)
    conn.execute("UPDATE upkeep SET indexed_through = 0")  # their index rows come at settle
    old = [(1, "model-a", b"v1"), (2, "model-b", b"v2"), (3, "model-a", b"v3")]
    conn.executemany("INSERT INTO moment_vectors (num, model, vector) VALUES (?, ?, ?)", old)
    conn.close()

    backend = SqliteBackend(path)
    assert backend.connection.execute("PRAGMA user_version").fetchone()[0] == len(schema.MIGRATIONS)
    assert backend.get_vectors("model-a") == [(1, b"v1"), (3, b"v3")]
    assert backend.get_vectors("model-b") == [(2, b"v2")]
    assert backend.vector_models() == ["model-a", "model-b"]
    assert backend.unembedded("model-a") == [2] and backend.unembedded("model-c") == [1, 2, 3]
    columns = [r[1] for r in backend.connection.execute("PRAGMA table_info(moment_vectors)")]
    assert columns == ["num", "model_id", "vector"]
    backend.put_vectors("model-c", [(2, "text 2", b"w2")])  # a new model gets its id
    assert backend.get_vectors("model-c") == [(2, b"w2")] and backend.get_vectors("model-b") == []
    assert backend.vector_models() == ["model-a", "model-c"]  # b has no vector left
    backend.close()


def test_retrieval_keys_that_are_concepts_are_stored_as_their_positions(tmp_path: Path) -> None:
    backend = open_with(tmp_path)
    keyed = Moment.model_validate(
        {
            "id": "m_4",
            "session": SESSION,
            "timestamp": WHEN,
            "content": {"text": "EXP-2318 for Melanie: api/routes.ts:118 is booked"},
            "metadata": {
                "concepts": ["exp-2318", "melanie", "booked seat", "booked"],
                "retrieval_keys": ["api/routes.ts:118", "exp-2318", "booked", "melanie", "7"],
            },
        }
    )
    backend.put_moments([keyed])
    (body,) = backend.connection.execute("SELECT body FROM moments WHERE num = 4").fetchone()
    assert json.loads(body)["metadata"]["retrieval_keys"] == ["api/routes.ts:118", 0, 3, 1, "7"]
    assert backend.get_moment("m_4") == keyed
    backend.close()
    assert SqliteBackend(tmp_path / "notebook.db").get_moment("m_4") == keyed


def test_a_version_9_file_keeps_its_concepts_keyed_by_name(tmp_path: Path) -> None:
    """Migration 10: ``concepts`` without a rowid; new names are numbered after the old."""
    path = tmp_path / "notebook.db"
    conn = old_layout(path, 9)
    conn.execute(
        "INSERT INTO sessions (id, started_us, body) VALUES (?, ?, ?)",
        schema.session_row(Session(id=SESSION, started=WHEN)),
    )
    old = [moment(1, "lyon by train", ["lyon", "train"]), moment(2, "train late", ["train"])]
    for m in old:
        conn.execute(schema.UPSERT_MOMENT, schema.moment_row(m))
    conn.executemany("INSERT INTO concepts (id, name) VALUES (?, ?)", [(7, "lyon"), (9, "train")])
    conn.executemany(
        "INSERT INTO concept_moments (concept_id, num) VALUES (?, ?)", [(7, 1), (9, 1), (9, 2)]
    )
    conn.execute("UPDATE upkeep SET indexed_through = 2")
    conn.close()

    backend = SqliteBackend(path)
    c = backend.connection
    assert c.execute("PRAGMA user_version").fetchone()[0] == len(schema.MIGRATIONS)
    assert c.execute("SELECT id, name FROM concepts ORDER BY id").fetchall() == [
        (7, "lyon"),
        (9, "train"),
    ]
    assert not c.execute(
        "SELECT 1 FROM sqlite_schema WHERE tbl_name = 'concepts' AND type = 'index'"
    ).fetchall()
    entry = backend.get_concept("train")
    assert entry is not None and entry.moments == ["m_1", "m_2"]
    backend.put_moments(
        [moment(3, "paris and lyon", ["paris", "lyon"]), moment(4, "rome", ["rome"])]
    )
    backend.settle()  # concept pairs are added in batches, before any read of them
    assert dict(c.execute("SELECT name, id FROM concepts").fetchall()) == {
        "lyon": 7,
        "train": 9,
        "paris": 10,
        "rome": 11,
    }
    assert [e.concept for e in backend.list_concepts()] == ["lyon", "paris", "rome", "train"]
    lyon = backend.get_concept("lyon")
    assert lyon is not None and lyon.moments == ["m_1", "m_3"]
    backend.close()


def test_a_version_10_file_keeps_its_vector_models_without_an_index(tmp_path: Path) -> None:
    """Migration 11: ``vector_models`` without its unique index (a page); ids kept, a new
    name numbered after them, a name stored once however often its vectors are put."""
    path = tmp_path / "notebook.db"
    conn = old_layout_with_moments(path, 10)
    conn.executemany("INSERT INTO vector_models (id, name) VALUES (?, ?)", [(1, "a"), (4, "b")])
    conn.executemany(
        "INSERT INTO moment_vectors (num, model_id, vector) VALUES (?, ?, ?)",
        [(1, 1, b"v1"), (2, 4, b"v2"), (3, 1, b"v3")],
    )
    conn.close()

    backend = SqliteBackend(path)
    c = backend.connection
    assert c.execute("PRAGMA user_version").fetchone()[0] == len(schema.MIGRATIONS)
    assert not c.execute(
        "SELECT 1 FROM sqlite_schema WHERE tbl_name = 'vector_models' AND type = 'index'"
    ).fetchall()
    assert c.execute("PRAGMA foreign_key_check").fetchall() == []  # model_id still has a key
    assert backend.get_vectors("a") == [(1, b"v1"), (3, b"v3")]
    assert backend.get_vectors("b") == [(2, b"v2")]
    assert backend.unembedded("b") == [1, 3]
    backend.put_vectors("c", [(1, "text 1", b"w1")])
    backend.put_vectors("c", [(2, "text 2", b"w2")])  # the name is not stored again
    backend.put_vectors("a", [(2, "text 2", b"x2")])
    assert c.execute("SELECT id, name FROM vector_models ORDER BY id").fetchall() == [
        (1, "a"),
        (4, "b"),
        (5, "c"),
    ]
    # one vector a moment: 1 went to c, 2 to c and then to a
    assert backend.get_vectors("c") == [(1, b"w1")]
    assert backend.get_vectors("a") == [(2, b"x2"), (3, b"v3")]
    assert backend.vector_models() == ["a", "c"]
    backend.close()
