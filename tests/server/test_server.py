"""The HTTP server through a real uvicorn process on a loopback port (``agent-notebook serve``
with the offline ``fake:echo`` chat model), and property-based runs on its OpenAPI spec."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from schemathesis.checks import not_a_server_error

from agent_notebook.config import DEFAULT_MAX_TEXT_BYTES
from agent_notebook.privacy.tokens import ensure_owner_token
from agent_notebook.server import ServerSettings, create_app
from agent_notebook.server.settings import body_limit_for
from agent_notebook.storage import SqliteBackend
from tests.support.server import Server, assert_error, new_session

# -- the notebook ---------------------------------------------------------------------------


def test_sessions_and_moments_with_etags_and_if_match(api: httpx.Client) -> None:
    sid = new_session(api)
    read = api.get(f"/api/sessions/{sid}")
    assert read.json()["task"] == "Plan the trip"
    tag = read.headers["etag"]

    recorded = api.post(
        f"/api/sessions/{sid}/moments", json={"text": "Book the train to Lyon", "speaker": "ana"}
    )
    assert recorded.status_code == 201
    moment = recorded.json()
    assert api.get(f"/api/moments/{moment['id']}").json()["content"]["text"] == (
        "Book the train to Lyon"
    )
    batch = api.post(
        f"/api/sessions/{sid}/moments/batch",
        json={
            "moments": [
                {"text": "Hotel near Part-Dieu"},
                {"text": "Dinner at 8", "role": "assistant"},
            ]
        },
    )
    assert batch.status_code == 201 and len(batch.json()) == 2
    listed = api.get(f"/api/sessions/{sid}/moments").json()["items"]
    assert [m["content"]["text"] for m in listed] == [
        "Book the train to Lyon",
        "Hotel near Part-Dieu",
        "Dinner at 8",
    ]

    # The moments changed the session, so the ETag read before them is stale.
    stale = api.patch(f"/api/sessions/{sid}", json={"task": "x"}, headers={"If-Match": tag})
    assert_error(stale, 409, "changed since you read it")
    assert api.get(f"/api/sessions/{sid}").json()["task"] == "Plan the trip"
    fresh = api.get(f"/api/sessions/{sid}").headers["etag"]
    changed = api.patch(
        f"/api/sessions/{sid}",
        json={"task": "Trip to Lyon", "task_status": "paused"},
        headers={"If-Match": fresh},
    )
    assert changed.status_code == 200 and changed.json()["task_status"] == "paused"
    assert changed.headers["etag"] == api.get(f"/api/sessions/{sid}").headers["etag"] != fresh
    assert sid in [
        s["id"] for s in api.get("/api/sessions", params={"limit": 1000}).json()["items"]
    ]


def test_two_writers_with_one_etag_one_wins(server: Server) -> None:
    with server.client() as api:
        sid = new_session(api)
        tag = api.get(f"/api/sessions/{sid}").headers["etag"]

    def write(n: int) -> int:
        with server.client() as client:
            body = {"what": f"decision {n}"}
            return client.post(
                f"/api/sessions/{sid}/decisions", json=body, headers={"If-Match": tag}
            ).status_code

    with ThreadPoolExecutor(4) as pool:
        statuses = sorted(pool.map(write, range(4)))
    assert statuses == [201, 409, 409, 409]
    with server.client() as api:
        assert len(api.get(f"/api/sessions/{sid}/decisions").json()["items"]) == 1


def test_search_with_explain_and_slice_find_a_recorded_moment(api: httpx.Client) -> None:
    sid = new_session(api, "Garden")
    api.post(f"/api/sessions/{sid}/moments", json={"text": "Planted zucchini by the fence"})
    api.post(f"/api/sessions/{sid}/moments", json={"text": "Watered the roses"})
    found = api.get("/api/search", params={"q": "zucchini", "session": sid})
    assert found.status_code == 200
    hits = found.json()["items"]
    assert hits[0]["moment"]["content"]["text"] == "Planted zucchini by the fence"
    assert hits[0]["explain"]["lexical_share"] > 0
    plain = api.get("/api/search", params={"q": "zucchini", "explain": "false"}).json()
    assert plain["items"][0]["explain"] == {}

    assert plain["hint"] is None

    # Words that only stopwords match: nothing, and a hint; min_score=0 shows the weak ones.
    weak = {"q": "what is by the", "session": sid, "mode": "lexical"}
    none = api.get("/api/search", params=weak).json()
    assert none["items"] == [] and "nothing matches" in none["hint"]
    every = api.get("/api/search", params={**weak, "min_score": 0}).json()
    assert every["items"] and every["hint"] is None
    assert_error(api.get("/api/search", params={**weak, "min_score": 2}), 422, "min_score")

    sliced = api.get("/api/slice", params={"q": "zucchini", "budget": 500}).json()
    assert "zucchini" in sliced["rendered"]
    assert sliced["slice"]["tokens"] <= 500
    assert any(i["source"] == f"moment:{hits[0]['moment']['id']}" for i in sliced["slice"]["items"])


def test_decisions_pending_escalations_and_write_back(api: httpx.Client) -> None:
    sid = new_session(api, "Release 2.0")
    base = f"/api/sessions/{sid}"
    decision = api.post(f"{base}/decisions", json={"what": "Ship on Friday", "why": "tests pass"})
    assert decision.status_code == 201 and decision.json()["who"] == "owner"
    pending = api.post(f"{base}/pending", json={"what": "Update the changelog"}).json()
    assert pending["id"] == "p_1"
    closed = api.post(f"{base}/pending/p_1/close", json={"resolution": "done"})
    assert closed.status_code == 200 and closed.json()["closed"]
    assert_error(api.post(f"{base}/pending/p_1/close", json={}), 409, "closed already")
    assert api.get(f"{base}/pending", params={"open_only": True}).json()["items"] == []

    escalation = api.post(f"{base}/escalations", json={"to": "opus", "why": "hard bug"}).json()
    assert escalation["id"] == "e_1"
    guest = api.post(
        f"{base}/write-back",
        json={
            "guest": "opus",
            "kind": "escalation_outcome",
            "text": "Fixed",
            "escalation_id": "e_1",
        },
    )
    assert guest.status_code == 201 and guest.json()["who"] == "guest:opus"
    assert api.get(f"{base}/escalations").json()["items"][0]["outcome"] == "Fixed"
    log = api.get(f"{base}/decisions").json()["items"]
    assert [d["who"] for d in log] == ["owner", "guest:opus"]
    resolved_twice = api.post(f"{base}/escalations/e_1/resolve", json={"outcome": "again"})
    assert_error(resolved_twice, 409, "outcome already")


def test_session_notebook_sections_refuse_a_stale_if_match(api: httpx.Client) -> None:
    path = "/api/threads/t-notes/notebook/sections/Current State"
    first = api.get(path)
    assert first.status_code == 200 and first.json()["content"] == ""
    tag = first.headers["etag"]
    written = api.put(path, json={"content": "Writing the server"}, headers={"If-Match": tag})
    assert written.status_code == 200 and written.json()["content"] == "Writing the server"
    stale = api.put(path, json={"content": "Lost update"}, headers={"If-Match": tag})
    assert_error(stale, 409, "changed since you read it")
    whole = api.get("/api/threads/t-notes/notebook")
    assert whole.json()["sections"]["Current State"] == "Writing the server"
    assert whole.headers["etag"] == f'"rev-{whole.json()["revision"]}"'
    other = api.put(
        "/api/threads/t-notes/notebook/sections/Worklog",
        json={"content": "- started"},
        headers={
            "If-Match": api.get("/api/threads/t-notes/notebook/sections/Worklog").headers["etag"]
        },
    )
    assert other.status_code == 200
    assert_error(api.get("/api/threads/t-notes/notebook/sections/Nope"), 404, "unknown section")


def test_export_as_yaml_and_as_sqlite(api: httpx.Client, tmp_path: Path) -> None:
    sid = new_session(api, "Exported")
    moment = api.post(f"/api/sessions/{sid}/moments", json={"text": "kept in the export"}).json()
    yaml_export = api.get("/api/export")
    assert yaml_export.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(yaml_export.content)) as tar:
        names = tar.getnames()
    assert f"notebook/sessions/{sid}.yaml" in names
    db = api.get("/api/export", params={"format": "sqlite"})
    (tmp_path / "copy.db").write_bytes(db.content)
    copy = SqliteBackend(tmp_path / "copy.db")
    try:
        found = copy.get_moment(moment["id"])
        assert found is not None and found.content.text == "kept in the export"
    finally:
        copy.close()


def test_openapi_docs_are_served(api: httpx.Client) -> None:
    assert api.get("/docs").status_code == 200
    paths = api.get("/openapi.json").json()["paths"]
    assert {"/api/chat/execute", "/api/chat/context", "/api/search", "/api/export"} <= set(paths)


def test_paging_on_lists(api: httpx.Client) -> None:
    sid = new_session(api, "Paging")
    api.post(
        f"/api/sessions/{sid}/moments/batch",
        json={"moments": [{"text": f"n{i}"} for i in range(5)]},
    )
    first = api.get(f"/api/sessions/{sid}/moments", params={"limit": 2}).json()
    assert [m["content"]["text"] for m in first["items"]] == ["n0", "n1"]
    assert first["next_offset"] == 2
    last = api.get(f"/api/sessions/{sid}/moments", params={"offset": 4, "limit": 2}).json()
    assert [m["content"]["text"] for m in last["items"]] == ["n4"] and last["next_offset"] is None
    everything = api.get("/api/moments", params={"limit": 1000}).json()["items"]
    assert [m["content"]["text"] for m in everything][-5:] == [f"n{i}" for i in range(5)]
    totals = api.get("/api/stats").json()
    assert totals["moments"] == len(everything) and totals["sessions"] >= 1
    assert_error(api.get("/api/sessions", params={"limit": 0}), 422, "limit")
    assert_error(api.get("/api/moments", params={"offset": -1}), 422, "offset")


def test_bad_input_gets_json_errors_and_changes_nothing(api: httpx.Client) -> None:
    sid = new_session(api, "Errors")
    before = api.get(f"/api/sessions/{sid}").json()
    assert_error(api.get("/api/sessions/s_2026-01-01_999"), 404, "no session")
    assert_error(api.get("/api/moments/m_999999"), 404, "no moment")
    assert_error(api.get("/api/no/such/path"), 404)
    assert_error(api.get("/api/sessions/../etc"), 404)
    assert_error(api.get("/api/moments/bad"), 422, "invalid moment id")
    json_type = {"content-type": "application/json"}
    broken = api.post(f"/api/sessions/{sid}/moments", content=b"{not json", headers=json_type)
    assert_error(broken, 422, "JSON")
    assert_error(api.post(f"/api/sessions/{sid}/moments", json={"txt": "typo"}), 422, "txt")
    naive = {"text": "t", "timestamp": "2026-01-01T10:00:00"}
    assert_error(api.post(f"/api/sessions/{sid}/moments", json=naive), 422, "timezone")
    batch = {"moments": [{"text": "fine"}, {"text": "bad", "importance": 7}]}
    assert_error(api.post(f"/api/sessions/{sid}/moments/batch", json=batch), 422, "importance")
    over = body_limit_for(DEFAULT_MAX_TEXT_BYTES) + 1  # the default body limit, plus one
    huge = {"text": "x" * over}
    assert_error(api.post(f"/api/sessions/{sid}/moments", json=huge), 413, "larger than")

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it is read
        yield b'{"text": "'
        for _ in range(over // 32768 + 1):
            yield b"x" * 32768
        yield b'"}'

    streamed = api.post(f"/api/sessions/{sid}/moments", content=chunked(), headers=json_type)
    assert_error(streamed, 413, "larger than")
    assert_error(api.get("/api/search", params={"q": "x", "limit": 5000}), 422, "limit")
    assert_error(api.get("/api/search", params={"q": "x", "mode": "magic"}), 422, "mode")
    assert_error(api.post("/api/chat/execute", json={"session_id": "nope", "message": "hi"}), 404)
    assert api.get(f"/api/sessions/{sid}").json() == before  # nothing was written


def test_mcp_is_mounted_on_the_http_server(server: Server) -> None:
    async def main() -> tuple[list[str], list[str], str]:
        async with (
            server.mcp_client() as http,
            streamable_http_client(f"{server.url}/mcp/", http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            owner = [t.name for t in (await session.list_tools()).tools]
            recorded = await session.call_tool("record", {"text": "Mounted MCP saw a heron"})
            assert not recorded.isError, recorded.content
        async with (
            server.mcp_client() as http,
            streamable_http_client(f"{server.url}/mcp-guest/", http_client=http) as (
                read,
                write,
                _,
            ),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            guest = [t.name for t in (await session.list_tools()).tools]
            found = await session.call_tool("slice", {"query": "heron"})
            text = found.content[0].text  # type: ignore[union-attr]
        return owner, guest, text

    owner, guest, text = anyio.run(main)
    assert {"record", "update_section", "search"} <= set(owner)
    assert set(guest) == {"slice", "write_back"}
    assert "Mounted MCP saw a heron" in text


# -- chat -----------------------------------------------------------------------------------


def sse_events(body: str) -> list[tuple[str, str]]:
    events = []
    for block in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], lines["data"]))
    return events


@pytest.mark.slow
def test_chat_over_http_continues_after_a_restart(tmp_path: Path) -> None:
    home, log = tmp_path / "home", tmp_path / "server.log"
    first = Server(home, log)
    try:
        with first.client() as api:
            created = api.post("/api/chat/sessions", json={"title": "Trip", "thread_id": "trip-1"})
            assert created.status_code == 201, created.text
            assert_error(api.post("/api/chat/sessions", json={"thread_id": "trip-1"}), 409)
            turn = api.post("/api/chat/execute", json={"session_id": "trip-1", "message": "hello"})
            assert turn.status_code == 200, turn.text
            assert turn.json()["answer"]["content"] == "echo: hello (messages: 1)"
            streamed = api.post(
                "/api/chat/execute",
                json={"session_id": "trip-1", "message": "second"},
                headers={"Accept": "text/event-stream"},
            )
            assert streamed.headers["content-type"].startswith("text/event-stream")
            events = sse_events(streamed.text)
            assert events[0][0] == "token" and "echo: second" in events[0][1]
            assert events[-1][0] == "done" and "(messages: 3)" in events[-1][1]
            listed = api.get("/api/chat/sessions").json()["items"]
            assert [(s["id"], s["title"]) for s in listed] == [("trip-1", "Trip")]
            renamed = api.patch("/api/chat/sessions/trip-1", json={"title": "Lyon trip"})
            assert renamed.json()["title"] == "Lyon trip"
            notebook_session = created.json()["notebook_session"]
            moments = api.get(f"/api/sessions/{notebook_session}/moments").json()["items"]
            assert [m["content"]["text"] for m in moments][:2] == [
                "hello",
                "echo: hello (messages: 1)",
            ]
            api.post(f"/api/sessions/{notebook_session}/decisions", json={"what": "Go by train"})
            context = api.post(
                "/api/chat/context",
                json={
                    "session_id": "trip-1",
                    "message": "train",
                    "context_config": {"decision": "not in context"},
                },
            ).json()
            assert context["tokens_used"] <= context["budget"]
            assert {"id": "decision:d_1", "reason": "not in context"} in context["cut"]
            assert all(item["tokens"] > 0 for item in context["items"])
    finally:
        first.stop()

    second = Server(home, log)
    try:
        with second.client() as api:
            resumed = api.get("/api/chat/sessions/trip-1").json()
            assert [m["content"] for m in resumed["messages"]] == [
                "hello",
                "echo: hello (messages: 1)",
                "second",
                "echo: second (messages: 3)",
            ]
            assert resumed["title"] == "Lyon trip"
            turn = api.post("/api/chat/execute", json={"session_id": "trip-1", "message": "third"})
            assert turn.json()["answer"]["content"] == "echo: third (messages: 5)"
            assert api.delete("/api/chat/sessions/trip-1").status_code == 204
            assert_error(api.get("/api/chat/sessions/trip-1"), 404, "no chat session")
    finally:
        second.stop()


def test_a_model_override_the_server_cannot_make_is_invalid_input(api: httpx.Client) -> None:
    thread = api.post("/api/chat/sessions", json={}).json()["id"]
    body = {"session_id": thread, "message": "hi", "model_override": "no-such-provider:x"}
    assert_error(api.post("/api/chat/execute", json=body), 422, "model_override")
    ok = api.post("/api/chat/execute", json={**body, "model_override": "fake:echo"})
    assert ok.json()["answer"]["content"] == "echo: hi (messages: 1)"


# -- property-based: no 5xx for any generated input ---------------------------------------


# The spec is read without starting the app; the app (and its notebook in SCHEMA_HOME) starts
# with the first generated request and is removed after the last test.
SCHEMA_HOME = Path(tempfile.gettempdir()) / f"agent-notebook-schemathesis-{os.getpid()}"
SCHEMA_APP = create_app(ServerSettings(home=SCHEMA_HOME / "home", model="fake:echo", mcp=False))
schema = schemathesis.openapi.from_dict(SCHEMA_APP.openapi())
schema.app, schema.location = SCHEMA_APP, "/openapi.json"  # as from_asgi sets them


@pytest.fixture(scope="module")
def schema_token() -> Iterator[str]:
    """The owner token the generated requests send (made before the app starts)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
        yield ensure_owner_token(SCHEMA_HOME / "home")[0]
    shutil.rmtree(SCHEMA_HOME, ignore_errors=True)


@schema.parametrize()
@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
@pytest.mark.slow
def test_no_server_error_for_generated_input(case: Any, schema_token: str) -> None:
    response = case.call(headers={"Authorization": f"Bearer {schema_token}"})
    case.validate_response(response, checks=[not_a_server_error])
