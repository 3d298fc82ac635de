"""What every command shares: options, opening the notebook, output, errors at the edge.

Data goes to stdout (JSON or a table); messages and progress go to stderr. A library error
becomes a one-line message and exit code 1; usage errors exit with 2 (Typer's default).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from ..errors import InvalidInput, NotebookError
from ..notebook import Notebook

stdout = Console(soft_wrap=False)
stderr = Console(stderr=True, soft_wrap=True)


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"


HomeOption = Annotated[
    Path | None,
    typer.Option(
        "--home",
        envvar="AGENT_NOTEBOOK_HOME",
        help="The notebook directory [default: ~/.agent-notebook].",
        show_default=False,
    ),
]
FormatOption = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="How to print data on stdout.")
]
OffsetOption = Annotated[int, typer.Option(min=0, help="Skip this many items.")]
LimitOption = Annotated[int | None, typer.Option(min=0, help="Print at most this many items.")]


def fail(message: str, code: int = 1) -> NoReturn:
    stderr.print(f"[bold red]error:[/] {message}", markup=True, highlight=False)
    raise typer.Exit(code)


@contextmanager
def reporting_errors() -> Iterator[None]:
    """Turn library errors into a message on stderr and exit code 1."""
    try:
        yield
    except NotebookError as err:
        fail(str(err))


@contextmanager
def open_notebook(
    home: Path | None, *, create: bool = False, long_lived: bool = False
) -> Iterator[Notebook]:
    """A command's notebook. A one-shot command leaves new moments in the embedding queue
    (loading the model would cost more than the command); a long-lived one (chat) embeds
    them in the background."""
    with (
        reporting_errors(),
        Notebook.open(home, create=create, background_embedding=long_lived) as nb,
    ):
        yield nb


#: A search embeds up to this many queued moments first; more wait for 'reindex'.
CATCH_UP_LIMIT = 2000


def catch_up(nb: Notebook) -> None:
    """Embed what one-shot commands left queued, so a search finds it by meaning."""
    if nb.semantic is None:
        return
    waiting = nb.unembedded()
    if 0 < waiting <= CATCH_UP_LIMIT:
        nb.reindex()
    elif waiting:
        stderr.print(
            f"{waiting} moments wait for a vector and are found by words only: run "
            "'agent-notebook reindex'",
            highlight=False,
        )


def parse_time(value: str | None, option: str) -> datetime | None:
    """ISO 8601 date or time; a time without a zone is UTC."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(
            f"{option}: {value!r} is not an ISO 8601 date or time (e.g. 2026-06-07T10:00Z)"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def read_stdin_text(what: str) -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidInput(
            f"{what}: not valid UTF-8 at byte {err.start} of standard input; "
            "send UTF-8 encoded JSON"
        ) from None


def parse_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InvalidInput(
            f"{what}: not JSON ({err.msg} at line {err.lineno}, column {err.colno})"
        ) from None
    except RecursionError:  # as ingest says of a file
        raise InvalidInput(f"{what}: not JSON: nested too deeply") from None


def to_jsonable(data: Any) -> Any:
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json")
    if isinstance(data, list | tuple):
        return [to_jsonable(item) for item in data]
    if isinstance(data, dict):
        return {k: to_jsonable(v) for k, v in data.items()}
    return data


def emit(
    data: Any,
    fmt: OutputFormat,
    columns: Sequence[tuple[str, Callable[[Any], object]]] | None = None,
    *,
    title: str | None = None,
) -> None:
    """Print ``data`` as JSON, or as a table of ``columns`` (header, getter) per row."""
    if fmt is OutputFormat.JSON or columns is None:
        sys.stdout.write(json.dumps(to_jsonable(data), ensure_ascii=False, indent=2) + "\n")
        return
    rows = data if isinstance(data, list) else [data]
    table = Table(title=title, show_lines=False, highlight=False)
    for header, _ in columns:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*("" if (v := get(row)) is None else str(v) for _, get in columns))
    stdout.print(table)


def short(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
    )
