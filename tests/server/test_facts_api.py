"""The owner's hand on the facts over HTTP and MCP (issue 30), against a real server
process and a real MCP client over stdio: the audit log and its edits, pending items,
conflicts and their resolution, the forgetting policy; errors are the API's JSON bodies.
With the fact rules off, every read of them says so in the notebook's one wording (issue
39, item 5), over HTTP and over MCP on the server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.types import CallToolResult, TextContent

from agent_notebook import Notebook
from agent_notebook import config as cfg
from agent_notebook.privacy.tokens import read_owner_token
from tests.support.mcp_stdio import FACT_TOOLS, over_stdio, text_of
from tests.support.server import (
    Server,
    assert_error,
    csrf_of,
    mcp_session,
    new_session,
    signed_in,
)
from tests.support.subjects import SESSIONS, moments_of

ALL_TEXTS = [m["text"] for _, moments in SESSIONS for m in moments]

NEVER = {"text": "I have never used Docker.", "timestamp": "2026-01-01T10:00:00Z"}
DID = {"text": "I used Docker to deploy the blog last week.", "timestamp": "2026-01-02T10:00:00Z"}
# The notebook's facts span its sessions (issue 39): a test sharing the module's server says
# its own things, so that it meets no statement another test recorded.
NEVER_K8S = {"text": "I have never used Kubernetes.", "timestamp": "2026-01-03T10:00:00Z"}
DID_K8S = {
    "text": "I used Kubernetes to deploy the shop last month.",
    "timestamp": "2026-01-04T10:00:00Z",
}
OLD = {"text": "The old wiki lived on a Raspberry Pi.", "timestamp": "2020-01-02T10:00:00Z"}


def facts_home(home: Path) -> Path:
    home.mkdir(parents=True, mode=0o700)
    cfg.write_config(home, cfg.NotebookConfig(facts=cfg.FactSettings(enabled=True)))
    return home


@pytest.fixture(scope="module")
def served_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("facts-server")


@pytest.fixture(scope="module")
def facts_server(served_root: Path) -> Iterator[Server]:
    """One server over two homes: ``home`` with the fact rules on (its owner token is the
    server's ``token``) and ``facts-off`` with the default config (rules off), whose owner
    token picks that notebook (see :func:`facts_off_token`)."""
    home = facts_home(served_root / "home")
    running = Server(home, served_root / "server.log", served_root / "facts-off")
    yield running
    running.stop()


@pytest.fixture
def facts_off_token(served_root: Path, facts_server: Server) -> str:
    """The owner token of the served home with the fact rules off (the default config)."""
    return read_owner_token(served_root / "facts-off")


@pytest.fixture
def api(facts_server: Server) -> Iterator[httpx.Client]:
    with facts_server.client() as client:
        yield client


def recorded(api: httpx.Client, *moments: dict[str, str]) -> tuple[str, list[str]]:
    s = new_session(api, "tools")
    done = api.post(f"/api/sessions/{s}/moments/batch", json={"moments": list(moments)})
    assert done.status_code == 201, done.text
    return s, [m["id"] for m in done.json()]


def test_decisions_are_edited_with_history_and_pending_items_reworded(api: httpx.Client) -> None:
    s = new_session(api)
    assert api.post(f"/api/sessions/{s}/decisions", json={"what": "Use PG 15"}).status_code == 201
    edit = api.post(f"/api/sessions/{s}/decisions/d_1/edit", json={"what": "Use PG 16"})
    assert edit.status_code == 201, edit.text
    assert (edit.json()["id"], edit.json()["edits"]) == ("d_2", "d_1") and edit.headers["etag"]
    log = api.get("/api/decisions", params={"session": s}).json()["items"]
    assert [(d["id"], d["edited_by"]) for d in log] == [("d_1", "d_2"), ("d_2", None)]
    assert_error(api.post(f"/api/sessions/{s}/decisions/d_9/edit", json={"what": "x"}), 404, "d_9")
    assert_error(api.post(f"/api/sessions/{s}/decisions/d_1/edit", json={}), 422, "what")

    api.post(f"/api/sessions/{s}/pending", json={"what": "Book a hotel"})
    edited = api.patch(f"/api/sessions/{s}/pending/p_1", json={"what": "Book a hotel in Lyon"})
    assert edited.status_code == 200 and edited.json()["what"] == "Book a hotel in Lyon"
    api.post(f"/api/sessions/{s}/pending/p_1/close", json={"resolution": "booked"})
    assert_error(api.patch(f"/api/sessions/{s}/pending/p_1", json={"what": "x"}), 409, "closed")
    listed = api.get("/api/pending", params={"session": s}).json()["items"]
    assert [(p["session"], p["id"], p["resolution"]) for p in listed] == [(s, "p_1", "booked")]


def test_a_conflict_is_listed_and_resolved_over_http(api: httpx.Client) -> None:
    s, (never, did) = recorded(api, NEVER, DID)
    pairs = api.get("/api/conflicts", params={"session": s}).json()["items"]
    assert [(p["a"]["id"], p["b"]["id"]) for p in pairs] == [(never, did)]
    choice = {"a": never, "b": did}
    assert_error(api.post("/api/conflicts/resolve", json=choice), 422, "keep")
    done = api.post("/api/conflicts/resolve", json={**choice, "keep": did, "reason": "checked"})
    assert done.status_code == 200, done.text
    assert (done.json()["kept"], done.json()["superseded"]) == (did, never)
    assert api.get("/api/conflicts", params={"session": s}).json()["items"] == []
    assert api.get(f"/api/moments/{never}").json()["relations"]["links"] == [f"superseded_by:{did}"]
    assert_error(api.post("/api/conflicts/resolve", json={**choice, "dismiss": True}), 404)


def test_the_forgetting_policy_over_http(api: httpx.Client) -> None:
    s, (old,) = recorded(api, OLD)
    policy = {"older_than": "1000d", "session": s}
    dry = api.post("/api/forget/policy", json={**policy, "dry_run": True})
    assert dry.status_code == 200, dry.text
    assert [m["id"] for m in dry.json()["moments"]] == [old]
    assert dry.json()["moments"][0]["excerpt"] == OLD["text"]
    assert api.get(f"/api/moments/{old}").json()["redacted"] is None
    assert_error(api.post("/api/forget/policy", json={"older_than": "soon"}), 422, "'soon'")
    gone = api.post("/api/forget/policy", json=policy)
    assert [m["id"] for m in gone.json()["moments"]] == [old]
    assert api.get(f"/api/moments/{old}").json()["redacted"]["why"] == (
        "forgetting policy: older than 1000d"
    )
    audit = [d["what"] for d in api.get(f"/api/sessions/{s}/decisions").json()["items"]]
    assert f"redacted {old} (forgetting policy: older than 1000d)" in audit


def test_the_session_page_and_conflicts_page_forms(facts_server: Server, api: httpx.Client) -> None:
    s, (never, did) = recorded(api, NEVER_K8S, DID_K8S)
    page = f"/sessions/{s}"
    with signed_in(facts_server, facts_server.token) as owner:
        refused = owner.post(f"{page}/decisions", data={"what": "forged"})
        assert refused.status_code == 403 and "CSRF" in refused.text
        csrf = csrf_of(owner, page)
        made = owner.post(f"{page}/decisions", data={"what": "Use PG 15", "csrf": csrf})
        assert made.status_code == 303 and made.headers["location"] == f"{page}#decisions"
        shown = owner.get(page).text
        assert "Use PG 15" in shown and f'action="{page}/decisions/d_1/edit"' in shown
        fixed = {"what": "Use PG 16", "why": "JSONB", "csrf": csrf}
        assert owner.post(f"{page}/decisions/d_1/edit", data=fixed).status_code == 303
        assert "edited by d_2" in owner.get(page).text
        owner.post(f"{page}/pending", data={"what": "Book a hotel", "csrf": csrf})
        reworded = {"what": "Book two hotels", "csrf": csrf}
        assert owner.post(f"{page}/pending/p_1/edit", data=reworded).status_code == 303
        assert "Book two hotels" in owner.get(page).text

        listing = owner.get("/conflicts").text
        assert f'value="keep:{did}"' in listing and NEVER_K8S["text"] in listing
        choice = {"a": never, "b": did, "choice": f"keep:{did}", "reason": "seen", "csrf": csrf}
        assert owner.post("/conflicts/resolve", data=choice).status_code == 303
        assert f'value="keep:{did}"' not in owner.get("/conflicts").text
    log = api.get("/api/decisions", params={"session": s}).json()["items"]
    assert log[-1]["what"] == f"conflict {never} vs {did} resolved: kept {did}, {never} superseded"
    assert log[-1]["why"] == "seen"


def test_the_fact_tools_over_mcp(tmp_path: Path) -> None:
    async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
        result = await session.call_tool(tool, arguments)
        assert not result.isError, text_of(result)
        return json.loads(text_of(result))

    async def listed(session: ClientSession, tool: str, **arguments: Any) -> list[Any]:
        result = await session.call_tool(tool, arguments)  # a list comes one item a content
        assert not result.isError, text_of(result)
        return [json.loads(c.text) for c in result.content if isinstance(c, TextContent)]

    async def work(session: ClientSession) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        tools = {t.name: t for t in (await session.list_tools()).tools}
        seen["tools"] = tools
        first = await call(session, "record", text=NEVER["text"], task="tools")
        s = first["session"]
        second = await call(session, "record", text=DID["text"], session_id=s)
        seen["ids"] = (first["id"], second["id"])
        await call(session, "decide", session_id=s, what="Use PG 15", why="JSONB")
        seen["edit"] = await call(
            session, "edit_decision", session_id=s, decision_id="d_1", what="Use PG 16"
        )
        await call(session, "open_pending", session_id=s, what="Book a hotel")
        seen["pending"] = await call(
            session, "edit_pending", session_id=s, pending_id="p_1", what="Book two"
        )
        await call(session, "close_pending", session_id=s, pending_id="p_1")
        seen["closed_twice"] = await session.call_tool(
            "close_pending", {"session_id": s, "pending_id": "p_1"}
        )
        seen["conflicts"] = await listed(session, "list_conflicts")
        seen["resolved"] = await call(
            session, "resolve_conflict", a=first["id"], b=second["id"], dismiss=True
        )
        seen["dry"] = await call(session, "forget_by_policy", older_than="1h")
        seen["bad"] = await session.call_tool("forget_by_policy", {"older_than": "ages"})
        seen["log"] = await listed(session, "list_decisions", session_id=s)
        job = await call(session, "record", text="I work at Tesco.", speaker="Maya", task="job")
        later = "2099-01-01T00:00:00"
        await call(
            session,
            "record",
            text="I've started at Monzo.",
            speaker="Maya",
            session_id=job["session"],
        )
        seen["about"] = await call(session, "about", name="maya")
        seen["about_then"] = await call(session, "about", name="Maya", as_of=later)
        seen["about_bad"] = await session.call_tool("about", {"name": " "})
        return seen

    seen = over_stdio(facts_home(tmp_path / "home"), work)
    assert set(seen["tools"]) >= FACT_TOOLS
    for name in FACT_TOOLS:
        assert len(seen["tools"][name].description or "") > 80, name
    schema = seen["tools"]["forget_by_policy"].inputSchema["properties"]
    assert set(schema) == {
        "older_than",
        "inactive_for",
        "keep_top",
        "session_id",
        "reason",
        "dry_run",
    }
    assert (seen["edit"]["id"], seen["edit"]["edits"]) == ("d_2", "d_1")
    assert seen["pending"]["what"] == "Book two"
    assert seen["closed_twice"].isError and "closed already" in text_of(seen["closed_twice"])
    never, did = seen["ids"]
    assert [(p["a"]["id"], p["b"]["id"]) for p in seen["conflicts"]] == [(never, did)]
    assert seen["resolved"]["dismissed"]
    assert seen["dry"]["dry_run"] and seen["dry"]["moments"] == []  # all said just now
    assert seen["bad"].isError and "'ages' is not a duration" in text_of(seen["bad"])
    assert seen["log"][-1]["what"] == f"conflict {never} vs {did} dismissed: both stand"
    [employer] = [f for f in seen["about"]["facts"] if f["key"] == "employer"]
    assert [v["value"] for v in employer["current"]] == ["Monzo"]
    assert [(v["value"], v["ended"], v["replaced_with"]) for v in employer["history"]] == [
        ("Tesco", "superseded", "Monzo")
    ]
    assert seen["about_then"]["as_of"] == "2099-01-01T00:00:00Z"
    assert seen["about_bad"].isError and "give the name" in text_of(seen["about_bad"])


def test_what_is_known_about_someone_over_http_and_on_its_page(
    facts_server: Server, api: httpx.Client
) -> None:
    ids: list[str] = []
    for index, (task, _) in enumerate(SESSIONS):
        s = new_session(api, task)
        done = api.post(f"/api/sessions/{s}/moments/batch", json={"moments": moments_of(index)})
        assert done.status_code == 201, done.text
        ids += [m["id"] for m in done.json()]
    by_text = dict(zip(ALL_TEXTS, ids, strict=True))
    monzo, tesco = by_text["Big news: I've started at Monzo."], by_text[ALL_TEXTS[0]]
    view = api.get("/api/subjects/Maya")
    assert view.status_code == 200, view.text
    employer = next(f for f in view.json()["facts"] if f["key"] == "employer")
    assert [(v["value"], v["moment"]) for v in employer["current"]] == [("Monzo", monzo)]
    assert [(v["moment"], v["ended"], v["replaced_by"]) for v in employer["history"]][-1] == (
        tesco,
        "superseded",
        monzo,
    )
    then = api.get("/api/subjects/maya", params={"as_of": "2026-05-15T00:00:00"}).json()
    assert [v["value"] for f in then["facts"] if f["key"] == "employer" for v in f["current"]] == [
        "Tesco"
    ]
    assert_error(api.get("/api/subjects/Maya", params={"as_of": "soon"}), 422, "as_of")
    assert_error(api.get("/api/subjects/" + "x" * 201), 422)
    assert_error(api.get("/api/subjects/%20"), 422, "about")
    with signed_in(facts_server, facts_server.token) as owner:
        shown = owner.get("/subjects/Maya")
        assert shown.status_code == 200, shown.text
        assert f'href="/moments/{monzo}"' in shown.text and "Superseded" in shown.text
        assert "A story" in shown.text and "Open conflicts" in shown.text
        then = owner.get("/subjects/Maya", params={"as_of": "2026-05-15"}).text
        assert "Monzo" not in then and "Tesco" in then
        assert owner.get("/subjects/Maya", params={"as_of": "soon"}).status_code == 422
        assert 'href="/subjects/maya"' in owner.get(f"/moments/{monzo}").text
    assert api.post(f"/api/moments/{monzo}/redact", json={"reason": "private"}).status_code == 200
    gone = api.get("/api/subjects/Maya").json()
    assert "monzo" not in json.dumps(gone).casefold()


def test_every_read_of_the_facts_says_when_they_are_off_over_http_and_mcp(
    tmp_path: Path, facts_server: Server, facts_off_token: str, api: httpx.Client
) -> None:
    with Notebook.open(tmp_path / "elsewhere") as other:  # the default config: facts off
        hint = other.facts.off_hint()
    assert hint is not None and "facts: {enabled: true}" in hint
    # the module's server, through its second home (the default config: facts off); the
    # owner token of that home picks its notebook, opened with its own config
    with facts_server.client(facts_off_token) as off:
        s = new_session(off, "Party")
        batch = {"moments": [{"text": "Let's go with Casa Lucia.", "speaker": "Maya"}]}
        assert off.post(f"/api/sessions/{s}/moments/batch", json=batch).status_code == 201
        assert off.post(f"/api/sessions/{s}/decisions", json={"what": "Cake"}).is_success
        reads = {
            path: off.get(path).json()
            for path in (
                "/api/decisions",
                "/api/pending",
                "/api/conflicts",
                f"/api/sessions/{s}/decisions",
                f"/api/sessions/{s}/pending",
                "/api/subjects/Maya",
            )
        }

        async def work(session: ClientSession) -> dict[str, CallToolResult]:
            return {
                "list_decisions": await session.call_tool("list_decisions", {}),
                "list_conflicts": await session.call_tool("list_conflicts", {}),
                "read_session": await session.call_tool("read_session", {"session_id": s}),
                "about": await session.call_tool("about", {"name": "Maya"}),
            }

        tools = mcp_session(facts_server, work, token=facts_off_token)

    # HTTP: each page says it beside what was entered by hand (the decision read from the
    # turn is not there: the rules are off); the subject's view builds its note on it
    for path, body in reads.items():
        assert body["note"].startswith(hint), path
    assert [d["what"] for d in reads["/api/decisions"]["items"]] == ["Cake"]
    assert reads["/api/pending"]["items"] == reads["/api/conflicts"]["items"] == []
    assert "every value said is listed as current" in reads["/api/subjects/Maya"]["note"]
    # MCP: the items as before (one a text block, the structured content the list alone),
    # then the same words as a last text block
    texts = {}
    for name, result in tools.items():
        assert not result.isError, result.content
        texts[name] = [c.text for c in result.content if isinstance(c, TextContent)]
        assert len(texts[name]) == len(result.content), name
    assert json.loads(texts["about"][-1])["note"] == reads["/api/subjects/Maya"]["note"]
    *items, said = texts["list_decisions"]
    assert said == hint and [json.loads(i)["what"] for i in items] == ["Cake"]
    assert tools["list_decisions"].structuredContent == {"result": [json.loads(items[0])]}
    assert texts["list_conflicts"] == [hint]
    assert tools["list_conflicts"].structuredContent == {"result": []}
    session, said = texts["read_session"]
    assert said == hint and json.loads(session)["id"] == s
    assert tools["read_session"].structuredContent == json.loads(session)

    # facts on: no note anywhere (the MCP lists over stdio parse every block as an item)
    s_on = new_session(api)
    for path in (
        "/api/decisions",
        "/api/pending",
        "/api/conflicts",
        f"/api/sessions/{s_on}/pending",
    ):
        assert api.get(path).json()["note"] is None, path
    assert api.get("/api/subjects/Maya").json()["note"] is None
