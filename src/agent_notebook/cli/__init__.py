"""The ``agent-notebook`` command: a thin front end over :class:`agent_notebook.Notebook`."""

from __future__ import annotations

import typer

from . import (
    chat,
    compact,
    exchange,
    keys,
    maintain,
    privacy,
    read,
    serve,
    session,
    tokens,
    write,
)

app = typer.Typer(
    name="agent-notebook",
    help="A private, structured, searchable notebook that gives LLM agents memory.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)

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
app.command()(read.stats)
app.command()(chat.chat)
app.command("import-checkpoints")(chat.import_checkpoints)
app.command()(maintain.reindex)
app.command()(maintain.doctor)
app.command()(compact.compact)
app.command()(privacy.redact)
app.command()(privacy.forget)
app.command("delete-session")(privacy.delete_session)
app.command()(serve.serve)
app.command()(serve.mcp)
app.add_typer(session.app)
app.add_typer(tokens.app)
app.add_typer(keys.app)


def main() -> None:
    app()
