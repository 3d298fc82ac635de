"""A real ``agent-notebook serve`` process over its life: the owner token rotated while it
runs, an MCP client's normal disconnect, and a port that is already taken."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agent_notebook.privacy.tokens import OWNER_TOKEN_FILE, read_owner_token
from tests.support.docs_text import read
from tests.support.server import ENV, Server, assert_error


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agent_notebook", *args, "--home", str(home)]
    return subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=120)


def test_rotate_owner_is_taken_up_by_the_running_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = Server(home, tmp_path / "server.log")
    try:
        old = server.token
        made = cli(home, "token", "create", "--guest", "planner")
        assert made.returncode == 0, made.stderr
        guest = made.stdout.strip()
        with server.client(old) as api:
            assert api.get("/api/sessions").status_code == 200  # the old token is cached now

        rotated = cli(home, "token", "rotate-owner")
        assert rotated.returncode == 0, rotated.stderr
        new = rotated.stdout.strip()
        assert new and new != old and "rotated" in rotated.stderr
        path = home / "secrets" / OWNER_TOKEN_FILE
        assert read_owner_token(home) == new
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert not list(path.parent.glob("*.tmp*"))  # written atomically, nothing left over

        with server.client(old) as api:  # no restart: the old token is refused at once
            assert_error(api.get("/api/sessions"), 401, "not valid")
        with server.client(new) as api:
            assert api.get("/api/sessions").status_code == 200
        with server.client(guest) as api:  # guest tokens are untouched
            assert api.get("/api/slice", params={"q": "anything"}).status_code == 200
    finally:
        server.stop()


def test_an_mcp_clients_normal_disconnect_logs_no_error(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    server = Server(tmp_path / "home", log)
    try:

        async def session_then_leave() -> None:
            async with (
                server.mcp_client() as client,
                streamable_http_client(f"{server.url}/mcp/", http_client=client) as (r, w, _),
                ClientSession(r, w) as session,
            ):
                await session.initialize()
                await session.call_tool("search", {"query": "anything"})

        for _ in range(3):
            anyio.run(session_then_leave)
    finally:
        server.stop()  # a graceful stop: whatever the server had to log is in the file now
    text = log.read_text()
    assert "ERROR" not in text and "Traceback" not in text, text
    assert "ClosedResourceError" not in text, text
    # it said where it serves, before anything else could be asked of it
    assert f"serving on {server.url}/ (web page), {server.url}/docs (API docs)" in text, text


def test_serve_on_a_taken_port_fails_at_once_and_says_so(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = ["serve", "--home", str(home), "--port", str(port), "--model", "fake:echo"]
        run = subprocess.run(
            [sys.executable, "-m", "agent_notebook", *command],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 1, run.stderr
    assert f"port {port} on 127.0.0.1 is in use" in run.stderr and "--port" in run.stderr
    assert "Traceback" not in run.stderr
    assert not home.exists()  # it failed before touching the notebook


@pytest.mark.slow
def test_the_docs_server_example_gives_up_when_its_port_is_taken(tmp_path: Path) -> None:
    """The LangGraph-over-HTTP example of docs/server.md, with its port taken: it stops with
    a message instead of waiting forever."""
    server_page = read("docs/server.md")  # the README's "Server" section, moved there
    assert server_page.startswith("# Server\n")
    code = server_page.split("```python\n", 1)[1].split("```", 1)[0]
    assert "A LangGraph app over HTTP" in server_page.split(code, 1)[0]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = code.replace("/tmp/my-notebook", str(tmp_path / "nb")).replace("8765", str(port))
        run = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, **ENV},
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
    assert run.returncode != 0
    assert "did not start" in run.stderr, run.stderr
