"""The owner's MCP tools on the facts (issue 30): the audit log (``list_decisions``,
``decide``, ``edit_decision``), pending items (``open_pending``, ``edit_pending``,
``close_pending``), conflicts (``list_conflicts``, ``resolve_conflict``), what is known
about someone (``about``, issue 39) and the forgetting policy (``forget_by_policy``). Registered by :func:`.mcp_tools.build_mcp` on the
owner's server only (none is a guest's right); every check is the facade's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Protocol, TypeVar

import pydantic_core
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from ..notebook.facade import Notebook

_T = TypeVar("_T")
SESSION = "the session (s_YYYY-MM-DD_NNN)."
ONLY_SESSION = "only this session (s_YYYY-MM-DD_NNN); omit for every session."
Register = Callable[[ToolAnnotations], Callable[[Callable[..., Any]], Callable[..., Any]]]
#: What a listing tool returns: its items, one a text block, and with the fact rules off a
#: last text block that says so; its structured content is the list alone.
Listed = Annotated[CallToolResult, list[dict[str, Any]]]
#: The same for one record (its JSON, then the note).
Record = Annotated[CallToolResult, dict[str, Any]]
#: Said in the descriptions of the tools that carry the note.
OFF_NOTE = (
    "With the fact rules off, a last text block says that only what was entered by hand "
    "is there, and how to turn them on."
)


def _text(value: Any) -> TextContent:
    return TextContent(type="text", text=pydantic_core.to_json(value, indent=2).decode())


def noted(result: list[dict[str, Any]] | dict[str, Any], note: str | None) -> CallToolResult:
    """A tool's ``result`` as FastMCP would give it (a list one item a text block, a record
    as one), followed by ``note`` (the notebook's word on the fact rules being off) as a
    last text block; the structured content is ``result`` alone, as the tool's schema says."""
    blocks = [_text(item) for item in result] if isinstance(result, list) else [_text(result)]
    if note is not None:
        blocks.append(TextContent(type="text", text=note))
    structured = {"result": result} if isinstance(result, list) else result
    return CallToolResult(content=list(blocks), structuredContent=structured)


class Run(Protocol):
    """Runs notebook work off the event loop, its errors made tool errors."""

    def __call__(self, work: Callable[[], _T]) -> Awaitable[_T]: ...


def register_fact_tools(tool: Register, run: Run, get: Callable[[], Notebook]) -> None:
    """Add the tools to the server ``tool`` registers on."""
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
    writes = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
    removes = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)

    @tool(read_only)
    async def list_decisions(
        session_id: Annotated[str | None, Field(description=ONLY_SESSION)] = None,
    ) -> Listed:
        """List the audit log of decisions (every session's, or one's), oldest first.

        session_id: only this session (s_YYYY-MM-DD_NNN); omit for every session.
        Returns entries with session, id (d_N, the place in the session's log), when,
        what, why, who, source (the moment it was read from), edits / edited_by (the entry
        an owner's correction replaces, or the one that replaced it). With the fact rules
        off, a last text block says that only what was entered by hand is there, and how
        to turn them on.
        """

        def work() -> CallToolResult:
            nb = get()
            found = [d.model_dump(mode="json") for d in nb.facts.decision_log(session_id)]
            return noted(found, nb.facts.off_hint())

        return await run(work)

    @tool(writes)
    async def decide(
        session_id: Annotated[str, Field(description=SESSION)],
        what: Annotated[str, Field(description="what was decided, as a sentence.")],
        why: Annotated[str, Field(description="the reason, if known.")] = "",
        who: Annotated[str, Field(description="who decided (default owner).")] = "owner",
    ) -> dict[str, Any]:
        """Record a decision in a session's audit log (it is never rewritten).

        session_id: the session (s_YYYY-MM-DD_NNN).
        what: what was decided, as a sentence.
        why: the reason, if known.
        who: who decided (default owner).
        Returns the entry with its id d_N.
        """

        def work() -> dict[str, Any]:
            get().decide(session_id, what, why, who)
            return get().facts.decision_log(session_id)[-1].model_dump(mode="json")

        return await run(work)

    @tool(writes)
    async def edit_decision(
        session_id: Annotated[str, Field(description=SESSION)],
        decision_id: Annotated[
            str, Field(description="the entry to correct, d_N (list_decisions shows them).")
        ],
        what: Annotated[
            str | None, Field(description="the corrected text (omit to keep the entry's).")
        ] = None,
        why: Annotated[
            str | None,
            Field(
                description="the corrected reason (omit to keep the entry's); give what, "
                "why or both."
            ),
        ] = None,
        who: Annotated[str, Field(description="who corrects it (default owner).")] = "owner",
    ) -> dict[str, Any]:
        """Correct an earlier decision: a new entry that edits it is appended and the log
        keeps both (the later one holds).

        session_id: the session (s_YYYY-MM-DD_NNN).
        decision_id: the entry to correct, d_N (list_decisions shows them).
        what: the corrected text (omit to keep the entry's).
        why: the corrected reason (omit to keep the entry's); give what, why or both.
        who: who corrects it (default owner).
        Returns the new entry.
        """
        return await run(
            lambda: (
                get()
                .edit_decision(session_id, decision_id, what=what, why=why, who=who)
                .model_dump(mode="json")
            )
        )

    @tool(writes)
    async def open_pending(
        session_id: Annotated[str, Field(description=SESSION)],
        what: Annotated[str, Field(description="what is open, as a sentence.")],
    ) -> dict[str, Any]:
        """Open a pending item (an open thread: a promise, a question) in a session.

        session_id: the session (s_YYYY-MM-DD_NNN).
        what: what is open, as a sentence.
        Returns the item with its id p_N.
        """
        return await run(lambda: get().open_pending(session_id, what).model_dump(mode="json"))

    @tool(writes)
    async def edit_pending(
        session_id: Annotated[str, Field(description=SESSION)],
        pending_id: Annotated[
            str, Field(description="the open item, p_N (read_session shows them).")
        ],
        what: Annotated[str, Field(description="its new text.")],
        who: Annotated[str, Field(description="who edits it (default owner).")] = "owner",
    ) -> dict[str, Any]:
        """Reword an open pending item; the audit log notes the text it had. A closed item
        cannot be edited (open a new one).

        session_id: the session (s_YYYY-MM-DD_NNN).
        pending_id: the open item, p_N (read_session shows them).
        what: its new text.
        who: who edits it (default owner).
        Returns the item.
        """
        return await run(
            lambda: (
                get()
                .facts.edit_pending(session_id, pending_id, what, who=who)
                .model_dump(mode="json")
            )
        )

    @tool(writes)
    async def close_pending(
        session_id: Annotated[str, Field(description=SESSION)],
        pending_id: Annotated[str, Field(description="the open item, p_N.")],
        resolution: Annotated[str, Field(description="how it was resolved.")] = "",
    ) -> dict[str, Any]:
        """Close a pending item. Closing one that is closed already is an error that
        changes nothing (it says when it was closed).

        session_id: the session (s_YYYY-MM-DD_NNN).
        pending_id: the open item, p_N.
        resolution: how it was resolved.
        Returns the closed item.
        """
        return await run(
            lambda: get().close_pending(session_id, pending_id, resolution).model_dump(mode="json")
        )

    @tool(read_only)
    async def list_conflicts(
        session_id: Annotated[
            str | None,
            Field(description="only pairs with a side in this session; omit for every session."),
        ] = None,
    ) -> Listed:
        """List the statements flagged as contradicting each other, by pairs: a (said
        first) and b, each with id, session, timestamp, text and current (whether it still
        holds). Resolve one with resolve_conflict. With the fact rules off, a last text
        block says that none is flagged, and how to turn them on.

        session_id: only pairs with a side in this session; omit for every session.
        """

        def work() -> CallToolResult:
            nb = get()
            found = [p.model_dump(mode="json") for p in nb.facts.conflicts(session_id)]
            return noted(found, nb.facts.off_hint())

        return await run(work)

    @tool(read_only)
    async def about(
        name: Annotated[
            str,
            Field(
                description="a speaker (case aside), someone named in the turns, or 'me' for "
                "the owner.",
                max_length=200,
            ),
        ],
        as_of: Annotated[
            datetime | None,
            Field(description="what was known then, ISO 8601 (no zone: UTC); omit for now."),
        ] = None,
    ) -> dict[str, Any]:
        """What the notebook knows about someone: each fact (employer, home, value:budget…)
        with its current values, each with the moment it came from (cite it), and its
        history (values that no longer hold: ended superseded, with replaced_by and
        replaced_with, expired, or story, a past event that ended nothing), plus the open
        conflicts among their moments. facts_enabled false: nothing is known to be
        superseded (note says so, and how to turn the fact rules on).

        name: a speaker (case aside), someone named in the turns, or 'me' for the owner.
        as_of: what was known then, ISO 8601 (no zone: UTC); omit for now.
        """
        when = as_of if as_of is None or as_of.tzinfo is not None else as_of.replace(tzinfo=UTC)
        return await run(lambda: get().facts.about(name, as_of=when).model_dump(mode="json"))

    @tool(writes)
    async def resolve_conflict(
        a: Annotated[str, Field(description="one moment of the pair, m_N (list_conflicts).")],
        b: Annotated[str, Field(description="the other moment of the pair, m_N.")],
        keep: Annotated[
            str | None,
            Field(description="the side that holds, a or b's id; or leave it out and set dismiss."),
        ] = None,
        dismiss: Annotated[
            bool,
            Field(
                description="true when it is no conflict at all (give keep or dismiss, not both)."
            ),
        ] = False,
        reason: Annotated[str, Field(description="why, for the audit log.")] = "",
        who: Annotated[str, Field(description="who resolves it (default owner).")] = "owner",
    ) -> dict[str, Any]:
        """Resolve a flagged conflict: keep one side (the other is marked superseded by it
        and leaves the current view) or dismiss it (both stand). The audit log records it.

        a, b: the two moments, m_N (list_conflicts shows them).
        keep: the side that holds, a or b's id; or leave it out and set dismiss.
        dismiss: true when it is no conflict at all (give keep or dismiss, not both).
        reason: why, for the audit log.
        who: who resolves it (default owner).
        """
        return await run(
            lambda: (
                get()
                .resolve_conflict(a, b, keep=keep, dismiss=dismiss, reason=reason, who=who)
                .model_dump(mode="json")
            )
        )

    @tool(removes)
    async def forget_by_policy(
        older_than: Annotated[
            str | None,
            Field(
                description="forget moments said before this long ago: a number and a "
                "unit, h, d, w or y (12h, 30d, 8w, 1y)."
            ),
        ] = None,
        inactive_for: Annotated[
            str | None,
            Field(description="forget moments not said nor repeated for this long (same units)."),
        ] = None,
        keep_top: Annotated[
            int | None,
            Field(
                description="keep the N moments of highest decayed importance (alone: "
                "keep N, forget the rest).",
                ge=0,
            ),
        ] = None,
        session_id: Annotated[str | None, Field(description="only this session's moments.")] = None,
        reason: Annotated[str, Field(description="why, kept in the tombstones.")] = "",
        dry_run: Annotated[
            bool,
            Field(description="only list what would go (ids, dates, an excerpt); false to forget."),
        ] = True,
    ) -> dict[str, Any]:
        """Forget (redact for good, a tombstone left) the moments a policy picks; each
        removal goes into its session's audit log. Pinned moments and those a decision was
        read from are kept. Run with dry_run true first (the default) to see the list.

        older_than: forget moments said before this long ago: a number and a unit,
            h, d, w or y (12h, 30d, 8w, 1y).
        inactive_for: forget moments not said nor repeated for this long (same units).
        keep_top: keep the N moments of highest decayed importance (alone: keep N, forget
            the rest).
        session_id: only this session's moments.
        reason: why, kept in the tombstones.
        dry_run: only list what would go (ids, dates, an excerpt); false to forget.
        """
        return await run(
            lambda: (
                get()
                .forget_by_policy(
                    older_than=older_than,
                    inactive_for=inactive_for,
                    keep_top=keep_top,
                    session=session_id,
                    reason=reason,
                    dry_run=dry_run,
                )
                .model_dump(mode="json")
            )
        )
