"""The MCP server (official ``mcp`` SDK): the notebook as tools for agents.

The owner's tools: ``search``, ``slice``, ``read_session``, ``read_notebook_section``,
``write_back``, ``record`` and ``update_section``. A guest's server has only the tools of
:data:`~.guest_rights.GUEST_RIGHTS` (``slice`` and ``write_back``: what HTTP lets a guest
token do too), and its errors name no path on the server. Served over stdio by
``agent-notebook mcp`` and mounted on the HTTP server (``/mcp`` for the owner, ``/mcp-guest``
for guests; there a guest token's ``write_back`` must name that guest). A failed call's
message says what was wrong and how to recover. The server reports agent-notebook's version.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import Any, Literal, TypeVar

import anyio
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations

from .. import __version__
from ..errors import Conflict, InvalidInput, NotebookError, NotFound
from ..notebook import Notebook
from .guest_rights import guest_may_use_tool, hide_places, notebook_places

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

RECOVERY: dict[type[NotebookError], str] = {
    NotFound: "check the id: search and slice name moment and session ids, read_session "
    "shows a session's pending and escalation ids (a guest: the slice and its hand-off)",
    InvalidInput: "correct the argument the message names and call again; nothing was changed",
    Conflict: "read the record again (read_session) and decide whether your change still "
    "applies; nothing was changed",
}
RETRY = "retry later; if it keeps failing, tell the user this error"
_T = TypeVar("_T")


def _recover(err: NotebookError) -> str:
    for kind, hint in RECOVERY.items():
        if isinstance(err, kind):
            return hint
    return RETRY


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
        message = f"{err}. To recover: {_recover(err)}."
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


def _token_guest(ctx: Context) -> str | None:  # type: ignore[type-arg]
    """Over HTTP, the guest name of the request's bearer token (None for the owner's token
    and over stdio, where the process itself is the owner's)."""
    from .auth import ACCESS_KEY, Access

    request = ctx.request_context.request
    scope = getattr(request, "scope", None)
    access = scope.get(ACCESS_KEY) if isinstance(scope, dict) else None
    if isinstance(access, Access) and access.is_guest:
        return access.grant.name
    return None


def build_mcp(
    notebook: Notebook | Callable[[], Notebook], *, owner: bool = True, host: str = "127.0.0.1"
) -> FastMCP:
    """An MCP server over ``notebook`` (or over what a getter returns at each call, for an
    app that opens its notebook later): every tool, or without ``owner`` only a guest's.
    Mounted on HTTP it answers at its mount path (``streamable_http_path`` is ``/``)."""
    get: Callable[[], Notebook] = notebook if callable(notebook) else (lambda: notebook)
    server = FastMCP(
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
        annotations: ToolAnnotations, name: str | None = None
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """``server.tool``, for a guest's server only for the tools a guest may use."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            if owner or guest_may_use_tool(name or fn.__name__):
                server.tool(name=name, annotations=annotations)(fn)
            return fn

        return register

    async def run(work: Callable[[], _T]) -> _T:
        return await _run(work, None if owner else notebook_places(get()))

    @tool(read_only)
    async def search(
        query: str, session_id: str | None = None, limit: int = 10
    ) -> list[dict[str, Any]]:
        """Find moments in the notebook by words and meaning, best first.

        query: what to look for, in plain words ("train to Lyon", "why we chose Postgres").
        session_id: only this session (an id like s_2026-06-07_001); omit to search all.
        limit: how many results, 1 to 100.
        Returns for each hit: the moment id (cite it as [moment:m_12]), its session, time,
        speaker, text and score. An empty list means nothing matched: try other words.
        """

        def work() -> list[dict[str, Any]]:
            if not 1 <= limit <= 100:
                raise InvalidInput(f"limit must be between 1 and 100, got {limit}")
            hits = get().search(query, session=session_id, limit=limit)
            return [
                {
                    "id": h.moment.id,
                    "session": h.moment.session,
                    "when": h.moment.timestamp.isoformat(),
                    "speaker": h.moment.speaker or h.moment.role,
                    "text": h.moment.content.text,
                    "score": round(h.score, 4),
                }
                for h in hits
            ]

        return await run(work)

    @tool(read_only, name="slice")
    async def slice_(
        query: str,
        budget_tokens: int = 4000,
        audience: str = "guest",
        session_id: str | None = None,
    ) -> str:
        """Get a compact, read-only briefing on a topic from the notebook, within a token
        budget: the relevant moments with the turns around them, each session's task, its
        open pending items and related decisions, every item tagged with its source id.

        query: the topic you need to know about.
        budget_tokens: the most tokens the briefing may take (1 to 262144; 4000 is usual).
        audience: your name, recorded with the slice.
        session_id: only this session; omit for the whole notebook.
        Returns Markdown. Cite items by their tags, e.g. [moment:m_12].
        """
        return await run(
            lambda: (
                get().slice(query, budget_tokens, audience=audience, session=session_id).render()
            )
        )

    @tool(read_only)
    async def read_session(session_id: str) -> dict[str, Any]:
        """Read one session: its task and status, its audit log of decisions, its pending
        threads (ids p_N) and escalations (ids e_N), links and stats.

        session_id: an id like s_2026-06-07_001 (search results name the session of each
        moment).
        """
        return await run(lambda: get().get_session(session_id).model_dump(mode="json"))

    @tool(read_only)
    async def read_notebook_section(thread_id: str, section: str) -> str:
        """Read one section of a conversation thread's session notebook (its working memory).

        thread_id: the conversation thread's id.
        section: one of Current State, Task Specification, Files and Functions, Workflow,
            Errors and Corrections, Key Results, Worklog.
        Returns the section's text ("" when it is empty).
        """
        return await run(lambda: get().session_notebook(thread_id).sync.get_section(section))

    @tool(writes)
    async def write_back(
        guest: str,
        session_id: str,
        kind: Literal["decision", "pending", "escalation_outcome"],
        text: str,
        ctx: Context,  # type: ignore[type-arg]
        why: str = "",
        escalation_id: str | None = None,
    ) -> dict[str, Any]:
        """Write your result back into a session: the one kind of write a guest may make.
        It is entered in the session's audit log under guest:<your name>.

        guest: your name (1 to 100 characters).
        session_id: the session the result belongs to (an id like s_2026-06-07_001).
        kind: "decision" (something settled), "pending" (a new open question or to-do), or
            "escalation_outcome" (the answer to an escalation; give escalation_id, e.g. e_1,
            which the hand-off to you names and read_session lists).
        text: the decision, the open item, or the outcome, in one or two sentences.
        why: the reason, briefly.
        Returns the audit-log entry.
        """
        token_guest = _token_guest(ctx)
        if token_guest is not None and guest != token_guest:
            raise ToolError(
                f"your token is guest {token_guest!r}: call write_back with "
                f"guest={token_guest!r}, not {guest!r}"
            )
        return await run(
            lambda: (
                get()
                .write_back(guest, session_id, kind, text, why=why, escalation_id=escalation_id)
                .model_dump(mode="json")
            )
        )

    @tool(writes)
    async def record(
        text: str,
        session_id: str | None = None,
        task: str = "",
        role: str = "user",
        speaker: str = "",
    ) -> dict[str, Any]:
        """Record a moment (a turn, a fact, an observation) in the notebook, so later
        searches find it.

        text: what to remember, self-contained (name people, places and dates).
        session_id: the session to add it to; omit it to start a new session with `task`.
        task: the new session's task, when session_id is omitted.
        role: user, assistant, system or tool.
        speaker: who said it, if a person.
        Returns the moment's id and its session's id.
        """

        def work() -> dict[str, Any]:
            nb = get()  # checked before a session is started for it
            drafts = nb.check_drafts([{"text": text, "role": role, "speaker": speaker}])
            target = session_id or nb.start_session(task or text[:80]).id
            moment = nb.record_many(target, drafts)[0]
            return {"id": moment.id, "session": moment.session}

        return await run(work)

    @tool(writes)
    async def update_section(thread_id: str, section: str, content: str) -> str:
        """Replace one section of a thread's session notebook (its working memory). Text
        over the section's budget is condensed; the cut part is kept as a moment.

        thread_id: the conversation thread's id.
        section: one of Current State, Task Specification, Files and Functions, Workflow,
            Errors and Corrections, Key Results, Worklog.
        content: the section's new text, whole (Markdown).
        Returns the section's text as stored.
        """

        def work() -> str:
            notes = get().session_notebook(thread_id).sync
            notes.update_section(section, content)
            notes.enforce_budget()
            return notes.get_section(section)

        return await run(work)

    return server
