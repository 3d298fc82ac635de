"""``agent-notebook serve`` in a subprocess for the tests that need a real server, with the
module-scoped ``server`` and per-test ``api`` fixtures (a plugin of ``conftest``) and the
checks of its answers."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agent_notebook.errors import NotFound
from agent_notebook.privacy.tokens import read_owner_token
from tests.support.waiting import HANG_GUARD_S, wait_until

ENV = {**os.environ, "AGENT_NOTEBOOK_EMBEDDER": "none"}


#: Tries at a free port: another test (or xdist worker) may take the one picked before the
#: server binds it, and then the server exits with "address already in use".
PORT_TRIES = 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``agent-notebook serve`` in a subprocess on a free loopback port (over ``home`` and
    any ``more_homes``, with ``options`` of ``serve`` besides); ``token`` is the first home's
    owner token."""

    def __init__(
        self, home: Path, log: Path, *more_homes: Path, options: tuple[str, ...] = ()
    ) -> None:
        self.home, self.log, self.options = home, log, options
        for _ in range(PORT_TRIES):
            if self._start(home, *more_homes):
                self.token = read_owner_token(home)
                return
            assert "address already in use" in log.read_text(), log.read_text()
        raise AssertionError(f"no free port in {PORT_TRIES} tries: {log.read_text()}")

    def _start(self, *homes: Path) -> bool:
        """Serve on a free port: True once it answers, False if it exited."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "agent_notebook", "serve"]
        for root in homes:
            command += ["--home", str(root)]
        command += ["--port", str(self.port), "--model", "fake:echo", "--log-level", "warning"]
        command += self.options
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, env=ENV, stdout=out, stderr=out)
        return wait_until(self._healthy, "the server's start", alive=self._running, pause=0.1)

    def _healthy(self) -> bool:
        """It answers, and as this home's server: it takes the home's owner token (after a
        failed bind, another test's server may answer on that port)."""
        try:
            auth = {"Authorization": f"Bearer {read_owner_token(self.home)}"}
            answer = httpx.get(f"{self.url}/api/health", headers=auth, timeout=HANG_GUARD_S)
        except (NotFound, httpx.TransportError):
            return False
        return answer.status_code == 200 and answer.json().get("notebook") is not None

    def _running(self) -> bool:
        return self.process.poll() is None

    def cpu_seconds(self) -> float:
        """The CPU time (user and system) the server process has used so far, from
        ``/proc`` (Linux)."""
        stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime

    def client(self, token: str | None = None) -> httpx.Client:
        """A client sending ``token`` (default: the owner's) as its bearer token."""
        auth = {"Authorization": f"Bearer {token or self.token}"}
        return httpx.Client(base_url=self.url, timeout=HANG_GUARD_S, headers=auth)

    def mcp_client(self, token: str | None = None) -> httpx.AsyncClient:
        return create_mcp_http_client(headers={"Authorization": f"Bearer {token or self.token}"})

    def stop(self) -> None:
        self.process.terminate()  # uvicorn shuts down gracefully: the notebook is closed
        # uvicorn re-raises the signal once it has shut down, so -SIGTERM is a clean exit
        assert self.process.wait(HANG_GUARD_S) in (0, -15), self.log.read_text()


def mcp_session(
    server: Server,
    work: Callable[[ClientSession], Awaitable[Any]],
    *,
    token: str | None = None,
    path: str = "/mcp/",
) -> Any:
    """``work`` in a real MCP client session on ``server``'s ``path`` (``/mcp-guest/`` for a
    guest) with ``token`` (default: the owner's)."""

    async def main() -> Any:
        async with (
            server.mcp_client(token) as http,
            streamable_http_client(f"{server.url}{path}", http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await work(session)

    return anyio.run(main)


def over_mcp(server: Server, tool: str, arguments: dict[str, object]) -> tuple[bool, str]:
    """One call of the owner's MCP ``tool``: whether it is an error, and its first text."""

    async def call(session: ClientSession) -> tuple[bool, str]:
        result = await session.call_tool(tool, arguments)
        return bool(result.isError), result.content[0].text  # type: ignore[union-attr]

    found: tuple[bool, str] = mcp_session(server, call)
    return found


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("server")
    running = Server(root / "home", root / "server.log")
    yield running
    running.stop()


@pytest.fixture
def api(server: Server) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def new_session(api: httpx.Client, task: str = "Plan the trip") -> str:
    response = api.post("/api/sessions", json={"task": task})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def assert_error(response: httpx.Response, status: int, *words: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"error", "detail", "fix"} and body["fix"], body
    for word in words:
        assert word in body["detail"], body
    return body


@contextmanager
def signed_in(server: Server, token: str) -> Iterator[httpx.Client]:
    """A client holding the sign-in cookie (as a browser would), no bearer header."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        answer = client.post("/signin", data={"token": token, "next": "/sessions"})
        assert answer.status_code == 303, answer.text
        cookie = answer.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        yield client


def csrf_of(client: httpx.Client, path: str = "/sessions") -> str:
    """The CSRF token the page at ``path`` carries (for its forms)."""
    found = re.search(r'name="csrf-token" content="([0-9a-f]+)"', client.get(path).text)
    assert found, "the page carries its CSRF token"
    return found.group(1)
