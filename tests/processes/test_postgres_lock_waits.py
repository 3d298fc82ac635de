"""PostgreSQL writes that wait on the notebook's writer lock (issue 40, items 5 and 6): the
wait ends in a 503 with Retry-After after ``AGENT_NOTEBOOK_PG_TIMEOUT_S``, reads and health
answer while writes queue, a write goes through once the lock is free, and SIGTERM stops a
server whose request waits on the lock within the issue's 10 s, every acknowledged write
stored. The lock is held from the test, on a connection of its own, as another server's
write would hold it."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from agent_notebook.storage.postgres.connection import WRITER_LOCK
from tests.support import pg
from tests.support.clirun import text_cli
from tests.support.pg_servers import PgServer
from tests.support.stopping import EXIT_BOUND_S, assert_stored, write_moments
from tests.support.waiting import HANG_GUARD_S, wait_until

#: The writer lock's wait in the first test (seconds): its writes answer 503 after it (long
#: enough for the test to see a write waiting on a loaded machine).
LOCK_WAIT_S = "8"
#: More writes at once than the server's pool has connections (8).
QUEUED = 12
NO_EMBEDDER = {"AGENT_NOTEBOOK_EMBEDDER": "none"}


def _server(root: Path, env: dict[str, str] | None = None) -> tuple[PgServer, str]:
    url = pg.url_with_schema(root)
    home = root / "machine"
    home.mkdir()
    # the owner token (and the notebook's tables) made in this process: the process under
    # test is the server
    made = text_cli(home, "token", "rotate-owner", "--backend", url, env=NO_EMBEDDER)
    assert made.returncode == 0, made.stderr
    return PgServer(home, url, made.stdout.strip(), env), url


@contextmanager
def writer_lock_held(url: str) -> Iterator[psycopg.Connection[Any]]:
    """The notebook's writer lock, taken as a write of another process takes it."""
    with psycopg.connect(url) as conn:  # a transaction until the block ends
        conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))", (WRITER_LOCK,))
        yield conn
        conn.rollback()


def _waiting_on_the_lock(conn: psycopg.Connection[Any]) -> bool:
    """Another session waits on an advisory lock of this database."""
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND wait_event = 'advisory' AND pid <> pg_backend_pid()"
    ).fetchone()
    return bool(row and row[0])


def _post_in_thread(server: PgServer, sid: str, n: int, answers: list[Any]) -> threading.Thread:
    def post() -> None:
        try:
            with server.client() as api:
                body = {"text": f"queued write {n}", "speaker": "ana"}
                answers.append(api.post(f"/api/sessions/{sid}/moments", json=body))
        except httpx.TransportError as err:  # the server stopped under it
            answers.append(err)

    thread = threading.Thread(target=post, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
def test_a_write_waiting_on_the_writer_lock_gets_a_503_and_reads_go_on(tmp_path: Path) -> None:
    server, url = _server(tmp_path, {"AGENT_NOTEBOOK_PG_TIMEOUT_S": LOCK_WAIT_S})
    try:
        with server.client() as api:
            sid = api.post("/api/sessions", json={"task": "Writes that queue"}).json()["id"]
            with writer_lock_held(url) as holder:
                answers: list[Any] = []
                writers = [_post_in_thread(server, sid, n, answers) for n in range(QUEUED)]
                # (on a loaded machine the writes may all have timed out by the first look)
                wait_until(
                    lambda: bool(answers) or _waiting_on_the_lock(holder),
                    "a write waiting on the lock",
                )
                # while writes queue (more than the pool's connections), reads answer
                assert api.get("/api/sessions").status_code == 200
                assert api.get("/api/search", params={"q": "queued"}).status_code == 200
                assert api.get("/api/health").status_code == 200
                for writer in writers:
                    writer.join(HANG_GUARD_S)
            assert len(answers) == QUEUED
            for answer in answers:
                assert isinstance(answer, httpx.Response), answer
                assert answer.status_code == 503, answer.text
                assert answer.headers["Retry-After"].isdigit()
                assert "writer lock" in answer.json()["detail"], answer.text
            # the lock is free: the same write goes through, and none of the refused did
            done = api.post(f"/api/sessions/{sid}/moments", json={"text": "after", "speaker": "a"})
            assert done.status_code == 201, done.text
            stored = api.get(f"/api/sessions/{sid}/moments").json()["items"]
            assert [m["content"]["text"] for m in stored] == ["after"]
    finally:
        server.stop()


@pytest.mark.slow
def test_sigterm_stops_a_server_whose_write_waits_on_the_lock(tmp_path: Path) -> None:
    server, url = _server(tmp_path)  # the default wait for a lock: 60 s
    with server.client() as api:
        acked = write_moments(api)
        sid = api.get("/api/sessions").json()["items"][0]["id"]
    with writer_lock_held(url) as holder:
        answers: list[Any] = []
        _post_in_thread(server, sid, 0, answers)
        wait_until(lambda: _waiting_on_the_lock(holder), "the write waiting on the lock")
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(EXIT_BOUND_S)  # TimeoutExpired: it did not stop in time
    assert code in (-signal.SIGTERM, 128 + signal.SIGTERM), server.log.read_text()
    assert_stored(server.home, acked, backend=url)
