"""The ``agent-notebook`` command: a thin front end over :class:`agent_notebook.Notebook`.

A command imports what it needs when it runs (LangGraph for chat, the server for serve,
the embedding model for a search by meaning), so listing or reading answers at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from . import (
    chat,
    compact,
    exchange,
    facts,
    keys,
    maintain,
    migrate,
    privacy,
    read,
    serve,
    session,
    tokens,
    write,
)
from .common import HOME_HELP, OutputFormat

app = typer.Typer(
    name="agent-notebook",
    help="A private, structured, searchable notebook that gives LLM agents memory.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"agent-notebook {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print the version and exit.",
            metavar="",
        ),
    ] = False,
    home: Annotated[
        Path | None,
        typer.Option(
            "--home", help=f"{HOME_HELP} For the command that follows.", show_default=False
        ),
    ] = None,
    fmt: Annotated[
        OutputFormat | None,
        typer.Option(
            "--format",
            "-f",
            help="For the command that follows: table or json.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """A private, structured, searchable notebook that gives LLM agents memory.

    --home and --format may come before the command too: agent-notebook --home ~/notes sessions
    """
    # The values stay in the root context, where each command's option looks (common.or_global).


app.command()(write.init)
app.command()(read.sessions)
app.command()(read.show)
app.command()(read.moments)
app.command()(write.record)
app.command()(write.ingest)
app.command()(read.search)
app.command("slice")(read.slice_)
app.command()(exchange.export)
app.command("import")(exchange.import_)
app.command()(migrate.migrate)
app.command()(read.stats)
app.command()(chat.chat)
app.command("import-checkpoints")(chat.import_checkpoints)
app.command()(maintain.reindex)
app.command()(maintain.doctor)
app.command()(compact.compact)
app.command()(privacy.redact)
app.command()(privacy.forget)
app.command("delete-session")(privacy.delete_session)
app.command()(facts.decisions)
app.command()(facts.decide)
app.command("edit-decision")(facts.edit_decision)
app.command()(facts.pending)
app.command("add-pending")(facts.add_pending)
app.command("edit-pending")(facts.edit_pending)
app.command("close-pending")(facts.close_pending)
app.command()(facts.conflicts)
app.command("resolve-conflict")(facts.resolve_conflict)
app.command()(facts.about)
app.command()(serve.serve)
app.command()(serve.mcp)
app.add_typer(session.app)
app.add_typer(tokens.app)
app.add_typer(keys.app)


def main() -> None:
    app()
