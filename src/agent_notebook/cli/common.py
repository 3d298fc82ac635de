"""What every command shares: options, opening the notebook, output, errors at the edge.

Data goes to stdout (JSON or a table); messages and progress go to stderr. A library error
becomes a one-line message and exit code 1; usage errors exit with 2 (Typer's default).
``--home`` and ``--format`` may also come before the command (``agent-notebook --home X
sessions``); the command's own wins, and either wins over the environment.

Square brackets in help texts are escaped (``\\[default: …]``): help is Rich markup.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, cast

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import config as cfg
from ..errors import InvalidInput, NotebookError
from ..notebook.facade import Notebook

# Markup off: data and messages that quote it ("[secret:password masked]", a file name)
# are printed as they are, never read as Rich markup.
if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

stdout = Console(soft_wrap=False, markup=False)
stderr = Console(stderr=True, soft_wrap=True, markup=False)


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"


#: A command parameter whose option, given before the command, is named otherwise there.
_BEFORE_THE_COMMAND = {"homes": "home"}  # serve's --home, which may be repeated


def or_global(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
    """The command's option when given on its command line, else the same option given
    before the command (kept in the root context), else what Click found (environment,
    default)."""
    name = param.name or ""
    source = ctx.get_parameter_source(name)  # by name: Typer may bring its own Click
    if source is not None and source.name == "COMMANDLINE":
        return value
    given = ctx.find_root().params.get(_BEFORE_THE_COMMAND.get(name, name))
    if given is None:
        return value
    return [given] if param.multiple else given


HOME_HELP = "The notebook directory \\[default: ~/.agent-notebook]."
HomeOption = Annotated[
    Path | None,
    typer.Option(
        "--home",
        envvar=cfg.HOME_ENV,  # the value resolve_home would read: shown in --help
        help=HOME_HELP,
        show_default=False,
        callback=or_global,
    ),
]
FormatOption = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", help="How to print data on stdout.", callback=or_global),
]
#: For a command whose usual output is not data (a path, a rendered slice): without
#: --format it prints that; with it, its report as a table or JSON.
ReportFormatOption = Annotated[
    OutputFormat | None,
    typer.Option(
        "--format",
        "-f",
        help="Print the report on stdout as a table or JSON \\[default: the usual text].",
        show_default=False,
        callback=or_global,
    ),
]
OffsetOption = Annotated[int, typer.Option(min=0, help="Skip this many items.")]
LimitOption = Annotated[int | None, typer.Option(min=0, help="Print at most this many items.")]


def flag(name: str, help: str) -> Any:
    """A boolean option that takes no value. Its help shows no type: Typer's would show
    ``<bool>``, as if the option wanted one."""
    return typer.Option(name, help=help, metavar="")


def fail(message: str, code: int = 1) -> NoReturn:
    stderr.print(Text.assemble(("error:", "bold red"), " ", message), highlight=False)
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
    if nb.vectors.semantic is None:
        return
    waiting = nb.vectors.unembedded()
    if 0 < waiting <= CATCH_UP_LIMIT:
        nb.vectors.reindex()
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
    whole: Collection[str] = (),
) -> None:
    """Print ``data`` as JSON, or as a table of ``columns`` (header, getter) per row; the
    cells of the columns named in ``whole`` (ids, dates) are never split across lines,
    the others fold to fit the terminal."""
    if fmt is OutputFormat.JSON or columns is None:
        sys.stdout.write(json.dumps(to_jsonable(data), ensure_ascii=False, indent=2) + "\n")
        return
    rows = data if isinstance(data, list) else [data]
    table = Table(title=None if title is None else Text(title), show_lines=False, highlight=False)
    cells = [["" if (v := get(row)) is None else str(v) for _, get in columns] for row in rows]
    for i, (header, _) in enumerate(columns):
        widest = max([len(header), *(len(r[i]) for r in cells)]) if header in whole else None
        table.add_column(
            Text(header), overflow="fold", no_wrap=widest is not None, min_width=widest
        )
    for line in cells:  # Text cells: data is shown as it is, never parsed as markup
        table.add_row(*map(Text, line))
    stdout.print(table)


def emit_fields(fields: dict[str, Any], fmt: OutputFormat) -> None:
    """Print one record: JSON, or a table of field and value rows."""
    if fmt is OutputFormat.JSON:
        emit(fields, fmt)
        return
    rows = [{"field": k, "value": v} for k, v in to_jsonable(fields).items()]
    emit(rows, fmt, [("field", lambda r: r["field"]), ("value", lambda r: r["value"])])


def short(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


#: Seconds between two progress lines when stderr is not a terminal (a log, a pipe), unless
#: AGENT_NOTEBOOK_PROGRESS_EVERY (:data:`~agent_notebook.config.PROGRESS_EVERY_ENV`) says.
PROGRESS_EVERY_S = 5.0
PROGRESS_EVERY_ENV = cfg.PROGRESS_EVERY_ENV


def progress_bar() -> Progress | LineProgress:
    """A progress bar on a terminal; elsewhere a plain line every few seconds."""
    if not stderr.is_terminal:
        return LineProgress(stderr, every=cfg.progress_every_s(PROGRESS_EVERY_S))
    from rich.progress import (  # loaded by the commands that show a bar only
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
    )


class LineProgress:
    """Progress for a stderr that is not a terminal, where a bar would show nothing: a line
    such as ``ingest chat.jsonl: 1200/5000 (24%), 430/s`` every ``every`` seconds, and a
    last one when a task that printed is done. The calls are those of Rich's Progress."""

    def __init__(
        self,
        console: Console,
        *,
        every: float = PROGRESS_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console, self.every, self.clock = console, every, clock
        self._tasks: list[_LineTask] = []

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *_: object) -> None:
        for task in self._tasks:
            if task.printed and task.printed_at != task.completed:
                self._print(task)

    def add_task(self, description: str, total: float | None = None) -> TaskID:
        self._tasks.append(_LineTask(description, total, started=self.clock()))
        return cast("TaskID", len(self._tasks) - 1)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        task = self._tasks[task_id]
        self.update(task_id, completed=task.completed + advance)

    def update(
        self, task_id: TaskID, *, completed: float | None = None, total: float | None = None
    ) -> None:
        task = self._tasks[task_id]
        if total is not None:
            task.total = total
        if completed is not None:
            task.completed = completed
        if self.clock() - task.last >= self.every:
            self._print(task)

    def _print(self, task: _LineTask) -> None:
        now = self.clock()
        elapsed = now - task.started
        done = f"{task.completed:.0f}"
        if task.total:
            done += f"/{task.total:.0f} ({100 * task.completed / task.total:.0f}%)"
        rate = f", {task.completed / elapsed:.0f}/s" if elapsed > 0 else ""
        self.console.print(f"{task.description}: {done}{rate}", highlight=False)
        task.last, task.printed, task.printed_at = now, True, task.completed


@dataclass(slots=True)
class _LineTask:
    description: str
    total: float | None
    started: float
    completed: float = 0.0
    last: float = field(init=False)
    printed: bool = False
    printed_at: float = 0.0

    def __post_init__(self) -> None:
        self.last = self.started
