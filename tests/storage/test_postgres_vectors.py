"""Vectors shared by several servers over one PostgreSQL database (see ``pg``): each
server's in-process index follows the database's change log, so what one server embeds or
redacts shows in another's vector search without a restart, and the embedding work is
claimed, so each moment is embedded once, and a killed server's claims are taken over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.model import moment_number
from agent_notebook.search import semantic
from agent_notebook.storage import StorageBackend
from agent_notebook.storage.postgres import PostgresBackend
from tests.support import pg
from tests.support.clirun import cli
from tests.support.embedders import FAKE_DIM, fake_embedder

DIM = FAKE_DIM
WAIT = 60  # seconds; only ever reached when the test fails
TEXTS = [
    "The red kite circled over the vineyard near Lyon",
    "Ana booked the 7:40 train to Marseille for Saturday",
    "The boiler in the cellar needs a new pressure valve",
]


class CountingBackend(PostgresBackend):
    """The real backend, counting the vectors each moment is given."""

    def __init__(self, *args: object, stored: Counter[int], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.stored = stored
        self.lock = threading.Lock()

    def put_vectors(self, model: str, vectors: Sequence[tuple[int, str, bytes]]) -> None:
        super().put_vectors(model, vectors)
        with self.lock:
            self.stored.update(num for num, _, _ in vectors)


@pytest.fixture
def two_servers(tmp_path: Path) -> Iterator[tuple[Notebook, Notebook]]:
    """Two notebooks (two servers) on one database schema, embedding in the foreground."""
    name = pg.schema_for(tmp_path)
    a, b = (
        Notebook(
            PostgresBackend(pg.database_url(), schema_name=name),
            embedder=fake_embedder(),
            background_embedding=False,
        )
        for _ in range(2)
    )
    yield a, b
    a.close()
    b.close()


def vector_hits(nb: Notebook, query: str) -> list[str]:
    return [hit.moment.id for hit in nb.search(query, mode="vector", limit=3)]


def test_what_one_server_embeds_another_finds_and_a_redaction_leaves_both(
    two_servers: tuple[Notebook, Notebook],
) -> None:
    a, b = two_servers
    assert vector_hits(b, TEXTS[0]) == []  # B's index is loaded, and empty
    sid = a.start_session("shared").id
    recorded = [a.record(sid, text) for text in TEXTS]
    assert a.reindex() == len(TEXTS)
    assert vector_hits(b, TEXTS[0])[0] == recorded[0].id  # no restart of B
    assert vector_hits(b, TEXTS[2])[0] == recorded[2].id
    a.redact(recorded[0].id, "private")
    for nb in (a, b):
        assert recorded[0].id not in vector_hits(nb, TEXTS[0])
        assert vector_hits(nb, TEXTS[1])[0] == recorded[1].id
    assert b.semantic is not None and b.semantic.position == a.backend.last_vector_change()


def test_the_background_worker_of_one_server_embeds_for_the_others(tmp_path: Path) -> None:
    name = pg.schema_for(tmp_path)
    writer, reader = (
        Notebook(PostgresBackend(pg.database_url(), schema_name=name), embedder=fake_embedder())
        for _ in range(2)
    )
    try:
        assert vector_hits(reader, TEXTS[1]) == []
        sid = writer.start_session("worker").id
        recorded = [writer.record(sid, text) for text in TEXTS]
        assert writer.semantic is not None and writer.semantic.wait_idle(WAIT)
        assert vector_hits(reader, TEXTS[1])[0] == recorded[1].id
        assert reader.unembedded() == 0
    finally:
        writer.close()
        reader.close()


def test_a_session_deleted_on_one_server_leaves_the_others_index(
    two_servers: tuple[Notebook, Notebook],
) -> None:
    a, b = two_servers
    kept, gone = a.start_session("kept").id, a.start_session("gone").id
    a.record(kept, TEXTS[1])
    dropped = a.record(gone, TEXTS[0])
    a.reindex()
    assert vector_hits(b, TEXTS[0])[0] == dropped.id
    a.backend.delete_session(gone)
    assert dropped.id not in vector_hits(b, TEXTS[0])


def test_two_servers_embedding_at_once_embed_each_moment_once(tmp_path: Path) -> None:
    stored: Counter[int] = Counter()
    name = pg.schema_for(tmp_path)
    backends = [
        CountingBackend(pg.database_url(), schema_name=name, stored=stored) for _ in range(2)
    ]
    notebooks = [
        Notebook(backend, embedder=fake_embedder(), background_embedding=False)
        for backend in backends
    ]
    try:
        sid = notebooks[0].start_session("many").id
        texts = [f"moment {i}: a note about the harvest, row {i % 17}" for i in range(600)]
        notebooks[0].record_many(sid, [{"text": text} for text in texts])
        start = threading.Barrier(2)
        done: list[int] = []

        def embed(nb: Notebook) -> None:
            start.wait(WAIT)
            done.append(nb.reindex())

        workers = [threading.Thread(target=embed, args=(nb,)) for nb in notebooks]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(WAIT)
        assert sum(done) == len(texts)
        numbers = {int(m.id.removeprefix("m_")) for m in notebooks[0].backend.list_moments()}
        assert set(stored) == numbers and set(stored.values()) == {1}
        assert notebooks[1].unembedded() == 0
    finally:
        for nb in notebooks:
            nb.close()


def claim(backend: StorageBackend, num: int, owner: str, seconds: float) -> None:
    """A claim row as a server writes it, its lease ending ``seconds`` from now."""
    assert isinstance(backend, PostgresBackend)
    with backend.atomic():
        backend._write(
            "INSERT INTO vector_claims (num, model, owner, until) "
            "VALUES (%s, %s, %s, clock_timestamp() + make_interval(secs => %s))",
            (num, "fake-32", owner, seconds),
        )


def test_a_lapsed_claim_is_taken_over_and_a_live_one_is_left(
    two_servers: tuple[Notebook, Notebook],
) -> None:
    a, b = two_servers
    sid = a.start_session("claims").id
    first, second, _ = (a.record(sid, text) for text in TEXTS)
    claim(a.backend, first.number, "killed-server", -1.0)  # its lease has passed
    claim(a.backend, second.number, "live-server", 3600.0)
    assert b.reindex() == 2  # the lapsed claim's moment and the unclaimed one
    assert vector_hits(b, TEXTS[0])[0] == first.id
    assert b.backend.unembedded("fake-32") == [second.number]


KILLED_SERVER = """
import os, sys, time
from langchain_core.embeddings import DeterministicFakeEmbedding
from agent_notebook import Notebook
from agent_notebook.embed import LangChainEmbedder
from agent_notebook.model import moment_number
from agent_notebook.storage.postgres import PostgresBackend

class Stuck(DeterministicFakeEmbedding):
    def embed_documents(self, texts):
        print("claimed", flush=True)
        time.sleep(3600)  # killed here, holding its claims

backend = PostgresBackend(sys.argv[1], schema_name=sys.argv[2])
embedder = LangChainEmbedder(Stuck(size=DIM), "fake-32", dim=DIM)
Notebook(backend, embedder=embedder, background_embedding=False).reindex()
""".replace("DIM", str(DIM))


def test_the_claims_of_a_server_killed_mid_batch_are_taken_over(
    two_servers: tuple[Notebook, Notebook], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = two_servers
    sid = a.start_session("killed").id
    recorded = [a.record(sid, text) for text in TEXTS]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen(
        [sys.executable, "-c", KILLED_SERVER, pg.database_url(), pg.schema_for(tmp_path)],
        stdout=subprocess.PIPE,
        env=env,
    ) as server:
        try:
            assert server.stdout is not None and server.stdout.readline() == b"claimed\n"
        finally:
            server.send_signal(signal.SIGKILL)
            server.wait(WAIT)
    assert b.reindex() == 0  # every moment is claimed by the killed server
    assert isinstance(a.backend, PostgresBackend)
    with a.backend.atomic():  # its lease runs out (30 s; here, now)
        a.backend._write("UPDATE vector_claims SET until = clock_timestamp()")
    monkeypatch.setattr(semantic, "TAKEOVER_S", 0.0)
    assert b.semantic is not None
    b.semantic.catch_up(newer_only=True)  # the worker's pass looks from the first moment
    assert b.unembedded() == 0
    assert vector_hits(a, TEXTS[1])[0] == recorded[1].id


def test_doctor_reports_the_server_its_pool_and_the_vector_lag(tmp_path: Path) -> None:
    home = tmp_path / "home"
    url = pg.url_with_schema(tmp_path)
    assert cli(home, "init", "--backend", url).returncode == 0
    with Notebook.open(home, background_embedding=False) as nb:
        sid = nb.start_session("doctor").id
        nb.record(sid, TEXTS[0])
        nb.record(sid, TEXTS[1])
    result = cli(home, "doctor", "--format", "json")
    assert result.returncode == 0, result.stderr.decode()
    checks = json.loads(result.stdout)
    assert checks["server version"].startswith("PostgreSQL 1")
    assert checks["server"] == url
    assert "open" in checks["pool"] and "at most" in checks["pool"]
    if checks["embedder"].startswith("none"):
        pytest.skip("no embedder in this installation: " + checks["embedder"])
    assert checks["unembedded"] == 2
    assert checks["vector index"].startswith("database at change 0;")
    assert cli(home, "reindex").returncode == 0
    checks = json.loads(cli(home, "doctor", "--format", "json").stdout)
    assert checks["unembedded"] == 0
    assert checks["vector index"].startswith("database at change 2;")


def test_a_notebook_of_the_first_schema_gets_its_vectors_numbered(tmp_path: Path) -> None:
    """Migration 2 on a database made before it: the vectors stored then are in the
    change log, so a server's index loads them."""
    import psycopg

    from agent_notebook.storage.postgres import schema

    name = pg.schema_for(tmp_path)
    with psycopg.connect(pg.database_url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
        conn.execute(f"SET search_path = {name}")
        for statement in schema.MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("UPDATE notebook_schema SET version = 1")
        conn.execute(
            "INSERT INTO moments (num, session_id, ts_us, speaker, role, text, body, terms, "
            "length) VALUES (1, 's', 0, 'ana', 'user', 'one', '{}', '', 1)"
        )
        conn.execute("INSERT INTO moment_vectors (num, model, vector) VALUES (1, 'm', 'v1')")
    backend = PostgresBackend(pg.database_url(), schema_name=name)
    try:
        changes, through = backend.vector_changes("m")
        assert changes == [(1, b"v1")] and through == backend.last_vector_change() > 0
    finally:
        backend.close()


def test_old_tombstones_are_pruned_and_an_index_behind_them_loads_again(
    two_servers: tuple[Notebook, Notebook], tmp_path: Path
) -> None:
    """``vector_drops`` keeps a tombstone for ``DROPS_KEPT``; a server that has not looked
    since a pruned one reloads its index, so a removed vector is never found."""
    import psycopg

    a, b = two_servers
    sessions = [a.start_session(f"s{i}").id for i in range(3)]
    recorded = [a.record(sid, text) for sid, text in zip(sessions, TEXTS, strict=True)]
    a.reindex()
    assert vector_hits(b, TEXTS[0])[0] == recorded[0].id  # B's index holds all three
    a.backend.delete_session(sessions[0])  # a tombstone B has not seen
    with psycopg.connect(pg.database_url(), autocommit=True) as conn:
        conn.execute(f"SET search_path = {pg.schema_for(tmp_path)}")
        conn.execute("UPDATE vector_drops SET at = now() - interval '2 days'")
        a.backend.delete_session(sessions[2])  # its drop prunes the aged one
        assert conn.execute("SELECT count(*) FROM vector_drops").fetchone() == (1,)
        (horizon,) = conn.execute("SELECT seq FROM vector_drops_horizon").fetchone()
    assert b.semantic is not None and 0 < b.semantic.position < horizon  # type: ignore[operator]
    assert vector_hits(b, TEXTS[1]) == [recorded[1].id]
    index = b.semantic.index()  # what B holds, not only what its search shows
    assert [moment_number(m.id) in index for m in recorded] == [False, True, False]
    assert b.semantic.position == a.backend.last_vector_change()
