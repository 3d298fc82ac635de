"""The MCP server (official ``mcp`` SDK): the notebook as tools for agents.

The owner's tools: ``search``, ``slice``, ``read_session``, ``read_notebook_section``,
``write_back``, ``record`` and ``update_section``, and those on the facts of
:mod:`.mcp_facts` (decisions, pending items, conflicts, the forgetting policy). A guest's server has only the tools of
:data:`~.guest_rights.GUEST_RIGHTS` (``slice`` and ``write_back``: what HTTP lets a guest
token do too), and its errors name no path on the server. Served over stdio by
``agent-notebook mcp`` and mounted on the HTTP server (``/mcp`` for the owner, ``/mcp-guest``
for guests; there a guest token's ``write_back`` must name that guest). A failed call's
message says what was wrong and how to recover. The server reports agent-notebook's version.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from importlib import metadata
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import CallToolResult, ContentBlock, ToolAnnotations
from pydantic import Field, ValidationError

from .. import __version__
from ..errors import NotebookError
from ..notebook.agent_tools import (
    READ_SESSION,
    RECORD,
    RETRY,
    SEARCH,
    SLICE,
    TOOL_SEARCH_LIMIT,
    WRITE_BACK,
    ToolDoc,
    error_message,
    record_moment,
    search_hits,
)
from ..notebook.facade import Notebook
from ..privacy.tokens import Grant
from ..search.request import Mode
from ..search.slice import MAX_SLICE_TOKENS
from ..session.sections import SECTION_NAMES
from .guest_rights import guest_may_use_tool, hide_places, notebook_places
from .mcp_facts import OFF_NOTE, Record, noted, register_fact_tools

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
agent-notebook is the long-term memory of a person's agents: sessions of moments (every
turn, fact and decision, with ids like m_12 and s_2026-06-07_001), each session's audit log
of decisions, pending threads and escalations, and per-thread session notebooks (working
memory in fixed sections). Search or slice it before answering from memory, cite what you
use by its id, and write back decisions or open questions you settle."""
GUEST_INSTRUCTIONS = """\
agent-notebook is the long-term memory of a person's agents; you are its guest. Ask slice
for a briefing on your topic (the relevant moments, each session's task, open pending items
and decisions, every item tagged with its id), cite what you use by its tag, and write back
the decision, the open question or the escalation's outcome you settle."""

_T = TypeVar("_T")

#: A session notebook's sections (seed 000), as the tools' schema lists them.
SectionName = Literal[
    "Current State",
    "Task Specification",
    "Files and Functions",
    "Workflow",
    "Errors and Corrections",
    "Key Results",
    "Worklog",
]
#: The roles a tool may record (the notebook itself keeps any role an imported log has).
ToolRole = Literal["user", "assistant", "system", "tool"]
_THREAD_ID = "the conversation thread's id."
_SECTION = "the section: " + ", ".join(SECTION_NAMES) + "."
READ_SECTION = ToolDoc(
    "Read one section of a conversation thread's session notebook (its working memory).",
    {"thread_id": _THREAD_ID, "section": _SECTION},
    'Returns the section\'s text ("" when it is empty).',
)
UPDATE_SECTION = ToolDoc(
    "Replace one section of a thread's session notebook (its working memory). Text over the "
    "section's budget is condensed; the cut part is kept as a moment.",
    {
        "thread_id": _THREAD_ID,
        "section": _SECTION,
        "content": "the section's new text, whole (Markdown).",
    },
    "Returns the section's text as stored.",
)


def described(doc: ToolDoc, name: str, **bounds: Any) -> Any:
    """The schema of argument ``name``: its description from ``doc``, and its bounds."""
    return Field(description=doc.args[name], **bounds)


class _CheckedMCP(FastMCP):
    """FastMCP that refuses a call with an unknown argument or an argument that fails its
    schema in one line that says how to fix it (the SDK accepts unknown arguments and
    answers a wrong one with pydantic's text and links)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any]
    ) -> Sequence[ContentBlock] | dict[str, Any]:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            check_arguments(name, tool.parameters, tool.fn_metadata.arg_model, arguments or {})
        return await super().call_tool(name, arguments)


def check_arguments(
    name: str, schema: Mapping[str, Any], model: Any, arguments: Mapping[str, Any]
) -> None:
    """Raise :class:`ToolError` for an argument ``name`` does not take or one that fails
    its schema: the argument, what is wrong, what the tool takes; nothing was changed."""
    takes = list(schema.get("properties", {}))
    fix = "To recover: correct the argument and call again; nothing was changed."
    unknown = sorted(set(arguments) - set(takes))
    if unknown:
        raise ToolError(
            f"{name}: unknown argument {', '.join(map(repr, unknown))}; {name} takes "
            f"{', '.join(takes)}. {fix}"
        )
    try:
        model.model_validate(dict(arguments))
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        if first["type"] == "missing":
            problem = "is missing"
        else:
            given = repr(first["input"])
            given = given if len(given) <= 60 else given[:57] + "..."
            problem = f"{given} is not valid: {first['msg'][:1].lower()}{first['msg'][1:]}"
        about = schema.get("properties", {}).get(field, {}).get("description")
        raise ToolError(
            f"{name}: argument {field!r} {problem}."
            + (f" It is {about}" if about else "")
            + f" {fix}"
        ) from None


def own_version() -> str:
    """agent-notebook's installed version (the ``mcp`` SDK would report its own)."""
    try:
        return metadata.version("agent-notebook")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return __version__


async def _run(work: Callable[[], _T], hidden: Mapping[str, str] | None = None) -> _T:
    """Run notebook work off the event loop; library errors become tool errors, without
    the ``hidden`` places (a guest's server) in their message."""
    try:
        return await anyio.to_thread.run_sync(work)
    except NotebookError as err:
        message = error_message(err)
        raise ToolError(message if hidden is None else hide_places(message, hidden)) from None
    except Exception as err:
        if hidden is None:
            raise  # the SDK reports it to the owner as it is
        # The SDK would send its text, which may name a file of the server: log it instead.
        log.exception("an MCP guest tool failed")
        raise ToolError(
            f"the notebook failed: {hide_places(f'{type(err).__name__}: {err}', hidden)}. "
            f"To recover: {RETRY}."
        ) from None


#: What the SDK's HTTP transport meets when a client has simply gone away.
_GONE = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


def _client_gone(err: BaseException | None) -> bool:
    if isinstance(err, BaseExceptionGroup):
        return all(_client_gone(inner) for inner in err.exceptions)
    return isinstance(err, _GONE)


class _NormalDisconnect(logging.Filter):
    """The SDK logs a client's normal disconnect (its event stream closed under the
    transport's writer) as an ERROR with a traceback: make that a DEBUG line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR or not record.exc_info:
            return True
        if not _client_gone(record.exc_info[1]):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        record.exc_info, record.exc_text = None, None
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def quiet_normal_disconnects() -> None:
    """Install :class:`_NormalDisconnect` on the SDK's streamable HTTP logger, once."""
    logger = logging.getLogger("mcp.server.streamable_http")
    if not any(isinstance(f, _NormalDisconnect) for f in logger.filters):
        logger.addFilter(_NormalDisconnect())


def _token_grant(ctx: Context) -> Grant | None:  # type: ignore[type-arg]
    """Over HTTP, the guest grant of the request's bearer token (None for the owner's token
    and over stdio, where the process itself is the owner's)."""
    from .auth import ACCESS_KEY, Access

    request = ctx.request_context.request
    scope = getattr(request, "scope", None)
    access = scope.get(ACCESS_KEY) if isinstance(scope, dict) else None
    if isinstance(access, Access) and access.is_guest:
        return access.grant
    return None


def _token_guest(ctx: Context) -> str | None:  # type: ignore[type-arg]
    """Over HTTP, the guest name of the request's bearer token (see :func:`_token_grant`)."""
    grant = _token_grant(ctx)
    return None if grant is None else grant.name


def build_mcp(
    notebook: Notebook | Callable[[], Notebook], *, owner: bool = True, host: str = "127.0.0.1"
) -> FastMCP:
    """An MCP server over ``notebook`` (or over what a getter returns at each call, for an
    app that opens its notebook later): every tool, or without ``owner`` only a guest's.
    Mounted on HTTP it answers at its mount path (``streamable_http_path`` is ``/``)."""
    get: Callable[[], Notebook] = notebook if callable(notebook) else (lambda: notebook)
    server = _CheckedMCP(
        "agent-notebook" if owner else "agent-notebook-guest",
        instructions=INSTRUCTIONS if owner else GUEST_INSTRUCTIONS,
        host=host,
        streamable_http_path="/",
        log_level="WARNING",
    )
    server._mcp_server.version = own_version()  # FastMCP takes no version of its own
    quiet_normal_disconnects()
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
    writes = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)

    def tool(
        annotations: ToolAnnotations, name: str | None = None, doc: ToolDoc | None = None
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """``server.tool``, for a guest's server only for the tools a guest may use; ``doc``
        (shared with the LangChain tools) replaces the function's docstring."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            if owner or guest_may_use_tool(name or fn.__name__):
                description = None if doc is None else doc.brief()
                server.tool(name=name, description=description, annotations=annotations)(fn)
            return fn

        return register

    async def run(work: Callable[[], _T]) -> _T:
        return await _run(work, None if owner else notebook_places(get()))

    @tool(read_only, doc=SEARCH)
    async def search(
        query: Annotated[str, described(SEARCH, "query", min_length=1)],
        session_id: Annotated[str | None, described(SEARCH, "session_id")] = None,
        limit: Annotated[int, described(SEARCH, "limit", ge=1, le=TOOL_SEARCH_LIMIT)] = 10,
        since: Annotated[datetime | None, described(SEARCH, "since")] = None,
        until: Annotated[datetime | None, described(SEARCH, "until")] = None,
        speaker: Annotated[str | None, described(SEARCH, "speaker")] = None,
        mode: Annotated[Mode, described(SEARCH, "mode")] = "hybrid",
        explain: Annotated[bool, described(SEARCH, "explain")] = False,
        current_session_id: Annotated[str | None, described(SEARCH, "current_session_id")] = None,
        current: Annotated[bool, described(SEARCH, "current")] = False,
        as_of: Annotated[datetime | None, described(SEARCH, "as_of")] = None,
        asked_at: Annotated[datetime | None, described(SEARCH, "asked_at")] = None,
    ) -> list[dict[str, Any]]:
        return await run(
            lambda: search_hits(
                get(),
                query,
                session_id,
                limit,
                since=since,
                until=until,
                speaker=speaker,
                mode=mode,
                explain=explain,
                current_session_id=current_session_id,
                current=current,
                as_of=as_of,
                asked_at=asked_at,
            )
        )

    @tool(read_only, name="slice", doc=SLICE)
    async def slice_(
        query: Annotated[str, described(SLICE, "query", min_length=1)],
        ctx: Context,  # type: ignore[type-arg]
        budget_tokens: Annotated[
            int, described(SLICE, "budget_tokens", ge=1, le=MAX_SLICE_TOKENS)
        ] = 4000,
        audience: Annotated[str, described(SLICE, "audience", min_length=1)] = "guest",
        session_id: Annotated[str | None, described(SLICE, "session_id")] = None,
        asked_at: Annotated[datetime | None, described(SLICE, "asked_at")] = None,
    ) -> str:
        grant = _token_grant(ctx)
        scope = None if grant is None else grant.scope
        when = asked_at if asked_at is None or asked_at.tzinfo else asked_at.replace(tzinfo=UTC)
        return await run(
            lambda: (
                get()
                .slice(
                    query,
                    budget_tokens,
                    audience=audience,
                    session=session_id,
                    scope=scope,
                    asked_at=when,
                )
                .render()
            )
        )

    @tool(read_only, doc=replace(READ_SESSION, returns=OFF_NOTE))
    async def read_session(
        session_id: Annotated[str, described(READ_SESSION, "session_id")],
    ) -> Record:
        def work() -> CallToolResult:
            nb = get()
            return noted(nb.get_session(session_id).model_dump(mode="json"), nb.facts.off_hint())

        return await run(work)

    @tool(read_only, doc=READ_SECTION)
    async def read_notebook_section(
        thread_id: Annotated[str, described(READ_SECTION, "thread_id")],
        section: Annotated[SectionName, described(READ_SECTION, "section")],
    ) -> str:
        return await run(lambda: get().session_notebook(thread_id).sync.get_section(section))

    @tool(writes, doc=WRITE_BACK)
    async def write_back(
        session_id: Annotated[str, described(WRITE_BACK, "session_id")],
        kind: Annotated[
            Literal["decision", "pending", "escalation_outcome"], described(WRITE_BACK, "kind")
        ],
        text: Annotated[str, described(WRITE_BACK, "text")],
        ctx: Context,  # type: ignore[type-arg]
        guest: Annotated[
            str | None, described(WRITE_BACK, "guest", min_length=1, max_length=100)
        ] = None,
        why: Annotated[str, described(WRITE_BACK, "why")] = "",
        escalation_id: Annotated[str | None, described(WRITE_BACK, "escalation_id")] = None,
    ) -> dict[str, Any]:
        token_guest = _token_guest(ctx)
        if token_guest is not None and guest not in (None, token_guest):
            raise ToolError(
                f"your token is guest {token_guest!r}: call write_back with "
                f"guest={token_guest!r} or without guest, not guest={guest!r}"
            )
        name = guest if token_guest is None else token_guest
        if name is None and not owner:
            raise ToolError("write_back: give guest, your name (1 to 100 characters)")

        return await run(
            lambda: (
                get()
                .write_back(name, session_id, kind, text, why=why, escalation_id=escalation_id)
                .model_dump(mode="json")
            )
        )

    @tool(writes, doc=RECORD)
    async def record(
        text: Annotated[str, described(RECORD, "text")],
        session_id: Annotated[str | None, described(RECORD, "session_id")] = None,
        task: Annotated[str, described(RECORD, "task")] = "",
        role: Annotated[ToolRole, described(RECORD, "role")] = "user",
        speaker: Annotated[str, described(RECORD, "speaker")] = "",
    ) -> dict[str, str]:
        return await run(
            lambda: record_moment(get(), text, session_id, task=task, role=role, speaker=speaker)
        )

    @tool(writes, doc=UPDATE_SECTION)
    async def update_section(
        thread_id: Annotated[str, described(UPDATE_SECTION, "thread_id")],
        section: Annotated[SectionName, described(UPDATE_SECTION, "section")],
        content: Annotated[str, described(UPDATE_SECTION, "content")],
    ) -> str:
        def work() -> str:
            notes = get().session_notebook(thread_id).sync
            notes.update_section(section, content)
            notes.enforce_budget()
            return notes.get_section(section)

        return await run(work)

    register_fact_tools(tool, run, get)
    return server
