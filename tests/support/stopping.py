"""What the tests of a server that must stop share: a client that sends half a request body
and holds the connection, acknowledged writes, and the check that they are all stored."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx

from agent_notebook import Notebook

#: The issue's bound (issue 40, item 5): ``serve`` exits this many seconds after SIGTERM.
EXIT_BOUND_S = 10


def hold_half_a_body(port: int, token: str) -> socket.socket:
    """A connection that has sent a request's headers and half its body, and holds."""
    held = socket.create_connection(("127.0.0.1", port))
    body = b'{"task": "never finis'
    held.sendall(
        b"POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + f"Authorization: Bearer {token}\r\n".encode()
        + b"Content-Type: application/json\r\nContent-Length: 400\r\n\r\n"
        + body
    )
    return held


def write_moments(api: httpx.Client, count: int = 3) -> dict[str, str]:
    """``count`` moments recorded in a new session, each acknowledged: id -> text."""
    made = api.post("/api/sessions", json={"task": "Writes before the stop"})
    assert made.status_code == 201, made.text
    sid = made.json()["id"]
    acked: dict[str, str] = {}
    for n in range(count):
        text = f"acknowledged write {n}"
        answer = api.post(f"/api/sessions/{sid}/moments", json={"text": text, "speaker": "ana"})
        assert answer.status_code == 201, answer.text
        acked[answer.json()["id"]] = text
    return acked


def assert_stored(home: Path, acked: dict[str, str], backend: str | None = None) -> None:
    """Every acknowledged write is in the notebook, opened again."""
    with Notebook.open(home, backend=backend) as nb:
        for mid, text in acked.items():
            assert nb.get_moment(mid).content.text == text
