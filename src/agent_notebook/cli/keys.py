"""``agent-notebook key …``: the encryption key (encryption at rest): create one, rotate."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import config as cfg
from ..errors import InvalidInput
from ..privacy.keys import key_in_file, key_of_text, new_key
from .common import HomeOption, reporting_errors, stderr

app = typer.Typer(
    name="key",
    help="The encryption key of a notebook (privacy.encryption): create one, rotate it.",
    no_args_is_help=True,
)


@app.command()
def new(
    file: Annotated[
        Path | None,
        typer.Option(
            "--file", help="Write the key to this new file (owner-only), outside the home."
        ),
    ] = None,
    home: HomeOption = None,
) -> None:
    """Create a random 256-bit key. With --file it goes to that file (never inside the
    home), else it is printed for an environment variable.

    Example: agent-notebook key new --file ~/.config/agent-notebook/key
    """
    with reporting_errors():
        made = new_key(file, None if file is None else cfg.resolve_home(home))
        if made.file is None:
            typer.echo(made.text)
            stderr.print(
                "Keep this key safe: without it the notebook cannot be read. Give it to "
                "the notebook as AGENT_NOTEBOOK_KEY=<key>, and set in config.yaml:\n"
                "privacy:\n  encryption:\n    enabled: true",
                highlight=False,
            )
            return
        path = made.file
        typer.echo(str(path))
        stderr.print(
            f"Wrote key {made.id} to {path} (mode 600). Keep a copy apart from the "
            "notebook: without it the notebook cannot be read. Set in config.yaml:\n"
            f"privacy:\n  encryption:\n    enabled: true\n    key_file: {path}",
            highlight=False,
        )


@app.command()
def rotate(
    new_key_file: Annotated[
        Path | None, typer.Option(help="The new key's file (from 'key new --file').")
    ] = None,
    new_key_env: Annotated[
        str | None, typer.Option(help="The environment variable holding the new key.")
    ] = None,
    home: HomeOption = None,
) -> None:
    """Seal everything the notebook stores under a new key. The current key (from the
    config) must open it. Safe to stop and run again. It refuses to start while another
    process (a server, an MCP client) has the notebook open, and others wait while it runs.
    Then point the config or AGENT_NOTEBOOK_KEY at the new key.

    Example: agent-notebook key rotate --new-key-file ~/.config/agent-notebook/key-2
    """
    with reporting_errors():
        root = cfg.resolve_home(home)
        if (new_key_file is None) == (new_key_env is None):
            raise InvalidInput("key rotate: give exactly one of --new-key-file, --new-key-env")
        if new_key_file is not None:
            key = key_in_file(new_key_file, root)
            where = f"privacy.encryption.key_file: {new_key_file}"
        else:
            assert new_key_env is not None
            text = cfg.environment_value(new_key_env)
            if not text:
                raise InvalidInput(f"key rotate: the environment variable {new_key_env} is empty")
            key = key_of_text(text, f"environment variable {new_key_env}")
            where = f"the key in {new_key_env} (as AGENT_NOTEBOOK_KEY or your key_env)"
        from ..notebook.rotation import rotate_key  # loads LangGraph's store, to seal it

        report = rotate_key(root, key)
        typer.echo(
            f"sealed again under key {report.new_key_id} (was {report.old_key_id}): "
            f"{report.records} records, {report.archive_files} archive files, "
            f"{report.checkpoints} checkpoints"
        )
        stderr.print(
            f"Now switch the notebook to the new key: {where}. The old key no longer opens it.",
            highlight=False,
        )
