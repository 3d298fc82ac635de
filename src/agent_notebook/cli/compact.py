"""The ``compact`` command: the age policy of seed 002 (rollups, lineage, the cold archive)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..compaction import CompactionReport
from .common import (
    FormatOption,
    HomeOption,
    OutputFormat,
    emit,
    flag,
    open_notebook,
    parse_time,
    progress_bar,
    reporting_errors,
    short,
    stderr,
)

if TYPE_CHECKING:
    from rich.progress import TaskID

#: Dropped items shown per rollup in the table (JSON has them all).
SHOWN_DROPPED = 8
#: What the progress bar says of each stage of a run (a dry run copies the notebook first).
STAGES = {
    "copy": "copying the notebook (dry run)",
    "daily": "daily rollups",
    "weekly": "weekly rollups",
    "monthly": "monthly rollups",
}


def compact(
    home: HomeOption = None,
    dry_run: Annotated[
        bool, flag("--dry-run", "Report what would change; change nothing.")
    ] = False,
    now: Annotated[
        str | None,
        typer.Option(help="Compact as of this ISO date or time (UTC) instead of now."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="Chat model (provider:model) when compaction.summarizer is llm "
            "\\[default: compaction.model, else chat.model]."
        ),
    ] = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Apply the age policy: summarize faded moments older than 7 days into daily rollups,
    roll days into weeks after 30 days and weeks into months after 90, and move what the
    monthly rollups replace to the cold archive (<home>/archive). Pinned moments stay.
    Every rollup lists its sources and what it dropped. Safe to stop and run again; a second
    run changes nothing. Thresholds: 'compaction:' in config.yaml.

    Example: agent-notebook compact --dry-run --now 2026-12-31
    """
    with reporting_errors():
        when = parse_time(now, "--now")
    with open_notebook(home) as nb, reporting_errors():
        chat_model = None
        if nb.config.compaction.summarizer == "llm":
            from .. import config as cfg
            from ..chat.models import ModelResolver

            setting = (
                "--model" if model else "compaction.model" if nb.config.compaction.model else ""
            )
            name = model or cfg.summarizer_model_name(nb.config)
            chat_model = ModelResolver(name).resolve(name, setting)
        with progress_bar() as bar:
            tasks: dict[str, TaskID] = {}

            def progress(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(STAGES.get(stage, stage), total=total or None)
                bar.update(tasks[stage], completed=done, total=total or None)

            report = nb.archive.compact(
                now=when, dry_run=dry_run, model=chat_model, progress=progress
            )
    if fmt is OutputFormat.JSON:
        emit(report, fmt)
        return
    emit(_summary_rows(report), fmt, [("", lambda r: r[0]), ("value", lambda r: r[1])])
    shown = [item for item in report.manifest if item.dropped]
    if shown:
        emit(
            shown,
            fmt,
            [
                ("rollup", lambda i: i.rollup),
                ("level", lambda i: i.level),
                ("period", lambda i: i.period),
                ("dropped", lambda i: f"{len(i.dropped)}/{i.salient}"),
                ("items", lambda i: short(", ".join(i.dropped[:SHOWN_DROPPED]), 70)),
            ],
            title="dropped manifest (kept with each rollup)",
        )
    if dry_run:
        stderr.print("dry run: nothing was changed", highlight=False)
    elif not report.changed:
        stderr.print("nothing to compact: the notebook is up to date", highlight=False)


def _summary_rows(report: CompactionReport) -> list[tuple[str, object]]:
    rate = f"{report.dropped / report.salient:.1%}" if report.salient else "-"
    return [
        ("as of", report.now.isoformat()),
        ("dry run", "yes" if report.dry_run else "no"),
        ("moments summarized", report.summarized),
        ("rollups made (daily/weekly/monthly)", "/".join(map(str, report.rollups.values()))),
        ("rollups extended", "/".join(map(str, report.extended.values()))),
        ("moments archived", report.archived),
        ("rollups archived", report.archived_rollups),
        ("active moments before -> after", f"{report.active_before} -> {report.active_after}"),
        ("active tokens before -> after", f"{report.tokens_before} -> {report.tokens_after}"),
        ("active tokens, change", report.token_change),
        ("originals leave the active set", report.originals_note),
        ("dropped (of salient items)", f"{report.dropped}/{report.salient} ({rate})"),
    ]
