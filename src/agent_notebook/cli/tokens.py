"""``agent-notebook token …``: the API tokens of ``agent-notebook serve``.

The owner's token is made by ``init`` (or the first ``serve``), kept in
``<home>/secrets/owner-token`` and replaced by ``rotate-owner``; guest tokens are made here,
shown once, and kept only as a hash. A PostgreSQL notebook keeps every token's hash in its
database, so these commands on any machine reach every server (see
:mod:`agent_notebook.privacy.tokens`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from .. import config as cfg
from ..core.validation import describe_validation_error
from ..errors import InvalidInput, NotFound
from ..privacy.guest_scope import GuestScope
from ..privacy.tokens import open_tokens, owner_token_path
from .common import FormatOption, HomeOption, OutputFormat, emit, reporting_errors, stderr, when
from .serve import BackendOption

app = typer.Typer(
    name="token",
    help="Create, list and revoke the bearer tokens of 'agent-notebook serve'.",
    no_args_is_help=True,
)

TOKEN_COLUMNS = [
    ("name", lambda t: t.name),
    ("role", lambda t: t.role),
    ("created", lambda t: when(t.created)),
    ("kept in", lambda t: t.where),
    ("may read", lambda t: t.scope or ("everything" if t.role == "owner" else "")),
]


def _home(home: Path | None) -> Path:
    root = cfg.resolve_home(home)
    if not root.is_dir():
        raise NotFound(f"no notebook at {root}: run 'agent-notebook init --home {root}' first")
    return root


@app.command()
def create(
    guest: Annotated[
        str, typer.Option("--guest", help="The guest's name (letters, digits, '.', '_', '-').")
    ],
    session: Annotated[
        list[str] | None,
        typer.Option("--session", help="Only this session (repeat for more)."),
    ] = None,
    concept: Annotated[
        list[str] | None,
        typer.Option("--concept", help="Only moments holding this concept (repeat for more)."),
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Only what was said at or after this time (ISO 8601).")
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Only what was said at or before this time (ISO 8601).")
    ] = None,
    max_budget: Annotated[
        int | None, typer.Option(help="The most tokens one slice may hold (a larger ask is cut).")
    ] = None,
    home: HomeOption = None,
    backend: BackendOption = None,
) -> None:
    """Create a guest token: it may read slices (GET /api/slice), write back (POST
    /api/sessions/{id}/write-back) and use the guest MCP tools at /mcp-guest/. The token is
    printed once, on stdout; only its hash is kept. --session, --concept, --since, --until
    and --max-budget set its scope: its slices hold nothing outside them.

    Example: agent-notebook token create --guest planner --session s_2026-05-20_001 --max-budget 2000
    """
    with reporting_errors():
        scope = scope_of(session or [], concept or [], since, until, max_budget)
        with open_tokens(_home(home), backend) as store:
            token = store.create_guest(guest, scope)
    stderr.print(
        f"guest token {guest!r} created; it is shown only now: give it to the guest agent "
        f"(revoke it with 'agent-notebook token revoke {guest}')",
        highlight=False,
    )
    sys.stdout.write(token + "\n")


def scope_of(
    sessions: list[str],
    concepts: list[str],
    since: str | None,
    until: str | None,
    max_budget: int | None,
) -> GuestScope | None:
    """The scope the options give (None when they give none), checked."""
    if not (sessions or concepts or since or until or max_budget is not None):
        return None
    fields = {
        "sessions": sessions,
        "concepts": concepts,
        "since": since,
        "until": until,
        "max_budget_tokens": max_budget,
    }
    try:
        return GuestScope.model_validate(fields)
    except ValidationError as err:
        raise InvalidInput(
            f"token create: {describe_validation_error(err, GuestScope)}; nothing was created"
        ) from None


@app.command("list")
def list_(
    home: HomeOption = None, fmt: FormatOption = OutputFormat.TABLE, backend: BackendOption = None
) -> None:
    """List the tokens of the notebook: the owner's and each guest's (names, never secrets).

    Example: agent-notebook token list
    """
    with reporting_errors(), open_tokens(_home(home), backend) as store:
        rows = store.listing()
    emit(rows, fmt, TOKEN_COLUMNS)


@app.command()
def revoke(
    name: Annotated[str, typer.Argument(help="The guest token's name.")],
    home: HomeOption = None,
    backend: BackendOption = None,
) -> None:
    """Revoke a guest token; a running server refuses it (401) from its next request.

    Example: agent-notebook token revoke planner
    """
    with reporting_errors(), open_tokens(_home(home), backend) as store:
        store.revoke(name)
    stderr.print(f"guest token {name!r} revoked", highlight=False)
    print(name)


@app.command("rotate-owner")
def rotate_owner(home: HomeOption = None, backend: BackendOption = None) -> None:
    """Replace the owner token (after a leak, say): the new one is written to
    <home>/secrets/owner-token (0600) and printed on stdout; the old one stops working at
    once, on a running server too (no restart), and for a PostgreSQL notebook on every
    server of its database (which keeps only the hash). Guest tokens are not touched.

    Example: agent-notebook token rotate-owner
    """
    with reporting_errors():
        root = _home(home)
        with open_tokens(root, backend) as store:
            token = store.rotate_owner()
    stderr.print(
        f"owner token rotated: the new one is in {owner_token_path(root)}; the old one is "
        "no longer valid, so update the clients that sent it",
        highlight=False,
    )
    sys.stdout.write(token + "\n")
