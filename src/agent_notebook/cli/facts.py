"""The owner's commands on the facts (issue 30): the audit log (decisions, decide,
edit-decision), pending items (pending, add-pending, edit-pending, close-pending), the
conflicts the fact rules flagged (conflicts, resolve-conflict) and what is known about
someone (about, issue 39). Every check is the
facade's (:mod:`agent_notebook.notebook.owner_facts`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import typer

from ..model import PendingItem
from ..notebook.facade import Notebook
from ..notebook.subjects import SubjectValue, SubjectView
from .common import (
    FormatOption,
    HomeOption,
    OutputFormat,
    emit,
    flag,
    open_notebook,
    parse_time,
    short,
    stderr,
    when,
)

SessionArgument = Annotated[str, typer.Argument(help="A session id such as s_2026-06-07_001.")]
SessionFilter = Annotated[str | None, typer.Option("--session", help="Only this session.")]
WhoOption = Annotated[str, typer.Option(help="Who, for the audit log.")]

DECISION_COLUMNS = [
    ("session", lambda d: d.session),
    ("id", lambda d: d.id),
    ("when", lambda d: when(d.when)),
    ("who", lambda d: d.who),
    ("what", lambda d: short(d.what, 60)),
    ("why", lambda d: short(d.why, 40)),
    ("source", lambda d: d.source or ""),
    ("note", lambda d: _note(d)),
]
PENDING_COLUMNS = [
    ("session", lambda r: r[0]),
    ("id", lambda r: r[1].id),
    ("since", lambda r: when(r[1].since)),
    ("what", lambda r: short(r[1].what, 60)),
    ("closed", lambda r: when(r[1].closed)),
    ("resolution", lambda r: short(r[1].resolution, 40)),
]
#: A conflict as two rows, one a side (said first on top), each with the day it was said:
#: whole on its line at 80 columns, the text given the rest (``--format json`` has the
#: times and both sides in one record).
CONFLICT_COLUMNS = [
    ("conflict", lambda r: r[0]),
    ("id", lambda r: r[1].id),
    ("said", lambda r: f"{r[1].timestamp:%Y-%m-%d}"),
    ("session", lambda r: r[1].session),
    ("text", lambda r: short(r[1].text, 100)),
]
_CONFLICT_WHOLE = ("conflict", "id", "said", "session")


def emit_conflicts(pairs: Sequence[Any], fmt: OutputFormat, title: str | None = None) -> None:
    """The conflicts as JSON (a record a pair), or as a table of a row a side."""
    if fmt is OutputFormat.JSON:
        emit(pairs, fmt)
        return
    rows = [
        (f"{n}" if side is pair.a else "", side)
        for n, pair in enumerate(pairs, 1)
        for side in (pair.a, pair.b)
    ]
    emit(rows, fmt, CONFLICT_COLUMNS, title=title, whole=_CONFLICT_WHOLE)


def _emit_item(session: str, item: PendingItem, fmt: OutputFormat) -> None:
    if fmt is OutputFormat.JSON:
        emit({"session": session, **item.model_dump(mode="json")}, fmt)
    else:
        emit((session, item), fmt, PENDING_COLUMNS)


def _note(d: object) -> str:
    edits, edited_by = getattr(d, "edits", None), getattr(d, "edited_by", None)
    replaced_by = getattr(d, "replaced_by", None)
    parts = [
        f"edits {edits}" if edits else "",
        f"edited by {edited_by}" if edited_by else "",
        f"replaced by {replaced_by}" if replaced_by else "",
    ]
    return "; ".join(p for p in parts if p)


def _say_if_off(nb: Notebook) -> None:
    if (hint := nb.facts.off_hint()) is not None:
        stderr.print(hint, highlight=False)


def decisions(
    session: SessionFilter = None, home: HomeOption = None, fmt: FormatOption = OutputFormat.TABLE
) -> None:
    """List the audit log (every session's, or one's): each entry as d_N, with the entry it
    edits or that edits it.

    Example: agent-notebook decisions --session s_2026-06-07_001
    """
    with open_notebook(home) as nb:
        found = nb.facts.decision_log(session)
        _say_if_off(nb)
    emit(found, fmt, DECISION_COLUMNS)


def decide(
    session: SessionArgument,
    what: Annotated[str, typer.Argument(help="What was decided.")],
    why: Annotated[str, typer.Option(help="Why.")] = "",
    who: WhoOption = "owner",
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Append a decision to a session's audit log.

    Example: agent-notebook decide s_2026-06-07_001 "Use PostgreSQL 16" --why "JSONB"
    """
    with open_notebook(home) as nb:
        nb.decide(session, what, why, who)
        entry = nb.facts.decision_log(session)[-1]
    stderr.print(f"decided {entry.id} in {session}", highlight=False)
    emit(entry, fmt, DECISION_COLUMNS)


def edit_decision(
    session: SessionArgument,
    decision: Annotated[str, typer.Argument(help="The entry to correct, d_N.")],
    what: Annotated[str | None, typer.Option(help="The corrected text.")] = None,
    why: Annotated[str | None, typer.Option(help="The corrected reason.")] = None,
    who: WhoOption = "owner",
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Correct a decision: a new entry that edits d_N is appended; the log keeps both.

    Example: agent-notebook edit-decision s_2026-06-07_001 d_1 --what "Use PostgreSQL 17"
    """
    with open_notebook(home) as nb:
        entry = nb.facts.edit_decision(session, decision, what=what, why=why, who=who)
    stderr.print(f"{entry.id} edits {decision} in {session}", highlight=False)
    emit(entry, fmt, DECISION_COLUMNS)


def pending(
    session: SessionFilter = None,
    open_only: Annotated[bool, flag("--open", "Only the items not closed yet.")] = False,
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """List pending items (open threads) of every session, or one's.

    Example: agent-notebook pending --open
    """
    with open_notebook(home) as nb:
        found = nb.facts.pending_items(session, open_only=open_only)
        _say_if_off(nb)
    if fmt is OutputFormat.JSON:
        emit([{"session": sid, **p.model_dump(mode="json")} for sid, p in found], fmt)
        return
    emit(found, fmt, PENDING_COLUMNS)


def add_pending(
    session: SessionArgument,
    what: Annotated[str, typer.Argument(help="What is open.")],
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Open a pending item (p_N) in a session.

    Example: agent-notebook add-pending s_2026-06-07_001 "Book a hotel"
    """
    with open_notebook(home) as nb:
        item = nb.open_pending(session, what)
    stderr.print(f"opened {item.id} in {session}", highlight=False)
    _emit_item(session, item, fmt)


def edit_pending(
    session: SessionArgument,
    item: Annotated[str, typer.Argument(help="The open item, p_N.")],
    what: Annotated[str, typer.Argument(help="Its new text.")],
    who: WhoOption = "owner",
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Reword an open pending item; the audit log notes the text it had.

    Example: agent-notebook edit-pending s_2026-06-07_001 p_1 "Book a hotel in Lyon"
    """
    with open_notebook(home) as nb:
        found = nb.facts.edit_pending(session, item, what, who=who)
    _emit_item(session, found, fmt)


def close_pending(
    session: SessionArgument,
    item: Annotated[str, typer.Argument(help="The open item, p_N.")],
    resolution: Annotated[str, typer.Option(help="How it was resolved.")] = "",
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Close a pending item; closing a closed one is an error that changes nothing.

    Example: agent-notebook close-pending s_2026-06-07_001 p_1 --resolution "booked"
    """
    with open_notebook(home) as nb:
        found = nb.close_pending(session, item, resolution)
    stderr.print(f"closed {found.id} in {session}", highlight=False)
    _emit_item(session, found, fmt)


def conflicts(
    session: SessionFilter = None, home: HomeOption = None, fmt: FormatOption = OutputFormat.TABLE
) -> None:
    """List the moments flagged as conflicting (both sides, said first on the left);
    resolve one with resolve-conflict.

    Example: agent-notebook conflicts --format json
    """
    with open_notebook(home) as nb:
        found = nb.facts.conflicts(session)
        _say_if_off(nb)
    if not found:
        stderr.print("no conflicts", highlight=False)
    emit_conflicts(found, fmt)


def resolve_conflict(
    first: Annotated[str, typer.Argument(help="One side, m_N.")],
    second: Annotated[str, typer.Argument(help="The other side, m_N.")],
    keep: Annotated[
        str | None, typer.Option(help="The side that holds; the other is superseded by it.")
    ] = None,
    dismiss: Annotated[bool, flag("--dismiss", "Not a conflict: both stand.")] = False,
    reason: Annotated[str, typer.Option(help="Why (kept in the audit log).")] = "",
    who: WhoOption = "owner",
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Resolve a conflict: --keep one side (the other gets superseded_by and valid_until,
    and leaves the current view) or --dismiss it; the audit log records it.

    Example: agent-notebook resolve-conflict m_24 m_58 --keep m_58 --reason "checked"
    """
    with open_notebook(home) as nb:
        done = nb.facts.resolve_conflict(
            first, second, keep=keep, dismiss=dismiss, reason=reason, who=who
        )
    stderr.print(done.entries[0].what, highlight=False)
    if fmt is OutputFormat.JSON:
        emit(done, fmt)


SUBJECT_COLUMNS = [
    ("fact", lambda r: r[0]),
    ("state", lambda r: _state(r[1])),
    ("value", lambda r: short(r[1].value, 30)),
    ("from", lambda r: r[1].moment),
    ("said", lambda r: when(r[1].said)),
    ("until", lambda r: when(r[1].until)),
    ("replaced by", lambda r: _replaced(r[1])),
]


def _state(v: SubjectValue) -> str:
    return "current" if v.holds else {"story": "a story"}.get(v.ended or "", v.ended or "")


def _replaced(v: SubjectValue) -> str:
    if v.replaced_by is None:
        return ""
    return v.replaced_by if v.replaced_with is None else f"{v.replaced_with} ({v.replaced_by})"


def _subject_rows(view: SubjectView) -> list[tuple[str, SubjectValue]]:
    return [(f.key, v) for f in view.facts for v in [*f.current, *f.history]]


def about(
    name: Annotated[str, typer.Argument(help="A speaker, someone named in the turns, or 'me'.")],
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="What was known then (ISO 8601; no zone: UTC)."),
    ] = None,
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """What the notebook knows about someone: each fact's current value with the moment it
    came from, its history (what held until when, and what replaced it), and the open
    conflicts among their moments. Read from what they said and what was said of them.

    Example: agent-notebook about "Maya" --as-of 2026-06-30
    """
    with open_notebook(home) as nb:
        view = nb.facts.about(name, as_of=parse_time(as_of, "--as-of"))
    if view.note:
        stderr.print(view.note, highlight=False)
    if fmt is OutputFormat.JSON:
        emit(view, fmt)
        return
    stderr.print(
        f"{view.subject}: said {view.said} moments, named in {view.named}", highlight=False
    )
    rows = _subject_rows(view)
    if not rows:
        stderr.print(f"no facts about {view.subject}", highlight=False)
    emit(rows, fmt, SUBJECT_COLUMNS)
    if view.conflicts:
        emit_conflicts(view.conflicts, fmt, title="open conflicts")
