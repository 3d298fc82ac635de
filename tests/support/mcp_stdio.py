"""An MCP client session with ``agent-notebook mcp`` over stdio, as an agent's host runs it."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

#: The owner's MCP tools on the facts (issue 30: server/mcp_facts.py).
FACT_TOOLS = frozenset(
    {
        "list_decisions",
        "decide",
        "edit_decision",
        "open_pending",
        "edit_pending",
        "close_pending",
        "list_conflicts",
        "resolve_conflict",
        "about",
        "forget_by_policy",
    }
)


def over_stdio(home: Path, work: Callable[[ClientSession], Awaitable[Any]], *extra: str) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent_notebook", "mcp", "--home", str(home), *extra],
        env={**os.environ, "AGENT_NOTEBOOK_EMBEDDER": "none"},
    )
    return started(params, work)


def started(params: StdioServerParameters, work: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    """``work`` run in a client session with the server ``params`` start."""

    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

    return anyio.run(main)


def text_of(result: CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text
