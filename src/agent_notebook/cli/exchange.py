"""Commands that move a notebook: export and import."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .common import (
    HomeOption,
    OutputFormat,
    ReportFormatOption,
    emit_fields,
    open_notebook,
    progress_bar,
    reporting_errors,
    stderr,
)

if TYPE_CHECKING:  # the exchange loads when a command moves a notebook
    from ..notebook.exchange import CopyReport


class ExportKind(StrEnum):
    YAML = "yaml"
    SQLITE = "sqlite"


def export(
    destination: Annotated[Path, typer.Argument(help="A directory (yaml) or a .db file (sqlite).")],
    to: Annotated[
        ExportKind, typer.Option("--to", help="The destination's backend.")
    ] = ExportKind.YAML,
    home: HomeOption = None,
    fmt: ReportFormatOption = None,
) -> None:
    """Copy the whole notebook, ids and all, into a YAML directory or a SQLite file; the
    attached images and audio go to media/ in that directory (beside the .db file).

    Example: agent-notebook export --to yaml ./notebook-yaml
    """
    with open_notebook(home) as nb, reporting_errors():
        report = _copy(  # media/ and archive/ go along
            lambda p: nb.transfer.export_file(destination, to.value, p), nb.moment_count()
        )
    _report("exported", report, fmt)


def import_(
    source: Annotated[Path, typer.Argument(help="A YAML notebook directory or a .db file.")],
    home: HomeOption = None,
    fmt: ReportFormatOption = None,
) -> None:
    """Copy another notebook (YAML directory or SQLite file) into this one; all or nothing.
    The images and audio its moments refer to are copied from its media/ and checked, its
    cold archive from archive/, its session notebooks, thread map and checkpoints along.
    Ids this notebook already uses for other records are renumbered, and listed.

    Example: agent-notebook import ./notebook-yaml
    """
    with open_notebook(home, create=True) as nb, reporting_errors(), progress_bar() as bar:
        task = bar.add_task("copy", total=None)
        report = nb.transfer.import_file(  # and its media/ and archive/, when it has any
            source,
            lambda done: bar.update(task, completed=done),
            sized=lambda total: bar.update(task, total=total),
        )
    _report("imported", report, fmt)


def _copy(run: Callable[[Callable[[int], None]], CopyReport], total: int) -> CopyReport:
    with progress_bar() as bar:
        task = bar.add_task("copy", total=total)
        return run(lambda done: bar.update(task, completed=done))


def _report(verb: str, report: CopyReport, fmt: OutputFormat | None) -> None:
    """The summary on stderr; on stdout the target, or with --format the whole report."""
    stderr.print(
        f"{verb} {report.sessions} session(s) and {report.moments} moment(s) from "
        f"{report.source} to {report.target} ({report.skipped} identical record(s) skipped); "
        f"{report.vectors} vector(s), {report.archived} archived moment(s), "
        f"{report.store_items} store item(s), {report.checkpoints} checkpoint(s)",
        highlight=False,
    )
    if report.renumbered:
        pairs = ", ".join(f"{old} -> {new}" for old, new in report.renumbered.items())
        stderr.print(
            f"renumbered {len(report.renumbered)} id(s) already used here: {pairs}",
            highlight=False,
        )
    for name in report.kept:
        stderr.print(f"kept this notebook's store item {name} (the other differs)", highlight=False)
    if fmt is None:
        print(report.target)
    else:
        emit_fields(asdict(report), fmt)
