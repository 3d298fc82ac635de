"""What a guest token may do, defined once for every front end of the server.

Seed 002's guest "reads the relevant slice, makes a decision, and writes back". That is all
:data:`GUEST_RIGHTS` holds, each right with the HTTP route and the MCP tool that exercise it:
:class:`~.auth.BearerAuth` refuses a guest token every other route (403) and
:func:`~.mcp_tools.build_mcp` gives the guest MCP server only these tools, so MCP cannot hand
a guest what HTTP refuses it (a search's full texts, a whole session). What a guest is told
names no place on the server's disk (:func:`hide_places`); the owner sees it all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..notebook.facade import Notebook


@dataclass(frozen=True)
class GuestRight:
    """One thing a guest may do, and where each front end offers it."""

    what: str
    methods: frozenset[str]
    route: re.Pattern[str]
    mcp_tool: str


GUEST_RIGHTS: tuple[GuestRight, ...] = (
    GuestRight(
        "read a slice (GET /api/slice, or the web page /slice)",
        frozenset({"GET", "HEAD"}),
        re.compile(r"/api/slice|/slice|/"),  # "/": a guest's home page sends it to /slice
        "slice",
    ),
    GuestRight(
        "write back to a session as itself (POST /api/sessions/{id}/write-back, or the "
        "web page's form on /slice)",
        frozenset({"POST"}),
        re.compile(r"/api/sessions/[^/]+/write-back|/slice/write-back"),
        "write_back",
    ),
)
#: The guest MCP server's mount; the tools behind it are the rights' tools, no others.
GUEST_MCP_MOUNT = re.compile(r"/mcp-guest(/.*)?")
GUEST_MCP_TOOLS = frozenset(right.mcp_tool for right in GUEST_RIGHTS)
GUEST_MAY = (
    "a guest token may only "
    + " and ".join(right.what for right in GUEST_RIGHTS)
    + f", and use the same through the guest MCP tools at /mcp-guest/ "
    f"({', '.join(sorted(GUEST_MCP_TOOLS))})"
)


def guest_may_request(method: str, path: str) -> bool:
    """Whether a guest token may send ``method path`` over HTTP."""
    if GUEST_MCP_MOUNT.fullmatch(path):
        return method in {"GET", "POST", "DELETE"}  # the MCP transport's own methods
    return any(method in r.methods and r.route.fullmatch(path) for r in GUEST_RIGHTS)


def guest_may_use_tool(name: str) -> bool:
    return name in GUEST_MCP_TOOLS


def notebook_places(notebook: Notebook) -> dict[str, str]:
    """Where ``notebook`` lives on disk, as its messages may spell it, each with what a guest
    is shown instead."""
    places = {}
    if notebook.home is not None:
        places.update({str(notebook.home): "<home>", os.path.realpath(notebook.home): "<home>"})
    location = notebook.location
    places.update({location: "<notebook>", os.path.realpath(location): "<notebook>"})
    return places


def hide_places(text: str, places: Mapping[str, str]) -> str:
    """``text`` with each of ``places`` (the notebook's file or directory, its home) put as
    what it maps to: a guest learns nothing of the server's disk from an error."""
    for place in sorted(places, key=len, reverse=True):  # a file before its directory
        if len(place) > 1:
            text = text.replace(place, places[place])
    return text
