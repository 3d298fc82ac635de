"""API access on a real ``agent-notebook serve`` (uvicorn in a subprocess) over two owners'
notebooks: bearer tokens (401), guest tokens (slice and write-back only, else 403), owners
isolated (404), path-traversal ids and oversized bodies refused with nothing changed, and the
token files owner-only with no guest token in clear."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import stat
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from agent_notebook.config import DEFAULT_MAX_TEXT_BYTES
from agent_notebook.privacy.tokens import (
    GUEST_TOKENS_FILE,
    OWNER_TOKEN_FILE,
    read_owner_token,
)
from agent_notebook.server.settings import body_limit_for
from tests.support.clirun import text_cli
from tests.support.mcp_stdio import text_of
from tests.support.server import Server, assert_error, mcp_session

GUEST_WORDS = ("GET /api/slice", "write-back", "/mcp-guest/")


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return text_cli(home, *args, env={"AGENT_NOTEBOOK_EMBEDDER": "none"})


class Owners:
    """One server over the notebooks of owners A and B, and A's guest ``planner``."""

    def __init__(self, root: Path) -> None:
        self.a, self.b = root / "a", root / "b"
        for home in (self.a, self.b):
            assert cli(home, "init").returncode == 0
        self.server = Server(self.a, root / "server.log", self.b)
        self.token_a = self.server.token
        self.token_b = read_owner_token(self.b)
        made = cli(self.a, "token", "create", "--guest", "planner")  # while the server runs
        assert made.returncode == 0, made.stderr
        self.guest = made.stdout.strip()
        with self.server.client(self.token_a) as api:
            self.trip = new_session(api, "Trip to Lyon")
            moment = api.post(
                f"/api/sessions/{self.trip}/moments", json={"text": "Ana booked the Lyon train"}
            )
            assert moment.status_code == 201, moment.text
            self.moment = str(moment.json()["id"])
        with self.server.client(self.token_b) as api:  # B has more of everything than A
            self.b_sessions = [new_session(api, f"B's secret plan {n}") for n in range(3)]
            for n in range(4):
                body = {"text": f"B's heron sighting number {n}"}
                api.post(f"/api/sessions/{self.b_sessions[-1]}/moments", json=body)
            self.b_moment = str(
                api.get("/api/moments", params={"limit": 10}).json()["items"][-1]["id"]
            )

    def client(self, token: str | None) -> httpx.Client:
        headers = {} if token is None else {"Authorization": f"Bearer {token}".strip()}
        return httpx.Client(base_url=self.server.url, timeout=30, headers=headers)


def new_session(api: httpx.Client, task: str) -> str:
    response = api.post("/api/sessions", json={"task": task})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


@pytest.fixture(scope="module")
def owners(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Owners]:
    running = Owners(tmp_path_factory.mktemp("auth"))
    yield running
    running.server.stop()


def snapshot(owners: Owners, home: Path, token: str) -> dict[str, Any]:
    """What a request must not change: the notebook's records as the API shows them, and
    every file of the home with its size (the WAL's size aside: a read may grow it)."""
    with owners.client(token) as api:
        records = {
            "stats": api.get("/api/stats").json(),
            "sessions": api.get("/api/sessions", params={"limit": 1000}).json(),
            "moments": api.get("/api/moments", params={"limit": 1000}).json(),
        }
    files = {
        str(p.relative_to(home)): (p.stat().st_size if not p.name.endswith("-wal") else 0)
        for p in sorted(home.rglob("*"))
        if p.is_file() and not p.name.endswith("-shm")
    }
    return {"records": records, "files": files}


def raw(url: str, method: str, path: str, token: str, body: bytes | None = None) -> int:
    """Send ``path`` byte for byte (httpx would resolve its dot segments) and return the
    status."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        if response.status >= 400 and response.status != 405:
            assert set(json.loads(data)) == {"error", "detail", "fix"}, data
        return response.status
    finally:
        conn.close()


# -- 401 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "wrong-token", ""], ids=["missing", "wrong", "empty"])
def test_a_missing_or_wrong_token_gets_401(owners: Owners, token: str | None) -> None:
    before = snapshot(owners, owners.a, owners.token_a)
    with owners.client(token) as api:
        for method, path in [
            ("GET", "/api/sessions"),
            ("POST", "/api/sessions"),
            ("GET", f"/api/moments/{owners.moment}"),
            ("GET", "/api/slice?q=Lyon"),
            ("POST", f"/api/sessions/{owners.trip}/write-back"),
            ("GET", "/api/export"),
            ("POST", "/api/chat/sessions"),
            ("POST", "/mcp/"),
            ("POST", "/mcp-guest/"),
        ]:
            response = api.request(method, path, json={"task": "sneaky"})
            assert_error(response, 401, "Bearer")
            assert response.headers["WWW-Authenticate"].startswith("Bearer")
    with owners.client(None) as api:  # a Basic header is no bearer token either
        basic = api.get("/api/sessions", headers={"Authorization": "Basic b3duZXI6eA=="})
        assert_error(basic, 401, "Bearer")
    assert snapshot(owners, owners.a, owners.token_a) == before


def test_health_and_the_docs_stay_open_without_the_notebooks_location(owners: Owners) -> None:
    with owners.client(None) as api:
        assert api.get("/api/health").json()["notebook"] is None
        assert api.get("/openapi.json").status_code == 200
    with owners.client(owners.token_a) as api:
        assert api.get("/api/health").json()["notebook"] == str(owners.a / "notebook.db")


# -- guests ---------------------------------------------------------------------------------


def test_a_guest_token_may_not_record_update_redact_forget_export_or_read(owners: Owners) -> None:
    before = snapshot(owners, owners.a, owners.token_a)
    sid, mid = owners.trip, owners.moment
    section = "/api/threads/trip/notebook/sections/Current State"
    refused = [
        ("POST", f"/api/sessions/{sid}/moments", {"text": "a guest's moment"}),
        ("POST", f"/api/sessions/{sid}/moments/batch", {"moments": [{"text": "x"}]}),
        ("POST", "/api/sessions", {"task": "a guest's session"}),
        ("PATCH", f"/api/sessions/{sid}", {"task": "renamed by a guest"}),
        ("POST", f"/api/sessions/{sid}/decisions", {"what": "guest decides"}),
        ("PUT", section, {"content": "a guest was here"}),
        ("POST", f"/api/moments/{mid}/redact", {"reason": "guest wants it gone"}),
        ("POST", "/api/forget", {"concept": "lyon", "reason": "guest"}),
        ("GET", "/api/export", None),
        ("GET", "/api/export?format=sqlite", None),
        ("GET", f"/api/moments/{mid}", None),
        ("GET", "/api/moments", None),
        ("GET", f"/api/sessions/{sid}", None),
        ("GET", f"/api/sessions/{sid}/moments", None),
        ("GET", "/api/sessions", None),
        ("GET", "/api/search?q=Lyon", None),
        ("GET", "/api/stats", None),
        ("GET", section, None),
        ("POST", "/api/chat/sessions", {}),
        ("POST", "/mcp/", {}),
    ]
    with owners.client(owners.guest) as api:
        for method, path, body in refused:
            response = api.request(method, path, json=body)
            assert_error(response, 403, *GUEST_WORDS)
    assert snapshot(owners, owners.a, owners.token_a) == before


def test_a_guest_token_reads_a_slice_and_writes_back_as_itself(owners: Owners) -> None:
    with owners.client(owners.guest) as api:
        got = api.get("/api/slice", params={"q": "Lyon train", "audience": "planner"})
        assert got.status_code == 200, got.text
        assert f"moment:{owners.moment}" in got.json()["rendered"]
        body = {"guest": "planner", "kind": "decision", "text": "Take the 09:04 train"}
        back = api.post(f"/api/sessions/{owners.trip}/write-back", json=body)
        assert back.status_code == 201, back.text
        assert back.json()["who"] == "guest:planner"
        posing = api.post(
            f"/api/sessions/{owners.trip}/write-back", json={**body, "guest": "owner"}
        )
        assert_error(posing, 403, "'planner'")
    with owners.client(owners.token_a) as api:
        log = api.get(f"/api/sessions/{owners.trip}/decisions").json()["items"]
        assert [d["who"] for d in log] == ["guest:planner"]


def guest_mcp(owners: Owners, work: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    """``work`` in a real MCP client session on ``/mcp-guest/`` with the guest's token."""
    return mcp_session(owners.server, work, token=owners.guest, path="/mcp-guest/")


def test_the_guest_mcp_answers_a_guest_token_and_the_owner_mcp_refuses_it(owners: Owners) -> None:
    async def work(session: ClientSession) -> tuple[set[str], CallToolResult, CallToolResult]:
        tools = {t.name for t in (await session.list_tools()).tools}
        sliced = await session.call_tool("slice", {"query": "Lyon train"})
        posing = await session.call_tool(
            "write_back",
            {"guest": "someone", "session_id": owners.trip, "kind": "pending", "text": "x"},
        )
        return tools, sliced, posing

    tools, sliced, posing = guest_mcp(owners, work)
    assert tools == {"slice", "write_back"}
    assert f"moment:{owners.moment}" in text_of(sliced)
    assert posing.isError and "'planner'" in text_of(posing)
    with owners.client(owners.guest) as api:
        assert_error(api.post("/mcp/", json={}), 403, "/mcp-guest/")


def test_the_guest_mcp_refuses_what_http_refuses_a_guest(owners: Owners) -> None:
    """A guest token gets 403 on GET /api/search and /api/sessions/{id}: over MCP it gets
    no moment's text and no session either, whatever tool it names."""
    with owners.client(owners.guest) as api:
        assert_error(api.get("/api/search", params={"q": "Lyon"}), 403)
        assert_error(api.get(f"/api/sessions/{owners.trip}"), 403)

    async def work(session: ClientSession) -> list[CallToolResult]:
        return [
            await session.call_tool("search", {"query": "Lyon train"}),
            await session.call_tool("read_session", {"session_id": owners.trip}),
            await session.call_tool(
                "read_notebook_section", {"thread_id": "trip", "section": "Current State"}
            ),
            await session.call_tool("record", {"text": "a guest's moment"}),
        ]

    for refused in guest_mcp(owners, work):
        assert refused.isError, refused.content
        assert "Unknown tool" in text_of(refused)
        assert "Ana booked" not in text_of(refused) and "Trip to Lyon" not in text_of(refused)


def test_errors_name_the_notebooks_path_to_its_owner_only(owners: Owners) -> None:
    missing = "s_2020-01-01_001"
    places = (str(owners.a), os.path.realpath(owners.a))
    body = {"guest": "planner", "kind": "decision", "text": "x"}
    with owners.client(owners.guest) as api:
        refused = assert_error(api.post(f"/api/sessions/{missing}/write-back", json=body), 404)
    assert f"no session {missing}" in refused["detail"]
    assert not any(place in refused["detail"] for place in places), refused

    async def work(session: ClientSession) -> CallToolResult:
        args = {"guest": "planner", "session_id": missing, "kind": "decision", "text": "x"}
        return await session.call_tool("write_back", args)

    over_mcp = guest_mcp(owners, work)
    assert over_mcp.isError and f"no session {missing}" in text_of(over_mcp)
    assert not any(place in text_of(over_mcp) for place in places), text_of(over_mcp)
    with owners.client(owners.token_a) as api:  # the owner is shown where it looked
        owners_view = assert_error(api.get(f"/api/sessions/{missing}"), 404)
    assert str(owners.a) in owners_view["detail"]


def test_the_mcp_server_reports_agent_notebooks_version(owners: Owners) -> None:
    async def main() -> str:
        async with (
            owners.server.mcp_client(owners.token_a) as client,
            streamable_http_client(f"{owners.server.url}/mcp/", http_client=client) as (
                read,
                write,
                _,
            ),
            ClientSession(read, write) as session,
        ):
            return (await session.initialize()).serverInfo.version

    assert anyio.run(main) == metadata.version("agent-notebook") != metadata.version("mcp")


def test_a_revoked_guest_token_gets_401(owners: Owners) -> None:
    made = cli(owners.a, "token", "create", "--guest", "short-lived")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    with owners.client(token) as api:
        assert api.get("/api/slice", params={"q": "Lyon"}).status_code == 200
        listed = cli(owners.a, "token", "list", "--format", "json")
        assert {t["name"] for t in json.loads(listed.stdout)} == {"owner", "planner", "short-lived"}
        assert cli(owners.a, "token", "revoke", "short-lived").returncode == 0
        assert_error(api.get("/api/slice", params={"q": "Lyon"}), 401, "not valid")
    again = cli(owners.a, "token", "revoke", "short-lived")
    assert again.returncode == 1 and "no guest token named 'short-lived'" in again.stderr
    twice = cli(owners.a, "token", "create", "--guest", "planner")
    assert twice.returncode == 1 and "exists already" in twice.stderr
    bad = cli(owners.a, "token", "create", "--guest", "../planner")
    assert bad.returncode == 1 and "guest name" in bad.stderr


# -- several owners -------------------------------------------------------------------------


def test_another_owners_ids_answer_404(owners: Owners) -> None:
    before_b = snapshot(owners, owners.b, owners.token_b)
    with owners.client(owners.token_a) as api:
        assert_error(api.get(f"/api/sessions/{owners.b_sessions[-1]}"), 404, "no session")
        assert_error(api.get(f"/api/moments/{owners.b_moment}"), 404, "no moment")
        redact = api.post(f"/api/moments/{owners.b_moment}/redact", json={"reason": "x"})
        assert_error(redact, 404, "no moment")
        record = api.post(f"/api/sessions/{owners.b_sessions[-1]}/moments", json={"text": "x"})
        assert_error(record, 404)
        # The same id in both notebooks: A sees its own session, never B's.
        first = api.get(f"/api/sessions/{owners.b_sessions[0]}")
        assert first.status_code == 200 and first.json()["task"] == "Trip to Lyon"
        assert api.get("/api/search", params={"q": "heron"}).json()["items"] == []
        assert api.get("/api/stats").json()["sessions"] == 1
    with owners.client(owners.token_b) as api:
        assert api.get("/api/search", params={"q": "heron"}).json()["items"]
        assert api.get("/api/slice", params={"q": "Lyon train"}).json()["slice"]["items"] == []
    with owners.client(owners.guest) as api:  # A's guest writes back to A's session only
        body = {"guest": "planner", "kind": "pending", "text": "x"}
        missing = api.post(f"/api/sessions/{owners.b_sessions[-1]}/write-back", json=body)
        assert_error(missing, 404, "no session")
    assert snapshot(owners, owners.b, owners.token_b) == before_b


# -- traversal, size, redact, forget --------------------------------------------------------


TRAVERSALS = ["../../etc/passwd", "s_..%2F..", "m_1/../x", "..", "%2e%2e%2f%2e%2e", "s_1%00"]


@pytest.mark.parametrize("bad", TRAVERSALS)
def test_path_traversal_ids_get_4xx_and_change_nothing(owners: Owners, bad: str) -> None:
    before = snapshot(owners, owners.a, owners.token_a)
    url, owner, guest = owners.server.url, owners.token_a, owners.guest
    moment = json.dumps({"text": "traversal"}).encode()
    section = json.dumps({"content": "traversal"}).encode()
    back = json.dumps({"guest": "planner", "kind": "decision", "text": "x"}).encode()
    for method, path, token, body in [
        ("GET", f"/api/sessions/{bad}", owner, None),
        ("GET", f"/api/moments/{bad}", owner, None),
        ("GET", f"/api/sessions/{bad}/moments", owner, None),
        ("POST", f"/api/sessions/{bad}/moments", owner, moment),
        ("PATCH", f"/api/sessions/{bad}", owner, json.dumps({"task": "x"}).encode()),
        ("POST", f"/api/moments/{bad}/redact", owner, json.dumps({"reason": "x"}).encode()),
        ("PUT", f"/api/threads/{bad}/notebook/sections/Worklog", owner, section),
        ("PUT", f"/api/threads/trip/notebook/sections/{bad}", owner, section),
        ("POST", f"/api/sessions/{bad}/write-back", guest, back),
        ("GET", f"/api/export?format={bad}", owner, None),
    ]:
        status = raw(url, method, path, token, body)
        assert 400 <= status < 500, (method, path, status)
    assert snapshot(owners, owners.a, owners.token_a) == before
    assert not (owners.a.parent / "etc").exists()


def test_an_oversized_body_gets_413_and_changes_nothing(owners: Owners) -> None:
    before = snapshot(owners, owners.a, owners.token_a)
    over = body_limit_for(DEFAULT_MAX_TEXT_BYTES) + 1  # the default body limit, plus one
    huge = {"text": "x" * over}
    with owners.client(owners.token_a) as api:
        assert_error(api.post(f"/api/sessions/{owners.trip}/moments", json=huge), 413, "larger")
        big_batch = {"moments": [{"text": "y" * (over // 1000)}] * 1000}
        assert_error(
            api.post(f"/api/sessions/{owners.trip}/moments/batch", json=big_batch), 413, "larger"
        )
    with owners.client(owners.guest) as api:
        body = {"guest": "planner", "kind": "decision", "text": "x" * over}
        sent = api.post(f"/api/sessions/{owners.trip}/write-back", json=body)
        assert_error(sent, 413, "larger")
    assert snapshot(owners, owners.a, owners.token_a) == before


def test_the_owner_redacts_a_moment_over_http(owners: Owners) -> None:
    with owners.client(owners.token_a) as api:
        sid = new_session(api, "Redact me")
        made = api.post(f"/api/sessions/{sid}/moments", json={"text": "my PIN is 4711"})
        mid = made.json()["id"]
        assert_error(api.post(f"/api/moments/{mid}/redact", json={}), 422, "reason")
        done = api.post(f"/api/moments/{mid}/redact", json={"reason": "a secret"})
        assert done.status_code == 200, done.text
        assert done.json()["content"]["text"] == "" and done.json()["redacted"]["why"] == "a secret"
        assert api.get(f"/api/moments/{mid}").json()["redacted"]["who"] == "owner"
        assert api.get("/api/search", params={"q": "PIN 4711"}).json()["items"] == []
        log = api.get(f"/api/sessions/{sid}/decisions").json()["items"]
        assert log[-1]["what"] == f"redacted {mid}"


@pytest.mark.skipif(
    not hasattr(__import__("agent_notebook").Notebook, "forget"),
    reason="Notebook.forget (the privacy work of issue 8) is not in this tree yet",
)
def test_the_owner_forgets_a_concept_over_http(owners: Owners) -> None:
    with owners.client(owners.token_b) as api:
        sid = new_session(api, "Forget me")
        made = api.post(
            f"/api/sessions/{sid}/moments",
            json={"text": "Met Zorblat at the cafe", "concepts": ["zorblat"]},
        )
        mid = made.json()["id"]
        body = {"concept": "zorblat", "reason": "asked to", "dry_run": True}
        dry = api.post("/api/forget", json=body)
        assert dry.status_code == 200, dry.text
        assert mid in dry.json()["moments"] and dry.json()["dry_run"] is True
        assert dry.json()["matched"][mid] == ["Zorblat"]  # what matched, as written
        assert api.get(f"/api/moments/{mid}").json()["redacted"] is None
        done = api.post("/api/forget", json={**body, "dry_run": False})
        assert done.status_code == 200 and mid in done.json()["moments"]
        assert api.get(f"/api/moments/{mid}").json()["redacted"] is not None
        assert_error(api.post("/api/forget", json={"concept": ""}), 422, "concept")


# -- the token files ------------------------------------------------------------------------


def test_token_files_are_owner_only_and_hold_no_guest_token_in_clear(owners: Owners) -> None:
    secrets = owners.a / "secrets"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o700
    for path in secrets.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert (secrets / OWNER_TOKEN_FILE).read_text().strip() == owners.token_a
    stored = (secrets / GUEST_TOKENS_FILE).read_text()
    assert owners.guest not in stored
    assert hashlib.sha256(owners.guest.encode()).hexdigest() in stored
    for path in owners.a.rglob("*"):  # nowhere else in the home either
        if path.is_file():
            assert owners.guest.encode() not in path.read_bytes(), path
    assert read_owner_token(owners.b) != owners.token_a


def test_serve_makes_an_owner_token_for_an_older_home(tmp_path: Path) -> None:
    home = tmp_path / "old"
    home.mkdir(mode=0o700)  # a home from before tokens: no secrets/
    server = Server(home, tmp_path / "server.log")
    try:
        assert server.token == (home / "secrets" / OWNER_TOKEN_FILE).read_text().strip()
        with server.client() as api:
            assert api.get("/api/sessions").status_code == 200
        assert "owner-token" in (tmp_path / "server.log").read_text()
    finally:
        server.stop()
    assert os.stat(home / "secrets" / OWNER_TOKEN_FILE).st_mode & 0o077 == 0
