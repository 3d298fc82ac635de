"""Commands that read: sessions, show, moments, search, stats."""

from __future__ import annotations

from typing import Annotated

import typer

from ..model import Moment, SearchHit, Session
from .common import (
    FormatOption,
    HomeOption,
    LimitOption,
    OffsetOption,
    OutputFormat,
    emit,
    open_notebook,
    parse_time,
    reporting_errors,
    short,
    when,
)

SESSION_COLUMNS = [
    ("id", lambda s: s.id),
    ("started", lambda s: when(s.started)),
    ("status", lambda s: s.task_status.value),
    ("moments", lambda s: s.stats.moments),
    ("task", lambda s: short(s.task, 60)),
]
MOMENT_COLUMNS = [
    ("id", lambda m: m.id),
    ("time", lambda m: when(m.timestamp)),
    ("speaker", lambda m: m.speaker or m.role),
    ("text", lambda m: short(m.content.text)),
]


def sessions(
    home: HomeOption = None,
    offset: OffsetOption = 0,
    limit: LimitOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """List sessions, oldest first.

    Example: agent-notebook sessions --limit 20 --format json
    """
    with open_notebook(home) as nb:
        found: list[Session] = nb.sessions(offset, limit)
    emit(found, fmt, SESSION_COLUMNS)


def show(
    session: Annotated[str, typer.Argument(help="A session id such as s_2026-06-07_001.")],
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.JSON,
) -> None:
    """Print one session whole: task, context, decisions, pending, escalations, links, stats.

    Example: agent-notebook show s_2026-06-07_001
    """
    with open_notebook(home) as nb:
        found = nb.get_session(session)
    if fmt is OutputFormat.JSON:
        emit(found, fmt)
        return
    fields = [
        ("id", found.id),
        ("task", found.task),
        ("status", found.task_status.value),
        ("started", when(found.started)),
        ("moments", found.stats.moments),
        ("tokens", found.stats.tokens),
        ("decisions", "\n".join(f"{when(d.when)} {d.who}: {d.what}" for d in found.decisions)),
        (
            "pending",
            "\n".join(f"{p.id} {'✓' if p.closed else '·'} {p.what}" for p in found.pending),
        ),
        ("escalations", "\n".join(f"{e.id} → {e.to}: {e.why}" for e in found.escalations)),
        ("links", "\n".join(f"{k.relation}: {k.target}" for k in found.links)),
    ]
    emit(
        [{"field": k, "value": v} for k, v in fields],
        fmt,
        [("field", lambda r: r["field"]), ("value", lambda r: r["value"])],
    )


def moments(
    session: Annotated[str, typer.Argument(help="A session id such as s_2026-06-07_001.")],
    home: HomeOption = None,
    offset: OffsetOption = 0,
    limit: LimitOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """List a session's moments in order.

    Example: agent-notebook moments s_2026-06-07_001 --format json
    """
    with open_notebook(home) as nb:
        found: list[Moment] = nb.moments(session, offset, limit)
    emit(found, fmt, MOMENT_COLUMNS)


def search(
    query: Annotated[str, typer.Argument(help="Words to look for; any may match.")],
    home: HomeOption = None,
    session: Annotated[str | None, typer.Option(help="Only this session.")] = None,
    since: Annotated[str | None, typer.Option(help="From this ISO time (inclusive).")] = None,
    until: Annotated[str | None, typer.Option(help="Before this ISO time.")] = None,
    speaker: Annotated[str | None, typer.Option(help="Only moments by this speaker.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many results.")] = 10,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Search moment text (BM25), best first.

    Example: agent-notebook search "train to Lyon" --since 2026-06-01 --speaker ana
    """
    with open_notebook(home) as nb, reporting_errors():
        hits: list[SearchHit] = nb.search(
            query,
            session=session,
            since=parse_time(since, "--since"),
            until=parse_time(until, "--until"),
            speaker=speaker,
            limit=limit,
        )
    emit(
        hits,
        fmt,
        [
            ("score", lambda h: f"{h.score:.3g}"),
            ("id", lambda h: h.moment.id),
            ("session", lambda h: h.moment.session),
            ("speaker", lambda h: h.moment.speaker or h.moment.role),
            ("text", lambda h: short(h.moment.content.text)),
        ],
    )


def stats(home: HomeOption = None, fmt: FormatOption = OutputFormat.TABLE) -> None:
    """Totals: sessions, moments, concepts, tokens, bytes, first and last activity.

    Example: agent-notebook stats --format json
    """
    with open_notebook(home) as nb:
        totals = nb.stats()
    rows = [{"field": k, "value": v} for k, v in totals.model_dump(mode="json").items()]
    if fmt is OutputFormat.JSON:
        emit(totals, fmt)
    else:
        emit(rows, fmt, [("field", lambda r: r["field"]), ("value", lambda r: r["value"])])
