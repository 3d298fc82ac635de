"""The PostgreSQL backend on a real server (see ``pg``): it ranks as SQLite does, two
instances (two servers) share one database, and the front doors open it.

The storage conformance suite runs on it too (``conftest.BACKENDS``)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.errors import StorageError
from agent_notebook.model import Moment, MomentContent, Session
from agent_notebook.storage import MomentFilter, SqliteBackend, StorageBackend, open_backend
from agent_notebook.storage.postgres import PostgresBackend
from agent_notebook.storage.postgres import fulltext as pg_fulltext
from agent_notebook.storage.sqlite import fulltext as sqlite_fulltext
from tests.support import pg
from tests.support.clirun import cli
from tests.support.locomo import LOCOMO_DEV

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def postgres(tmp_path: Path) -> Iterator[PostgresBackend]:
    backend = PostgresBackend(pg.database_url(), schema_name=pg.schema_for(tmp_path))
    yield backend
    backend.close()


def session(sid: str) -> Session:
    return Session.model_validate({"id": sid, "started": T0, "task": sid})


def moment(num: int, text: str, sid: str, speaker: str = "ana") -> Moment:
    return Moment.model_validate(
        {
            "id": f"m_{num}",
            "session": sid,
            "timestamp": T0 + timedelta(seconds=num),
            "speaker": speaker,
            "content": MomentContent(text=text),
        }
    )


def fill_both(backends: list[StorageBackend], moments: list[Moment], sids: list[str]) -> None:
    for backend in backends:
        for sid in sids:
            backend.put_session(session(sid))
        for start in range(0, len(moments), 500):
            backend.put_moments(moments[start : start + 500])


def assert_same_ranking(a: StorageBackend, b: StorageBackend, queries: list[str]) -> int:
    """Both give the same ids in the same order with the same scores; returns how many
    queries found something."""
    found = 0
    for query in queries:
        hits_a = a.search_text(query, MomentFilter(), 20)
        hits_b = b.search_text(query, MomentFilter(), 20)
        assert [i for i, _ in hits_a] == [i for i, _ in hits_b], query
        for (_, score_a), (_, score_b) in zip(hits_a, hits_b, strict=True):
            assert score_a == pytest.approx(score_b, rel=1e-12), query
        found += bool(hits_a)
    return found


SYNTHETIC = [
    "We booked the train to Lyon for Friday",
    "The train was late, the train was cold, the train was full",
    "Dinner at a café in Lyon with Ana and Ben",
    "Painting the kitchen walls; she painted the door as well",
    "Tickets refunded after the strike (EXP-5839)",
    "Where did Caroline go on holiday?",
    "Running, runner, runs: the marathon training plan",
    "",
    "Lyon Lyon Lyon " * 100 + "train",  # a term in more places than a tsvector keeps
    "Ünïcödé naïve façade résumé",
]


def test_ranks_as_sqlite_on_the_same_data(tmp_path: Path, postgres: PostgresBackend) -> None:
    sqlite = SqliteBackend(tmp_path / "notebook.db")
    moments = [
        moment(n + 1, text, "s_2026-03-01_001" if n % 3 == 0 else "s_2026-03-02_001")
        for n, text in enumerate(SYNTHETIC * 3)
    ]
    fill_both([sqlite, postgres], moments, ["s_2026-03-01_001", "s_2026-03-02_001"])
    # a rewrite and a removal change the statistics on both
    fill_both([sqlite, postgres], [moment(2, "A new text about trains", "s_2026-03-02_001")], [])
    for backend in (sqlite, postgres):
        backend.delete_session("s_2026-03-01_001")
    queries = ["train Lyon", "painting", "résume facade", "EXP-5839 refund", "lyon", "run"]
    queries += ["where did she go?", "the", "nothing matches this"]
    assert assert_same_ranking(sqlite, postgres, queries) == 8
    sqlite.close()


def test_the_cost_budget_chooses_the_same_terms(
    tmp_path: Path, postgres: PostgresBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    sqlite = SqliteBackend(tmp_path / "notebook.db")
    sid = "s_2026-03-01_001"
    moments = [moment(n, f"common words here {n}", sid) for n in range(1, 41)]
    moments.append(moment(41, "common zebra", sid))
    fill_both([sqlite, postgres], moments, [sid])
    for module in (sqlite_fulltext, pg_fulltext):
        monkeypatch.setattr(module, "POSTINGS_BUDGET", 10)
    assert [i for i, _ in postgres.search_text("common zebra", MomentFilter(), 5)] == ["m_41"]
    # only "common" (41 moments, over budget): the newest moments alone count
    assert assert_same_ranking(sqlite, postgres, ["common zebra", "common", "words 7"]) == 3
    sqlite.close()


@pytest.mark.slow
@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason=f"{LOCOMO_DEV} is absent")
def test_locomo_questions_rank_as_on_sqlite(tmp_path: Path, postgres: PostgresBackend) -> None:
    """Every turn of two LoCoMo dev conversations, every question of them: same order."""
    conversations = json.loads(LOCOMO_DEV.read_text())[:2]
    sqlite = SqliteBackend(tmp_path / "notebook.db")
    moments: list[Moment] = []
    sids: list[str] = []
    questions: list[str] = []
    for c, conversation in enumerate(conversations):
        body = conversation["conversation"]
        for key in sorted(k for k in body if re.fullmatch(r"session_\d+", k)):
            sid = f"s_2026-03-{c + 1:02d}_{int(key.split('_')[1]):03d}"
            sids.append(sid)
            for turn in body[key]:
                text = turn["text"] + (
                    " " + turn["blip_caption"] if turn.get("blip_caption") else ""
                )
                moments.append(moment(len(moments) + 1, text, sid, turn["speaker"]))
        questions += [str(qa["question"]) for qa in conversation["qa"]]
    fill_both([sqlite, postgres], moments, sids)
    assert assert_same_ranking(sqlite, postgres, questions) > len(questions) * 0.9
    sqlite.close()


def test_two_servers_share_one_database(tmp_path: Path, postgres: PostgresBackend) -> None:
    other = PostgresBackend(pg.database_url(), schema_name=pg.schema_for(tmp_path))
    numbers: list[int] = []

    def take(backend: PostgresBackend) -> None:
        for _ in range(25):
            numbers.append(backend.next_number("moment"))

    threads = [threading.Thread(target=take, args=(b,)) for b in (postgres, other) * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(numbers) == list(range(1, 101))  # never the same number twice
    postgres.put_session(session("s_2026-03-01_001"))
    postgres.put_moments([moment(7, "written by server A", "s_2026-03-01_001")])
    assert [i for i, _ in other.search_text("server", MomentFilter(), 5)] == ["m_7"]
    other.close()


def test_a_failed_transaction_leaves_the_statistics_alone(postgres: PostgresBackend) -> None:
    postgres.put_session(session("s_2026-03-01_001"))
    postgres.put_moments([moment(1, "kept words", "s_2026-03-01_001")])
    before = postgres.search_text("kept", MomentFilter(), 5)
    with pytest.raises(RuntimeError), postgres.atomic():
        postgres.put_moments([moment(2, "kept again, lost", "s_2026-03-01_001")])
        raise RuntimeError("abort")
    assert postgres.search_text("kept", MomentFilter(), 5) == before
    assert postgres.search_text("lost", MomentFilter(), 5) == []


def test_migrations_are_numbered_and_applied_once(
    tmp_path: Path, postgres: PostgresBackend
) -> None:
    from agent_notebook.storage.postgres.schema import MIGRATIONS

    postgres.put_session(session("s_2026-03-01_001"))
    again = PostgresBackend(pg.database_url(), schema_name=pg.schema_for(tmp_path))
    assert again._query("SELECT version FROM notebook_schema") == [(len(MIGRATIONS),)]
    assert again.count_sessions() == 1
    again.close()


def test_a_version_3_database_gets_its_terms_from_fts5_stems(
    tmp_path: Path, postgres: PostgresBackend
) -> None:
    from agent_notebook.storage.postgres.schema import MIGRATIONS

    postgres.put_session(session("s_2026-03-01_001"))
    postgres.put_moments([moment(1, "We trekked through the hills", "s_2026-03-01_001")])
    postgres.put_moments([moment(2, "A trek and another trek", "s_2026-03-01_001")])
    want = postgres._query("SELECT term, docs FROM term_docs ORDER BY term")
    # as the snowball stemmer left it: "trekked" indexed as "trekk", version 3
    with postgres.atomic():
        for statement in (
            "UPDATE moments SET terms = 'hill through trekk we'::tsvector WHERE num = 1",
            "UPDATE term_docs SET docs = 1 WHERE term = 'trek'",
            "INSERT INTO term_docs (term, docs) VALUES ('trekk', 1)",
            "DROP TABLE text_index_stale",
            "UPDATE notebook_schema SET version = 3",
        ):
            postgres._write(statement)
    assert [i for i, _ in postgres.search_text("trek", MomentFilter(), 5)] == ["m_2"]

    again = PostgresBackend(pg.database_url(), schema_name=pg.schema_for(tmp_path))
    assert [i for i, _ in again.search_text("trek", MomentFilter(), 5)] == ["m_2", "m_1"]
    assert again._query("SELECT term, docs FROM term_docs WHERE docs > 0 ORDER BY term") == want
    assert again._query("SELECT version FROM notebook_schema") == [(len(MIGRATIONS),)]
    again.close()


def test_an_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(StorageError, match=r"127\.0\.0\.1:9.*connect failed"):
        PostgresBackend("postgresql://nobody:secret@127.0.0.1:9/none", timeout_s=2)
    try:
        PostgresBackend("postgresql://nobody:secret@127.0.0.1:9/none", timeout_s=2)
    except StorageError as err:
        assert "secret" not in str(err)  # the password is never in a message


def test_a_server_with_no_connection_left_names_max_connections(tmp_path: Path) -> None:
    """Issue 43, item 11: a full server ("too many clients") is named as such, with what to
    change, not as a server that cannot be reached (a role allowed no connection stands
    for a server at its max_connections: the suite's server is shared)."""
    import psycopg

    role = "an_test_full_" + pg.schema_for(tmp_path)[2:14]
    url = pg.database_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN CONNECTION LIMIT 0")
    try:
        refused = url.replace("//postgres@", f"//{role}@", 1)
        assert refused != url
        with pytest.raises(StorageError) as caught:
            PostgresBackend(refused, timeout_s=5)
        said = str(caught.value)
        assert "no connection left" in said and "max_connections" in said, said
        assert "AGENT_NOTEBOOK_PG_POOL_SIZE" in said
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP ROLE {role}")


def test_the_suite_opens_few_connections_per_pool(postgres: PostgresBackend) -> None:
    """Each pool of a test's notebook opens at most 3 connections (tests/conftest.py), so
    several workers fit in a shared server's max_connections; 8 is the default elsewhere."""
    assert postgres.pool_size == 3


def test_open_backend_and_notebook_open_take_the_url(tmp_path: Path) -> None:
    url = pg.url_with_schema(tmp_path)  # a URL whose options name the schema
    backend = open_backend(url)
    assert backend.capabilities.name == "postgres"
    backend.close()
    home = tmp_path / "home"
    with Notebook.open(home, backend=url) as nb:
        sid = nb.start_session("Plan the trip").id
        nb.record(sid, "Booked the train to Lyon")
    with Notebook.open(home, backend=url) as nb:
        found = nb.search("train", mode="lexical")
        assert [h.moment.content.text for h in found] == ["Booked the train to Lyon"]
        nb.store.put(("notes",), "k", {"v": 1})  # LangGraph's store: in the database
        assert not (home / "store.db").exists()


def test_init_writes_the_url_into_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    url = pg.url_with_schema(tmp_path)
    result = cli(home, "init", "--backend", url)
    assert result.returncode == 0, result.stderr.decode()
    assert "backend: " in (home / "config.yaml").read_text()
    with Notebook.open(home) as nb:
        assert nb.backend.capabilities.name == "postgres"
        assert nb.backend.location == url


def test_the_cli_loads_no_driver_until_a_postgres_notebook_opens() -> None:
    import subprocess
    import sys

    code = "import sys, agent_notebook.cli; print('psycopg' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, text=True)
    assert out.stdout.strip() == "False"
