"""Recording writes little: a moment's derived rows come later, and never go missing.

On SQLite a recorded moment writes its row (and the moments table's own indexes); its
full-text rows, word counts and concept pairs are added in batches by ``settle``, which
every read of them runs first. A session's stored row is rewritten only every few moments;
``Notebook.get_session`` counts the moments since in.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.core.crypto import Cipher, generate_key
from agent_notebook.core.lexical import terms
from agent_notebook.model import Session
from agent_notebook.notebook.recording import SESSION_ROW_LAG
from agent_notebook.storage.base import MomentFilter
from agent_notebook.storage.sqlite import SqliteBackend
from tests.support.moments import SESSION, WHEN, moment  # one way to make a moment

TEXTS = [
    "Booked the 09:04 TGV to Lyon Part-Dieu, seat 42, coach 7.",
    "The migration failed with database is locked, retrying.",
    "Remember that Priya is vegetarian for the dinner at Brasserie Georges.",
    "ok thanks!",
]


def derived_rows(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """Rows of the derived tables as stored (no upkeep runs): word counts, concept pairs,
    full-text documents."""
    return (
        conn.execute("SELECT count(*) FROM term_docs").fetchone()[0],
        conn.execute("SELECT count(*) FROM concept_moments").fetchone()[0],
        conn.execute("SELECT count(*) FROM moments_fts_docsize").fetchone()[0],
    )


def open_backend(path: Path, cipher: Cipher | None = None) -> SqliteBackend:
    backend = SqliteBackend(path, cipher=cipher)
    if backend.get_session(SESSION) is None:
        backend.put_session(Session(id=SESSION, started=WHEN))
    return backend


def test_a_new_moment_is_written_alone_and_the_next_search_finds_it(tmp_path: Path) -> None:
    backend = open_backend(tmp_path / "notebook.db")
    backend.put_moments([moment(1, TEXTS[0], ["lyon"])])
    before = derived_rows(backend.connection)
    backend.put_moments([moment(2, TEXTS[1], ["migration"])])
    assert derived_rows(backend.connection) == before  # nothing derived written yet
    assert [mid for mid, _ in backend.search_text("migration", MomentFilter(), 5)] == ["m_2"]
    assert backend.get_concept("migration") is not None
    assert derived_rows(backend.connection) != before  # the read caught the indexes up
    backend.close()


@pytest.mark.parametrize("sealed", [False, True], ids=["plain", "sealed"])
def test_moments_not_yet_indexed_are_found_after_the_process_ends(
    tmp_path: Path, sealed: bool
) -> None:
    """The moment rows are the truth: a process that ends before any upkeep (a crash
    after the commit) leaves them to the next one, whose first read indexes them."""
    cipher = Cipher(generate_key()) if sealed else None
    path = tmp_path / "notebook.db"
    first = open_backend(path, cipher)
    first.put_moments([moment(n, t, ["trip"]) for n, t in enumerate(TEXTS, start=1)])
    first.close()  # no settle: the derived rows are still missing
    second = open_backend(path, cipher)
    found = second.search_text("vegetarian dinner", MomentFilter(), 5)
    assert [mid for mid, _ in found] == ["m_3"]
    entry = second.get_concept("trip")
    assert entry is not None and entry.moments == ["m_1", "m_2", "m_3", "m_4"]
    second.close()


def test_derived_indexes_agree_with_the_moments_after_mixed_writes(tmp_path: Path) -> None:
    """New moments left for upkeep, overwrites and deletions of moments indexed and not
    yet indexed, and an import below the mark: afterwards the word counts are those of
    the full-text index and the concept pairs those of the moments."""
    backend = open_backend(tmp_path / "notebook.db")
    backend.put_moments([moment(1, TEXTS[0], ["lyon"]), moment(2, TEXTS[1], ["db"])])
    backend.settle()
    backend.put_moments([moment(3, TEXTS[2], ["dinner"]), moment(4, TEXTS[3], [])])
    backend.put_moments([moment(3, "dinner moved to Friday", ["dinner", "friday"])])  # pending
    backend.put_moments([moment(1, "Lyon trip cancelled", ["lyon"])])  # indexed
    backend.put_moments([moment(5, "a late note", ["note"])])
    backend.delete_session("s_2026-03-01_999")  # nothing
    with backend.atomic():
        backend.archive_moments([])
    backend.put_moments([moment(7, "seven", ["seven"])])
    backend.put_moments([moment(6, "six below the mark", ["six"])])  # pending, below 7
    backend.settle()
    conn = backend.connection
    conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab (main, moments_fts, 'row')")
    vocab = dict(conn.execute("SELECT term, doc FROM temp.v").fetchall())
    kept = dict(conn.execute("SELECT term, docs FROM term_docs WHERE docs > 0").fetchall())
    stored = backend.list_moments()
    expected: Counter[str] = Counter()
    for m in stored:
        expected.update(set(terms(m.content.text)))
    assert kept == vocab == dict(expected)
    pairs = {(c.concept, mid) for c in backend.list_concepts() for mid in c.moments}
    assert pairs == {(c, m.id) for m in stored for c in m.metadata.concepts}
    hits = backend.search_text("friday six", MomentFilter(), 5)
    assert {mid for mid, _ in hits} == {"m_3", "m_6"}
    backend.close()


def wal_frames(conn: sqlite3.Connection, db: Path) -> int:
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    wal = Path(f"{db}-wal")
    return max(0, wal.stat().st_size - 32) // (page + 24) if wal.exists() else 0


def test_recording_a_moment_writes_few_pages(tmp_path: Path) -> None:
    """The write amplification the issue measured (26.6 WAL pages a moment, 15 for these
    short texts) is gone: the moment's row and its table's indexes, the counter, and the
    session row now and then."""
    home = tmp_path / "home"
    with Notebook.open(home, background_embedding=False) as nb:
        sid = nb.start_session("pages").id
        nb.record_many(sid, [{"text": TEXTS[i % 4]} for i in range(200)])
        nb.settle()
        backend = nb.backend
        assert isinstance(backend, SqliteBackend)
        conn = backend.connection
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        records = 4 * SESSION_ROW_LAG
        for i in range(records):
            nb.record(sid, f"{TEXTS[i % 4]} (#{i})")
        per_record = wal_frames(conn, home / "notebook.db") / records
        assert per_record <= 7, per_record
        conn.execute("PRAGMA wal_autocheckpoint = 1000")


def stored_session(nb: Notebook, sid: str) -> Session:
    found = nb.backend.get_session(sid)
    assert found is not None
    return found


def test_the_session_row_lags_behind_and_reads_count_every_moment(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Notebook.open(home, background_embedding=False) as nb:
        sid = nb.start_session("lag").id
        texts = [f"{TEXTS[i % 4]} (#{i})" for i in range(SESSION_ROW_LAG + 3)]
        recorded = [nb.record(sid, text) for text in texts[:2]]
        assert stored_session(nb, sid).stats.moments == 0  # the row was not rewritten
        session = nb.get_session(sid)
        assert session.stats.moments == 2
        assert session.context.recent_moments == [m.id for m in recorded]
        assert session.stats.bytes == sum(len(t.encode()) for t in texts[:2])
        recorded += [nb.record(sid, text) for text in texts[2:]]
        assert 0 < stored_session(nb, sid).stats.moments < len(texts)  # written once since
        session = nb.get_session(sid)
        assert session.stats.moments == session.context.raw_history_size == len(texts)
        assert session.stats.tokens == sum(nb.tokens.count(t) for t in texts)
        assert session.stats.last_activity == recorded[-1].timestamp
        assert [s.stats.moments for s in nb.sessions()] == [len(texts)]
        assert nb.stats().bytes == sum(len(t.encode()) for t in texts)
        nb.decide(sid, "keep the lag")  # a change of the session writes it caught up
        assert stored_session(nb, sid).stats.moments == len(texts)
        nb.record(sid, "one more")
    with Notebook.open(home, background_embedding=False) as nb:  # close caught it up
        assert stored_session(nb, sid).stats.moments == len(texts) + 1
        assert nb.get_session(sid).stats.moments == len(texts) + 1
