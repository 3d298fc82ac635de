"""``agent-notebook serve`` stops when told, even while a client holds a request open
(issue 40, item 5): a body that stops arriving gets a 408, SIGTERM ends the process within
the issue's 10 s whatever is in flight, a second SIGTERM ends it at once, and every write
acknowledged before is stored. The PostgreSQL side (a request waiting on a lock) is in
``tests/processes/test_postgres_lock_waits.py``."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import pytest

from tests.support.server import Server
from tests.support.stopping import EXIT_BOUND_S, assert_stored, hold_half_a_body, write_moments
from tests.support.waiting import HANG_GUARD_S, wait_until


def test_a_body_that_stops_arriving_gets_a_408_and_the_server_goes_on(tmp_path: Path) -> None:
    server = Server(tmp_path / "home", tmp_path / "server.log", options=("--read-timeout", "1"))
    try:
        with hold_half_a_body(server.port, server.token) as held:
            held.settimeout(HANG_GUARD_S)
            answer = _whole_answer(held)
        assert answer.startswith("HTTP/1.1 408"), answer
        assert "stopped arriving" in answer and "--read-timeout" in answer, answer
        with server.client() as api:
            assert api.get("/api/sessions").json()["items"] == []  # nothing was made
    finally:
        server.stop()


@pytest.mark.slow  # it waits out the grace period (5 s)
def test_sigterm_stops_the_server_while_a_client_holds_half_a_body(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = Server(home, tmp_path / "server.log")  # the defaults: a 30 s read, a 5 s grace
    with server.client() as api:
        acked = write_moments(api)
    with hold_half_a_body(server.port, server.token):
        _wait_for_the_request(server)
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(EXIT_BOUND_S)  # TimeoutExpired: it did not stop in time
    assert code in (-signal.SIGTERM, 128 + signal.SIGTERM), server.log.read_text()
    assert_stored(home, acked)


def test_a_second_sigterm_stops_the_server_at_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    # a grace of an hour: only the second signal can end it within the bound
    server = Server(home, tmp_path / "server.log", options=("--shutdown-grace", "3600"))
    with server.client() as api:
        acked = write_moments(api)
    with hold_half_a_body(server.port, server.token):
        _wait_for_the_request(server)
        server.process.send_signal(signal.SIGTERM)
        wait_until(lambda: not _accepts(server.port), "the first SIGTERM's stop", pause=0.05)
        assert server.process.poll() is None, "the held request keeps it in its grace period"
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(EXIT_BOUND_S)
    assert code == -signal.SIGTERM, server.log.read_text()
    assert "a second signal: stopping now" in server.log.read_text()
    assert_stored(home, acked)


def _wait_for_the_request(server: Server) -> None:
    """Until the server has most likely taken the held request in: a request sent after it,
    on a connection of its own, has been answered (one event loop reads both)."""
    with server.client() as api:
        assert api.get("/api/health").status_code == 200


def _whole_answer(conn: socket.socket) -> str:
    """The response on ``conn``: its head, then as many bytes as its Content-Length says."""
    got = b""
    while b"\r\n\r\n" not in got:
        part = conn.recv(65536)
        assert part, f"the connection closed before the answer's head: {got!r}"
        got += part
    head, _, body = got.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(body) < length:
        part = conn.recv(65536)
        assert part, f"the connection closed mid-answer: {got!r}"
        body += part
    return (head + b"\r\n\r\n" + body).decode()


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD_S).close()
    except OSError:
        return False
    return True
