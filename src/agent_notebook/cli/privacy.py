"""Commands that remove for good: redact, forget, delete-session."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import InvalidInput
from ..model import check_moment_id, check_session_id
from .common import (
    FormatOption,
    HomeOption,
    OutputFormat,
    emit,
    fail,
    flag,
    open_notebook,
    reporting_errors,
    short,
    stderr,
    when,
)
from .read import MOMENT_COLUMNS


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
    concept: Annotated[
        str | None,
        typer.Argument(help="The concept (a word or phrase) to forget; or use a policy option."),
    ] = None,
    older_than: Annotated[
        str | None, typer.Option(help="Policy: forget moments said before this long ago (30d).")
    ] = None,
    inactive_for: Annotated[
        str | None,
        typer.Option(help="Policy: forget moments not said nor repeated for this long (8w)."),
    ] = None,
    keep_top: Annotated[
        int | None,
        typer.Option(min=0, help="Policy: keep the N moments of highest decayed importance."),
    ] = None,
    session: Annotated[
        str | None, typer.Option(help="Policy: only this session's moments.")
    ] = None,
    reason: Annotated[str, typer.Option(help="Why (kept in the audit log).")] = "",
    dry_run: Annotated[
        bool,
        flag(
            "--dry-run",
            "List what would be removed, with each moment's text and the words that matched; "
            "change nothing.",
        ),
    ] = False,
    words_only: Annotated[
        bool,
        flag(
            "--words-only",
            "Redact only the concept's words within the moments, keeping the rest of each "
            "(the default redacts whole moments: what else they say about it gives it away).",
        ),
    ] = False,
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Redact every moment, rollup and session-notebook line tied to a concept (whole
    moments, or with --words-only the concept's words within them), and drop the concept
    from the index. A moment is tied when it holds all the concept's words as search
    matches them, by their stems ("peanuts, my allergy" for "peanut allergy"; "peanut
    butter" alone is not); or, with --older-than, --inactive-for or --keep-top (durations
    such as 12h, 30d, 8w, 1y), redact the moments the policy picks (never a pinned moment
    nor one a decision was read from), each noted in its session's audit log.

    Example: agent-notebook forget "Lyon trip" --dry-run

    Example: agent-notebook forget --older-than 365d --keep-top 500 --dry-run
    """
    policy = older_than is not None or inactive_for is not None or keep_top is not None
    with reporting_errors():
        if (concept is None) != policy:
            raise InvalidInput(
                "forget: give a concept to forget, or a policy (--older-than, "
                "--inactive-for, --keep-top), not both nor neither; nothing was forgotten"
            )
        if session is not None and not policy:
            raise InvalidInput("forget: --session goes with a policy option, not a concept")
    if policy:
        _forget_by_policy(older_than, inactive_for, keep_top, session, reason, dry_run, home, fmt)
        return
    assert concept is not None
    with open_notebook(home) as nb, reporting_errors():
        report = nb.forget(concept, reason, dry_run=dry_run, words_only=words_only)
    verb = "would forget" if report.dry_run else "forgot"
    what = "the words of" if report.words_only else ""
    stderr.print(
        f"{verb} {what} {len(report.moments)} moment(s), {len(report.rollups)} rollup(s) and "
        f"{len(report.sections)} session-notebook section(s)".replace("  ", " "),
        highlight=False,
    )
    if fmt is OutputFormat.JSON:
        emit(report, fmt)
    if not (report.moments or report.rollups or report.sections):
        from ..notebook.checks import nothing_to_forget

        fail(nothing_to_forget(report.concept))
    if fmt is OutputFormat.JSON:
        return
    after = "left" if report.words_only else "text"
    rows = [
        (i, ", ".join(report.matched.get(i, [])), report.texts.get(i, "")) for i in report.moments
    ]
    rows += [(i, "", "(rollup)") for i in report.rollups]
    rows += [(s, "", "(session-notebook section)") for s in report.sections]
    emit(
        rows,
        fmt,
        [
            ("id", lambda r: r[0]),
            ("matched", lambda r: short(r[1], 40)),
            (after, lambda r: short(r[2], 100)),
        ],
    )


_POLICY_COLUMNS = [
    ("id", lambda c: c.id),
    ("session", lambda c: c.session),
    ("said", lambda c: when(c.timestamp)),
    ("last seen", lambda c: when(c.last_seen)),
    ("standing", lambda c: f"{c.standing:.3f}"),
    ("text", lambda c: c.excerpt),
]


def _forget_by_policy(
    older_than: str | None,
    inactive_for: str | None,
    keep_top: int | None,
    session: str | None,
    reason: str,
    dry_run: bool,
    home: Path | None,
    fmt: OutputFormat,
) -> None:
    with open_notebook(home) as nb:
        report = nb.forget_by_policy(
            older_than=older_than,
            inactive_for=inactive_for,
            keep_top=keep_top,
            session=session,
            reason=reason,
            dry_run=dry_run,
        )
    verb = "would forget" if report.dry_run else "forgot"
    stderr.print(
        f"{report.policy}: {verb} {len(report.moments)} of {report.considered} moment(s); "
        f"kept {len(report.protected)} pinned or decided one(s) it matched",
        highlight=False,
    )
    emit(report if fmt is OutputFormat.JSON else report.moments, fmt, _POLICY_COLUMNS)


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
