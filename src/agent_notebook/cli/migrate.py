"""The migrate command: move a notebook to another backend (a PostgreSQL database)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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

if TYPE_CHECKING:
    from ..compaction.archive import ColdArchive

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
    from ..notebook.exchange import Archives, ChatState
    from ..notebook.exchange import migrate as run

    with reporting_errors():
        source = Notebook.open(home, create=False, background_embedding=False, store_index=None)
        try:
            target_home = to_home if to_home is not None else source.home
            # the target's store indexes what the source's had indexed (its own embedder)
            target = Notebook.open(target_home, backend=to, background_embedding=False)
            try:
                archives = None
                if source.backend.count_archived():
                    archives = Archives(cold_archive(source), cold_archive(target))
                chat = (
                    ChatState(source.store, source.checkpointer),
                    ChatState(target.store, target.checkpointer),
                )
                with progress_bar() as bar:
                    task = bar.add_task("migrate", total=source.backend.count_moments())
                    report = run(
                        source.backend,
                        target.backend,
                        chat,
                        archives=archives,
                        media=(source.media_store(), target.media_store()),
                        progress=lambda done: bar.update(task, completed=done),
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


def cold_archive(nb: Notebook) -> ColdArchive:
    """``nb``'s cold archive, sealed as its records are."""
    from ..compaction.archive import ColdArchive
    from ..core.crypto import cipher_of

    assert nb.archive_dir is not None  # Notebook.open gives every notebook a home
    return ColdArchive(nb.archive_dir, cipher=cipher_of(nb.backend))
