"""Commands that read: sessions, show, moments, search, slice, stats."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from ..model import Moment, Session
from ..search.explanation import Mark, Signal
from ..search.hits import SearchHit
from ..search.request import Mode
from ..search.slice import MAX_SLICE_TOKENS
from .common import (
    FormatOption,
    HomeOption,
    LimitOption,
    OffsetOption,
    OutputFormat,
    ReportFormatOption,
    catch_up,
    emit,
    emit_fields,
    flag,
    open_notebook,
    parse_time,
    reporting_errors,
    short,
    stderr,
    when,
)

SESSION_COLUMNS = [
    ("id", lambda s: s.id),
    ("started", lambda s: when(s.started)),
    ("status", lambda s: s.task_status.value),
    ("moments", lambda s: s.stats.moments),
    ("task", lambda s: short(s.task, 60)),
]
SLICE_COLUMNS = [
    ("kind", lambda i: i.kind),
    ("source", lambda i: i.source),
    ("when", lambda i: when(i.when)),
    ("who", lambda i: i.who),
    ("text", lambda i: short(i.text)),
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
    emit_fields(dict(fields), fmt)


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
    query: Annotated[
        str, typer.Argument(help="What to look for, in words (optional with --image/--audio).")
    ] = "",
    home: HomeOption = None,
    session: Annotated[str | None, typer.Option(help="Only this session.")] = None,
    since: Annotated[str | None, typer.Option(help="From this ISO time (inclusive).")] = None,
    until: Annotated[str | None, typer.Option(help="Before this ISO time.")] = None,
    speaker: Annotated[str | None, typer.Option(help="Only moments by this speaker.")] = None,
    concept: Annotated[str | None, typer.Option(help="Only moments with this concept.")] = None,
    mode: Annotated[Mode, typer.Option(help="hybrid (default), lexical or vector.")] = "hybrid",
    explain: Annotated[
        bool,
        flag("--explain", "Show each signal's share of each result, and what query coverage did."),
    ] = False,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many results.")] = 10,
    include_archive: Annotated[
        bool,
        flag("--include-archive", "Search the cold archive too (by words); hits are tagged."),
    ] = False,
    image: Annotated[
        Path | None,
        typer.Option(help="Search by example: moments whose image looks like this one."),
    ] = None,
    audio: Annotated[
        Path | None,
        typer.Option(help="Search by example: moments whose audio sounds like this clip."),
    ] = None,
    min_score: Annotated[
        float | None,
        typer.Option(
            "--min-score",
            min=0.0,
            max=1.0,
            help="Leave out results less relevant than this, 0 to 1: 1 is a match on a word "
            "other than a stopword, else the similarity of meaning [default: search.min_score, "
            "0.3]; 0 shows every match.",
            show_default=False,
        ),
    ] = None,
    current: Annotated[
        bool,
        flag("--current", "Only what holds now: no fact a later one replaced, nothing expired."),
    ] = False,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="Read the notebook as it stood at this time (ISO 8601, no zone: UTC): what "
            "was said by then and still held then.",
        ),
    ] = None,
    asked_at: Annotated[
        str | None,
        typer.Option(
            "--asked-at",
            help="When the question is asked (ISO 8601, no zone: UTC): its time words "
            '("yesterday", "last week", "in March") are read against it '
            "[default: --as-of, else now].",
            show_default=False,
        ),
    ] = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Search moments by words and meaning, best first: lexical (BM25), vector and concept
    matches fused, with importance and recency as priors. Rollups made by 'compact' are
    found too (tier "rollup"); --include-archive adds what it archived (tier "archived").
    --image or --audio searches by example (nearest signatures), with or without words.
    Weak matches are left out (--min-score); when none is left, stderr says so. What the
    fact rules know of a hit shows in its "facts" column (superseded by, said N times,
    conflicting, expired); --current leaves out what no longer holds, --as-of reads the past.
    The question's time words ("yesterday", "last week") are read against --asked-at.

    Example: agent-notebook search "train to Lyon" --since 2026-06-01 --speaker ana --explain
    """
    if not query.strip() and image is None and audio is None:  # a usage error: exit 2
        raise typer.BadParameter(
            "give words to look for, or --image/--audio FILE", param_hint="QUERY"
        )
    with open_notebook(home) as nb, reporting_errors():
        if mode != "lexical":  # the others embed the query
            catch_up(nb)
        found = nb.search(
            query,
            session=session,
            since=parse_time(since, "--since"),
            until=parse_time(until, "--until"),
            speaker=speaker,
            concept=concept,
            mode=mode,
            limit=limit,
            include_archive=include_archive,
            image=image,
            audio=audio,
            min_score=min_score,
            current=current,
            as_of=parse_time(as_of, "--as-of"),
            asked_at=parse_time(asked_at, "--asked-at"),
        )
    if (hint := found.hint("--min-score")) is not None:
        stderr.print(hint, highlight=False)
    hits: list[SearchHit] = found
    if explain and fmt is OutputFormat.TABLE:
        by_example = image is not None or audio is not None
        _print_explained(hits, _shown_signals(hits, example=by_example), found.min_score)
        return
    columns: list[tuple[str, Callable[[SearchHit], object]]] = [
        ("score", lambda h: f"{h.score:.3g}"),
        ("id", lambda h: h.moment.id),
        ("date", lambda h: h.moment.timestamp.date().isoformat()),
        ("session", lambda h: h.moment.session),
        ("speaker", lambda h: h.moment.speaker or h.moment.role),
        ("text", lambda h: short(h.moment.content.text, 80)),
    ]
    if include_archive or any(h.tier != "active" for h in hits):
        columns.insert(2, ("tier", lambda h: h.tier))
    if any(h.fact_note() for h in hits):  # "superseded by m_N", "said 3 times"…
        columns.append(("facts", lambda h: h.fact_note()))
    if not explain and fmt is OutputFormat.JSON:
        hits = [h.without_explain() for h in hits]
    emit(hits, fmt, columns)


#: The signals ``search --explain`` always shows (``-`` when a hit has none of it).
_ALWAYS_SHOWN = (Signal.LEXICAL, Signal.VECTOR, Signal.CONCEPT)


def _shown_signals(hits: list[SearchHit], *, example: bool) -> list[Signal]:
    """The signals ``search --explain`` shows: the main three, ``media`` for a search by
    example, and any other signal that found one of the hits (the date a query names...)."""
    found = {signal for hit in hits for signal in hit.explain.signals}
    return [
        signal
        for signal in Signal
        if signal in _ALWAYS_SHOWN or signal in found or (example and signal is Signal.MEDIA)
    ]


def _print_explained(hits: list[SearchHit], signals: list[Signal], min_score: float) -> None:
    """``search --explain`` as text: a block a hit, its lines folded to the terminal."""
    width = max(40, shutil.get_terminal_size().columns)
    indent = "    "
    for rank, hit in enumerate(hits, 1):
        moment = hit.moment
        head = (
            f"#{rank} {moment.id}  score {hit.score:.3g}  {moment.timestamp.date()}  "
            f"{moment.session}  {moment.speaker or moment.role}"
        )
        if hit.tier != "active":
            head += f"  ({hit.tier})"
        found = " · ".join(f"{s} {_share(s)(hit)}" for s in signals)
        why = [
            f"found by: {found}",
            f"relevance {_relevance(hit, min_score)}; priors {_priors(hit) or '-'}",
        ]
        if (own := hit.explain.own_score) is not None:
            why.append(
                f"score {hit.score:.3g}: placed just below {hit.superseded_by or 'the moment'} "
                f"that ended it (its own score {own:.3g})"
            )
        if hit.covered:
            why.append(f"query coverage {_coverage(hit)}")
        if note := hit.fact_note():
            why.append(note)
        lines = [head, *textwrap.wrap(moment.content.text, width - len(indent))[:3]]
        lines = lines[:1] + [indent + line for line in lines[1:]]
        for part in why:
            lines += textwrap.wrap(part, width, initial_indent=indent, subsequent_indent=indent)
        print("\n".join(lines) + ("\n" if rank < len(hits) else ""))


def _share(signal: Signal) -> Callable[[SearchHit], object]:
    def cell(hit: SearchHit) -> str:
        part = hit.explain.signals.get(signal)
        if part is None or part.share is None:
            return "-"
        return f"{part.share:.0%} #{part.rank}"

    return cell


def _relevance(hit: SearchHit, min_score: float) -> str:
    """The hit's relevance, or ``-`` and why it has none."""
    value = hit.explain.relevance
    if value is not None:
        return f"{value:.2f}"
    marks = hit.explain.marks
    if Mark.SUCCESSOR in marks:
        return "- (not found by the query: it ended a hit shown after it)"
    if Mark.CONFLICT in marks:
        return "- (not found by the query: it conflicts with the hit before it)"
    if hit.tier == "archived":
        return "- (not judged: found in the cold archive by its words)"
    if min_score <= 0:
        return "- (not judged: --min-score 0 keeps every match)"
    return "- (not judged: a search by example alone)"


def _coverage(hit: SearchHit) -> str:
    """The query coverage step: where it put the hit (``#5->#2``, or ``#2`` when it stayed)
    and the query's words the hit has."""
    step = hit.explain.coverage
    if step is None:
        return "-"
    before, after = step.before, step.after
    place = f"#{before}" if after == before else f"#{before}->#{after}"
    return f"{place} {','.join(hit.covered) or '-'}"


def _priors(hit: SearchHit) -> str:
    return " ".join(f"{prior} x{value:.2f}" for prior, value in hit.explain.priors.items())


def slice_(
    query: Annotated[str, typer.Argument(help="What the guest needs to know about.")],
    home: HomeOption = None,
    budget: Annotated[
        int, typer.Option(min=1, max=MAX_SLICE_TOKENS, help="Token budget of the slice.")
    ] = 4000,
    audience: Annotated[str, typer.Option(help="Who the slice is for.")] = "guest",
    session: Annotated[str | None, typer.Option(help="Only this session.")] = None,
    as_yaml: Annotated[bool, flag("--yaml", "YAML instead of Markdown.")] = False,
    asked_at: Annotated[
        str | None,
        typer.Option(
            "--asked-at",
            help="When the question is asked (ISO 8601, no zone: UTC): its time words are "
            "read against it [default: now].",
            show_default=False,
        ),
    ] = None,
    fmt: ReportFormatOption = None,
) -> None:
    """Print a read-only, provenance-tagged slice of the notebook for a guest agent: the
    relevant moments with their neighbouring turns, each session's task, open pending items
    and related decisions, within the token budget. --format prints its items as a table,
    or the whole slice as JSON, instead.

    Example: agent-notebook slice "train to Lyon" --budget 2000 --audience hermes
    """
    with open_notebook(home) as nb, reporting_errors():
        catch_up(nb)
        found = nb.slice(
            query,
            budget,
            audience=audience,
            session=session,
            fmt="yaml" if as_yaml else "markdown",
            asked_at=parse_time(asked_at, "--asked-at"),
        )
    if fmt is None:
        typer.echo(found.render(), nl=False)
    else:
        emit(found if fmt is OutputFormat.JSON else found.items, fmt, SLICE_COLUMNS)
    stderr.print(f"{found.tokens} of {found.budget_tokens} tokens; {found.cut} matches left out")


def stats(home: HomeOption = None, fmt: FormatOption = OutputFormat.TABLE) -> None:
    """Totals: sessions, moments, concepts, tokens, bytes, first and last activity.

    Example: agent-notebook stats --format json
    """
    with open_notebook(home) as nb:
        totals = nb.stats()
    emit_fields(totals.model_dump(mode="json"), fmt)
