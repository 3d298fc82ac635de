"""The MCP tools through a real MCP client session over stdio (``agent-notebook mcp``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from agent_notebook.server.mcp_tools import build_mcp
from agent_notebook.session.sections import SECTION_NAMES
from tests.support.clirun import cli
from tests.support.mcp_stdio import FACT_TOOLS, over_stdio, started, text_of

GUEST_TOOLS = {"slice", "write_back"}  # seed 002's guest: its slice, its write-back
OWNER_TOOLS = GUEST_TOOLS | {
    "search",
    "read_session",
    "read_notebook_section",
    "record",
    "update_section",
    *FACT_TOOLS,  # the owner's hand on the facts (issue 30, see test_facts_api)
}


def test_owner_and_guest_tools_over_stdio(tmp_path: Path) -> None:
    async def work(session: ClientSession) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        tools = (await session.list_tools()).tools
        seen["tools"] = {t.name: t.description or "" for t in tools}
        recorded = await session.call_tool(
            "record", {"text": "Ana booked the 09:04 train to Lyon for 7 June", "task": "Trip"}
        )
        assert not recorded.isError, recorded.content
        seen["recorded"] = json.loads(text_of(recorded))
        session_id = seen["recorded"]["session"]
        found = await session.call_tool("search", {"query": "train to Lyon"})
        seen["found"] = [json.loads(c.text) for c in found.content if isinstance(c, TextContent)]
        seen["slice"] = text_of(await session.call_tool("slice", {"query": "Lyon train"}))
        back = await session.call_tool(
            "write_back",
            {
                "guest": "planner",
                "session_id": session_id,
                "kind": "pending",
                "text": "Book a hotel",
            },
        )
        assert not back.isError, back.content
        read = await session.call_tool("read_session", {"session_id": session_id})
        seen["session"] = json.loads(text_of(read))
        updated = await session.call_tool(
            "update_section",
            {"thread_id": "trip", "section": "Current State", "content": "Hotel still open"},
        )
        seen["updated"] = text_of(updated)
        section = await session.call_tool(
            "read_notebook_section", {"thread_id": "trip", "section": "Current State"}
        )
        seen["section"] = text_of(section)
        seen["unknown"] = await session.call_tool("read_session", {"session_id": "s_bad"})
        seen["bad_section"] = await session.call_tool(
            "read_notebook_section", {"thread_id": "trip", "section": "Mood"}
        )
        return seen

    seen = over_stdio(tmp_path / "home", work)
    assert set(seen["tools"]) == OWNER_TOOLS
    assert all(len(doc) > 80 for doc in seen["tools"].values())  # written for a model
    moment_id = seen["recorded"]["id"]
    assert seen["found"][0]["id"] == moment_id and "Lyon" in seen["found"][0]["text"]
    assert f"moment:{moment_id}" in seen["slice"]
    assert [p["what"] for p in seen["session"]["pending"]] == ["Book a hotel"]
    assert seen["session"]["decisions"][-1]["who"] == "guest:planner"
    assert seen["updated"] == seen["section"] == "Hotel still open"
    for failed, hint in ((seen["unknown"], "invalid session id"), (seen["bad_section"], "Mood")):
        assert failed.isError
        assert hint in text_of(failed) and "To recover:" in text_of(failed)


def test_guest_server_has_only_guest_tools_and_its_writes_are_audited(tmp_path: Path) -> None:
    async def work(session: ClientSession) -> tuple[set[str], CallToolResult]:
        names = {t.name for t in (await session.list_tools()).tools}
        missing = await session.call_tool(
            "write_back",
            {"guest": "g", "session_id": "s_2026-01-01_001", "kind": "decision", "text": "x"},
        )
        return names, missing

    names, missing = over_stdio(tmp_path / "home", work, "--guest")
    assert names == GUEST_TOOLS
    assert missing.isError and "no session s_2026-01-01_001" in text_of(missing)
    assert str(tmp_path) not in text_of(missing)  # a guest is not shown the server's disk


def test_every_argument_is_described_bounded_and_checked() -> None:
    """The tools' schema describes every argument, with bounds and enums; a call with an
    unknown, missing or invalid argument is refused in one line that says how to fix it,
    before anything runs (the notebook getter would fail if it were called)."""
    server = build_mcp(lambda: None, owner=True)  # type: ignore[arg-type, return-value]
    tools = {t.name: t.parameters for t in server._tool_manager.list_tools()}
    assert set(tools) == OWNER_TOOLS
    for name, schema in tools.items():
        for argument, spec in schema["properties"].items():
            assert spec.get("description"), (name, argument)
    search = tools["search"]["properties"]
    assert {"since", "until", "speaker", "mode", "explain"} <= set(search)
    assert (search["limit"]["minimum"], search["limit"]["maximum"]) == (1, 100)
    assert search["mode"]["enum"] == ["hybrid", "lexical", "vector"]
    assert search["query"]["minLength"] == 1
    assert tools["record"]["properties"]["role"]["enum"] == ["user", "assistant", "system", "tool"]
    for tool in ("read_notebook_section", "update_section"):
        assert tools[tool]["properties"]["section"]["enum"] == list(SECTION_NAMES)
    assert "guest" not in tools["write_back"].get("required", [])  # the owner needs none

    refused = {
        "unknown argument 'color'; search takes query,": ("search", {"query": "x", "color": 1}),
        "argument 'query' '' is not valid": ("search", {"query": ""}),
        "argument 'role' 'robot' is not valid: input should be 'user', 'assistant'": (
            "record",
            {"text": "x", "role": "robot"},
        ),
        "argument 'text' is missing. It is what to remember": ("record", {}),
        "argument 'limit' 1000 is not valid": ("search", {"query": "x", "limit": 1000}),
    }
    for says, (tool, arguments) in refused.items():

        async def call(tool: str = tool, arguments: dict[str, Any] = arguments) -> None:
            await server.call_tool(tool, arguments)

        with pytest.raises(ToolError) as caught:
            anyio.run(call)
        message = str(caught.value)
        assert message.startswith(f"{tool}: ") and says in message, message
        assert "\n" not in message and "http" not in message  # one line, no links
        assert message.endswith(
            "To recover: correct the argument and call again; nothing was changed."
        )


def test_print_config_gives_an_entry_that_starts_the_server_from_any_directory(
    tmp_path: Path,
) -> None:
    home = tmp_path / "nb"
    assert cli(home, "init").returncode == 0
    printed = cli(home, "mcp", "--print-config", "--guest")
    assert printed.returncode == 0, printed.stderr.decode()
    (entry,) = json.loads(printed.stdout)["mcpServers"].values()
    assert Path(entry["command"]).is_absolute() and str(home) in entry["args"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        cwd=elsewhere,  # a client starts it from a directory of its own
        env={**os.environ, "AGENT_NOTEBOOK_EMBEDDER": "none"},
    )

    async def work(session: ClientSession) -> set[str]:
        return {t.name for t in (await session.list_tools()).tools}

    assert started(params, work) == GUEST_TOOLS


def test_a_blank_query_is_refused_like_an_empty_one(tmp_path: Path) -> None:
    """Issue 43, item 3: a query of blanks is refused with an error, as an empty one is
    (it answered an empty list, which reads as "nothing matches"); the facade says so, for
    search and slice alike."""

    async def work(session: ClientSession) -> dict[str, CallToolResult]:
        recorded = await session.call_tool("record", {"text": "Ana likes Lyon", "task": "Trip"})
        assert not recorded.isError, recorded.content
        return {
            f"{tool} {query!r}": await session.call_tool(tool, {"query": query})
            for tool in ("search", "slice")
            for query in ("", "   ", "\n\t")
        }

    answers = over_stdio(tmp_path / "home", work)
    for asked, answer in answers.items():
        assert answer.isError, (asked, answer.content)
        said = text_of(answer)
        assert "query" in said and "nothing was" in said and "To recover:" in said, said
    assert "only blanks; give the words to look for" in text_of(answers["search '   '"])


def test_the_owner_and_guest_entries_fit_in_one_client_configuration(tmp_path: Path) -> None:
    """Issue 43, item 4: the guest's entry has a name of its own, so a client's
    configuration may hold both (the guest's took the owner's name and replaced it)."""
    home = tmp_path / "nb"
    entries: dict[str, Any] = {}
    for extra in ((), ("--guest",)):
        printed = cli(home, "mcp", "--print-config", *extra)
        assert printed.returncode == 0, printed.stderr.decode()
        entries.update(json.loads(printed.stdout)["mcpServers"])
    assert set(entries) == {"agent-notebook", "agent-notebook-guest"}
    assert "--guest" in entries["agent-notebook-guest"]["args"]
    assert "--guest" not in entries["agent-notebook"]["args"]
