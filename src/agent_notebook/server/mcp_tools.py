"""The MCP server (official ``mcp`` SDK): the notebook as tools for agents.

Guest tools read the notebook and write back one kind of record: ``search``, ``slice``,
``read_session``, ``read_notebook_section``, ``write_back``. Owner tools add ``record`` and
``update_section``. Served over stdio by ``agent-notebook mcp`` and mounted on the HTTP
server (``/mcp`` for the owner, ``/mcp-guest`` for guests; there a guest token's
``write_back`` must name that guest). A failed call's message says what was wrong and how to
recover.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

import anyio
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations

from ..errors import Conflict, InvalidInput, NotebookError, NotFound
from ..notebook import Notebook

INSTRUCTIONS = """\
agent-notebook is the long-term memory of a person's agents: sessions of moments (every
turn, fact and decision, with ids like m_12 and s_2026-06-07_001), each session's audit log
of decisions, pending threads and escalations, and per-thread session notebooks (working
memory in fixed sections). Search or slice it before answering from memory, cite what you
use by its id, and write back decisions or open questions you settle."""

RECOVERY: dict[type[NotebookError], str] = {
    NotFound: "check the id: search finds moment and session ids, read_session shows a "
    "session's pending and escalation ids",
    InvalidInput: "correct the argument the message names and call again; nothing was changed",
    Conflict: "read the record again (read_session) and decide whether your change still "
    "applies; nothing was changed",
}
_T = TypeVar("_T")


def _recover(err: NotebookError) -> str:
    for kind, hint in RECOVERY.items():
        if isinstance(err, kind):
            return hint
    return "retry later; if it keeps failing, tell the user this error"


async def _run(work: Callable[[], _T]) -> _T:
    """Run notebook work off the event loop; library errors become tool errors."""
    try:
        return await anyio.to_thread.run_sync(work)
    except NotebookError as err:
        raise ToolError(f"{err}. To recover: {_recover(err)}.") from None


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
    app that opens its notebook later): the guest tools, and with ``owner`` the owner's too.
    Mounted on HTTP it answers at its mount path (``streamable_http_path`` is ``/``)."""
    get: Callable[[], Notebook] = notebook if callable(notebook) else (lambda: notebook)
    server = FastMCP(
        "agent-notebook" if owner else "agent-notebook-guest",
        instructions=INSTRUCTIONS,
        host=host,
        streamable_http_path="/",
        log_level="WARNING",
    )
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
    writes = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)

    @server.tool(annotations=read_only)
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

        return await _run(work)

    @server.tool(name="slice", annotations=read_only)
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
        return await _run(
            lambda: (
                get().slice(query, budget_tokens, audience=audience, session=session_id).render()
            )
        )

    @server.tool(annotations=read_only)
    async def read_session(session_id: str) -> dict[str, Any]:
        """Read one session: its task and status, its audit log of decisions, its pending
        threads (ids p_N) and escalations (ids e_N), links and stats.

        session_id: an id like s_2026-06-07_001 (search results name the session of each
        moment).
        """
        return await _run(lambda: get().get_session(session_id).model_dump(mode="json"))

    @server.tool(annotations=read_only)
    async def read_notebook_section(thread_id: str, section: str) -> str:
        """Read one section of a conversation thread's session notebook (its working memory).

        thread_id: the conversation thread's id.
        section: one of Current State, Task Specification, Files and Functions, Workflow,
            Errors and Corrections, Key Results, Worklog.
        Returns the section's text ("" when it is empty).
        """
        return await _run(lambda: get().session_notebook(thread_id).sync.get_section(section))

    @server.tool(annotations=writes)
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
            which read_session lists).
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
        return await _run(
            lambda: (
                get()
                .write_back(guest, session_id, kind, text, why=why, escalation_id=escalation_id)
                .model_dump(mode="json")
            )
        )

    if not owner:
        return server

    @server.tool(annotations=writes)
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

        return await _run(work)

    @server.tool(annotations=writes)
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

        return await _run(work)

    return server
