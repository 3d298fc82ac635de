"""The current view and the marks on every surface (issue 39, item 5): the command line,
HTTP and MCP give the same hits for ``current`` and ``as_of``; every hit carries what the
fact rules know of it (superseded by, expired), on MCP too; an expired fact is marked in
plain search and left out of the current view. A real notebook with facts on, a real
server process and a real MCP client on its ``/mcp/`` (the tools ``agent-notebook mcp``
serves over stdio: one ``build_mcp``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.types import TextContent

from agent_notebook import config as cfg
from tests.support.clirun import cli, data
from tests.support.server import Server, mcp_session, signed_in

ENV = {cfg.EMBEDDER_ENV: "none"}
# Monday 1 June 2026; "until Friday" ends with 5 June, long before the tests run
SAID = [
    {"text": "The door code is 4471.", "timestamp": "2026-06-01T10:00:00Z"},
    {"text": "The door code changed to 9902.", "timestamp": "2026-06-02T10:00:00Z"},
    {"text": "The gate code is 1234 until Friday.", "timestamp": "2026-06-01T11:00:00Z"},
]
AS_OF = "2026-06-01T12:00:00+00:00"


def _home(tmp_path: Path) -> tuple[Path, list[str]]:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    cfg.write_config(home, cfg.NotebookConfig(facts=cfg.FactSettings(enabled=True)))
    assert cli(home, "init", env=ENV).returncode == 0
    done = cli(home, "record", "--task", "Codes", "-f", "json", stdin=json.dumps(SAID), env=ENV)
    assert done.returncode == 0, done.stderr
    return home, [m["id"] for m in data(done)]


def _cli_ids(home: Path, *options: str) -> list[str]:
    found = cli(home, "search", "code", "--mode", "lexical", "-f", "json", *options, env=ENV)
    assert found.returncode == 0, found.stderr
    return [h["moment"]["id"] for h in data(found)]


def test_current_and_as_of_agree_on_every_surface_and_every_hit_is_marked(
    tmp_path: Path,
) -> None:
    home, (old, new, gate) = _home(tmp_path)
    cli_plain = _cli_ids(home)
    cli_current = _cli_ids(home, "--current")
    cli_past = _cli_ids(home, "--as-of", AS_OF)

    async def work(session: ClientSession) -> dict[str, list[dict[str, Any]]]:
        async def hits(**arguments: Any) -> list[dict[str, Any]]:
            result = await session.call_tool(
                "search", {"query": "code", "mode": "lexical", **arguments}
            )
            assert not result.isError, result.content
            return [json.loads(c.text) for c in result.content if isinstance(c, TextContent)]

        return {
            "plain": await hits(),
            "current": await hits(current=True),
            "past": await hits(as_of=AS_OF),
        }

    server = Server(home, tmp_path / "server.log")
    try:
        # the server's MCP (the tools ``agent-notebook mcp`` serves over stdio, one build)
        mcp = mcp_session(server, work)
        with server.client() as api:

            def http_ids(**params: Any) -> list[str]:
                answer = api.get("/api/search", params={"q": "code", "mode": "lexical", **params})
                assert answer.status_code == 200, answer.text
                return [h["moment"]["id"] for h in answer.json()["items"]]

            http_plain, http_past = http_ids(), http_ids(as_of=AS_OF)
            http_current = http_ids(current="true")
            refused = api.get("/api/search", params={"q": "code", "as_of": "last week"})
        with signed_in(server, server.token) as owner:
            form = {"q": "code", "mode": "lexical"}
            web_plain = owner.get("/search", params=form).text
            web_current = owner.get("/search", params={**form, "current": "1"}).text
            web_past = owner.get("/search", params={**form, "as_of": "2026-06-01"}).text
    finally:
        server.stop()

    # plain search shows all three, the replaced one after what replaced it, each marked
    assert cli_plain == http_plain == [h["id"] for h in mcp["plain"]]
    assert set(cli_plain) == {old, new, gate}
    marks = {h["id"]: h for h in mcp["plain"]}
    assert marks[old]["superseded_by"] == new
    assert marks[gate]["expired"] is True and marks[gate]["expires"].startswith("2026-06-06")
    assert "superseded_by" not in marks[new] and "expired" not in marks[new]
    # the current view: only what holds now
    assert cli_current == http_current == [h["id"] for h in mcp["current"]] == [new]
    # as it stood at noon on the first day: the old code held, the new one was not said yet
    assert cli_past == http_past == [h["id"] for h in mcp["past"]]
    assert set(cli_past) == {old, gate}
    assert refused.status_code == 422
    # the web page: the same marks and the same views
    assert f"superseded by {new}" in web_plain and "expired 2026-06-06 00:00" in web_plain
    assert f'id="{new}"' in web_current and f'id="{old}"' not in web_current
    assert f'id="{gate}"' not in web_current
    assert f'id="{old}"' in web_past and f'id="{new}"' not in web_past


def test_the_command_line_marks_an_expired_fact(tmp_path: Path) -> None:
    home, _ = _home(tmp_path)
    table = cli(home, "search", "gate", "--mode", "lexical", env=ENV)
    assert table.returncode == 0
    assert "expired" in table.stdout.decode()  # the facts column (folded at 80 columns)
    [hit] = data(cli(home, "search", "gate", "--mode", "lexical", "-f", "json", env=ENV))
    assert hit["expired"] is True and hit["moment"]["expires"] == "2026-06-06T00:00:00Z"
