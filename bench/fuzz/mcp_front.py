"""Part 2: MCP, every tool of both endpoints."""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import time
from typing import Any

from .common import (
    TRACEBACK,
    Server,
    Tally,
    draw,
    edge_variants,
)
from .http_front import Seeded

# -- part 2: MCP --------------------------------------------------------------------------------


def tools_document(tools: list[Any]) -> dict[str, Any]:
    """An OpenAPI 3.1 document with one POST operation per tool, its body the tool's input
    schema (its $defs moved to components), so schemathesis can generate arguments."""
    components: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for tool in tools:
        schema = copy.deepcopy(tool.inputSchema)
        defs = schema.pop("$defs", {})
        prefix = f"{tool.name}__"

        def moved(node: Any, prefix: str = prefix) -> Any:
            if isinstance(node, dict):
                return {
                    k: (
                        v.replace("#/$defs/", f"#/components/schemas/{prefix}")
                        if k == "$ref" and isinstance(v, str)
                        else moved(v)
                    )
                    for k, v in node.items()
                }
            if isinstance(node, list):
                return [moved(x) for x in node]
            return node

        for name, sub in defs.items():
            components[prefix + name] = moved(sub)
        paths[f"/{tool.name}"] = {
            "post": {
                "operationId": tool.name,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": moved(schema)}},
                },
                "responses": {"200": {"description": "ok"}},
            }
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "tools", "version": "1"},
        "paths": paths,
        "components": {"schemas": components},
    }


def mcp_calls(
    tools: list[Any], seeded: Seeded, args: argparse.Namespace, guest: bool
) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, which) for every tool: generated valid and invalid, then edges."""
    import schemathesis
    from schemathesis import GenerationMode

    schema = schemathesis.openapi.from_dict(tools_document(tools))
    by_name = {r.ok().path.lstrip("/"): r.ok() for r in schema.get_all_operations()}
    known = {
        "session_id": seeded.session,
        "thread_id": seeded.thread,
        "pending_id": "p_1",
        "decision_id": "d_1",
        "escalation_id": "e_1",
        "a": seeded.moment,
        "name": "Ana",
    }
    calls: list[tuple[str, dict[str, Any], str]] = []
    half = max(args.examples // 2, 1)
    for n, tool in enumerate(tools):
        op = by_name[tool.name]
        for mode, which in (
            (GenerationMode.POSITIVE, "valid"),
            (GenerationMode.NEGATIVE, "invalid"),
        ):
            for case in draw(op.as_strategy(generation_mode=mode), half, 4000 + n):
                body = case.body
                if not isinstance(body, dict):
                    continue  # call_tool takes an object; anything else never leaves the client
                if which == "valid" and len(calls) % 2:
                    body = {**body, **{k: v for k, v in known.items() if k in body}}
                if guest and tool.name == "write_back" and len(calls) % 2:
                    body = {**body, "guest": "fuzzer"}
                calls.append((tool.name, body, which))
        bases = [
            c.body
            for c in draw(op.as_strategy(generation_mode=GenerationMode.POSITIVE), 1, 5000 + n)
        ]
        base = bases[0] if bases and isinstance(bases[0], dict) else {}
        base = {
            **base,
            **{k: v for k, v in known.items() if k in tool.inputSchema.get("properties", {})},
        }
        keys = list(tool.inputSchema.get("properties", {}))
        for key, value in edge_variants(base, keys, args.edges, n):
            calls.append((tool.name, {**base, key: value}, "edge"))
    return calls


def mcp_part(server: Server, guest: str, seeded: Seeded, args: argparse.Namespace) -> list[Tally]:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.types import TextContent

    rows: list[Tally] = []
    deadline = time.monotonic() + args.mcp_seconds
    for mount, token, label in (
        (("/mcp/", server.owner, "owner")),
        ("/mcp-guest/", guest, "guest"),
    ):
        tally = Tally(f"MCP {mount}, {label} token")
        parts = {w: Tally(f"  of which {w} ({label})") for w in ("valid", "invalid", "edge")}
        rows += [tally, *parts.values()]

        @contextlib.asynccontextmanager
        async def connect(mount: str = mount, token: str = token) -> Any:
            async with (
                create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as client,
                streamable_http_client(f"{server.url}{mount}", http_client=client) as (r, w, _),
                ClientSession(r, w) as session,
            ):
                with anyio.fail_after(args.timeout):
                    await session.initialize()
                yield session

        async def listing(connect: Any = connect) -> list[Any]:
            async with connect() as session:
                return list((await session.list_tools()).tools)

        try:
            tools = anyio.run(listing)
        except Exception as err:  # noqa: BLE001 - reported in the table
            tally.add("traceback", "connect", f"connect {mount}", f"{type(err).__name__}: {err}")
            continue
        calls = mcp_calls(tools, seeded, args, guest=label == "guest")
        tally.note = f"{len(tools)} tools, {len(calls)} calls generated"

        async def run_all(
            calls: list[tuple[str, dict[str, Any], str]] = calls,
            tally: Tally = tally,
            parts: dict[str, Tally] = parts,
            connect: Any = connect,
        ) -> None:
            i = 0
            while i < len(calls) and time.monotonic() < deadline:
                try:
                    async with connect() as session:
                        while i < len(calls) and time.monotonic() < deadline:
                            name, arguments, which = calls[i]
                            i += 1
                            shown = json.dumps(arguments, default=repr, ensure_ascii=True)
                            request = f"{name} {shown[:300]}{f'...({len(shown)} chars)' if len(shown) > 300 else ''}"
                            t0 = time.perf_counter()
                            try:
                                with anyio.fail_after(args.timeout):
                                    result = await session.call_tool(name, arguments)
                            except TimeoutError:
                                for t in (tally, parts[which]):
                                    t.add(
                                        "hang",
                                        "timeout",
                                        request,
                                        f"no answer in {args.timeout} s",
                                        {"tool": name, "arguments": arguments},
                                    )
                                raise
                            except Exception as err:
                                for t in (tally, parts[which]):
                                    t.add(
                                        "traceback",
                                        type(err).__name__,
                                        request,
                                        f"{type(err).__name__}: {str(err)[:300]}",
                                        {"tool": name, "arguments": arguments},
                                    )
                                raise
                            finally:
                                tally.seconds += time.perf_counter() - t0
                            text = " ".join(
                                c.text for c in result.content if isinstance(c, TextContent)
                            )
                            if TRACEBACK in text:
                                kind = "traceback"
                            elif result.isError:
                                kind = "refused"
                            else:
                                kind = "ok"
                            for t in (tally, parts[which]):
                                t.add(
                                    kind,
                                    kind,
                                    request,
                                    text[:300],
                                    {"tool": name, "arguments": arguments},
                                )
                except Exception:  # noqa: BLE001 - the call was counted; reconnect
                    continue

        anyio.run(run_all)
        tally.note += f", {tally.tried} sent in the budget"
    return rows
