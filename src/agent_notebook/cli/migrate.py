"""The migrate command: move a notebook to another backend (a PostgreSQL database)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..notebook.facade import Notebook
from .common import (
    HomeOption,
    OutputFormat,
    ReportFormatOption,
    emit,
    fail,
    progress_bar,
    reporting_errors,
)

URL_HELP = "Where to: a postgresql://user@host:port/database URL (or a .db file)."


def migrate(
    to: Annotated[str, typer.Option("--to", help=URL_HELP, show_default=False)],
    to_home: Annotated[
        Path | None,
        typer.Option(
            "--to-home",
            help="The new notebook's home (its config, media/, archive/ and, for now, the "
            "LangGraph store and checkpoints of a PostgreSQL notebook) [default: --home].",
            show_default=False,
        ),
    ] = None,
    home: HomeOption = None,
    fmt: ReportFormatOption = None,
) -> None:
    """Copy this notebook, everything in it, into an empty PostgreSQL database, then count
    both and print the counts; this notebook is only read. Exit code 1 when a count differs.

    Example: agent-notebook migrate --to postgresql://postgres@127.0.0.1:5432/notes
    """
    with reporting_errors():
        source = Notebook.open(home, create=False, background_embedding=False, store_index=None)
        try:
            target_home = to_home if to_home is not None else source.home
            # the target's store indexes what the source's had indexed (its own embedder)
            target = Notebook.open(target_home, backend=to, background_embedding=False)
            try:
                with progress_bar() as bar:
                    task = bar.add_task("migrate", total=source.moment_count())
                    report = source.transfer.migrate_to(
                        target, progress=lambda done: bar.update(task, completed=done)
                    )
            finally:
                target.close()
        finally:
            source.close()
    rows = [
        {"what": c.what, "source": c.source, "target": c.target, "ok": c.ok} for c in report.counts
    ]
    if fmt is OutputFormat.JSON:
        emit(
            {"source": report.source, "target": report.target, "ok": report.ok, "counts": rows},
            fmt,
        )
    else:
        columns = [(k, lambda r, k=k: r[k]) for k in ("what", "source", "target", "ok")]
        emit(rows, OutputFormat.TABLE, columns, title=f"{report.source} -> {report.target}")
    if not report.ok:
        wrong = ", ".join(c.what for c in report.counts if not c.ok)
        fail(f"the counts differ ({wrong}): the source is untouched; see above")
