"""Commands that remove for good: redact, forget, delete-session."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import InvalidInput
from ..model import check_moment_id, check_session_id
from .common import (
    FormatOption,
    HomeOption,
    OutputFormat,
    emit,
    flag,
    open_notebook,
    reporting_errors,
    stderr,
)
from .read import MOMENT_COLUMNS

_REPORT_COLUMNS = [
    ("what", lambda row: row[0]),
    ("ids", lambda row: ", ".join(row[1]) or "-"),
]


def redact(
    moment_id: Annotated[str, typer.Argument(help="The moment to redact, m_N.")],
    reason: Annotated[str, typer.Option(help="Why (kept in the tombstone and the audit log).")],
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Remove a moment's text for good: a tombstone (who, when, why) stays; the text leaves
    search, vectors, rollups, the archive, session notebooks and checkpoints, and the files.

    Example: agent-notebook redact m_42 --reason "contains a password"
    """
    with reporting_errors():
        check_moment_id(moment_id)
    with open_notebook(home) as nb:  # the facade refuses a blank reason, changing nothing
        moment = nb.redact(moment_id, reason)
    stderr.print(f"redacted {moment.id}", highlight=False)
    emit(moment, fmt, MOMENT_COLUMNS)


def forget(
    concept: Annotated[str, typer.Argument(help="The concept (a word or phrase) to forget.")],
    reason: Annotated[str, typer.Option(help="Why (kept in the audit log).")] = "",
    dry_run: Annotated[
        bool, flag("--dry-run", "List what would be removed; change nothing.")
    ] = False,
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Redact every moment, rollup and session-notebook line tied to a concept, and drop the
    concept from the index.

    Example: agent-notebook forget "Lyon trip" --dry-run
    """
    with open_notebook(home) as nb:
        report = nb.forget(concept, reason, dry_run=dry_run)
    verb = "would forget" if report.dry_run else "forgot"
    stderr.print(
        f"{verb} {len(report.moments)} moment(s), {len(report.rollups)} rollup(s) and "
        f"{len(report.sections)} session-notebook section(s)",
        highlight=False,
    )
    if fmt is OutputFormat.JSON:
        emit(report, fmt)
        return
    rows = [
        ("moments", report.moments),
        ("rollups", report.rollups),
        ("sections", report.sections),
    ]
    emit(rows, fmt, _REPORT_COLUMNS)


def delete_session(
    session_id: Annotated[str, typer.Argument(help="The session to delete, s_YYYY-MM-DD_NNN.")],
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Delete without asking (for scripts).")
    ] = False,
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Delete a session for good: its moments (text, index entries, vectors), its archived
    records, the media only it used, and its threads (thread map, session notebook,
    checkpoints). Asks first on a terminal; --yes for scripts.

    Example: agent-notebook delete-session s_2026-06-07_001 --yes
    """
    with reporting_errors():
        check_session_id(session_id)
    with open_notebook(home) as nb, reporting_errors():
        session = nb.get_session(session_id)
        if not yes:
            if not sys.stdin.isatty():
                raise InvalidInput(
                    f"delete-session: not deleting {session_id} without confirmation; "
                    "pass --yes to delete it"
                )
            typer.confirm(
                f"Delete {session.id} ({session.stats.moments} moment(s), {session.task!r})?",
                abort=True,
            )
        report = nb.delete_session(session_id)
    stderr.print(
        f"deleted {report.session}: {report.moments} moment(s), {report.archived} archived, "
        f"{len(report.media)} media file(s), thread(s) {', '.join(report.threads) or '-'}",
        highlight=False,
    )
    if fmt is OutputFormat.JSON:
        emit(
            {
                "session": report.session,
                "moments": report.moments,
                "archived": report.archived,
                "media": report.media,
                "threads": report.threads,
            },
            fmt,
        )
