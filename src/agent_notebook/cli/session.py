"""``agent-notebook notebook …``: read and edit a thread's session notebook."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import NotFound
from .common import (
    FormatOption,
    HomeOption,
    OutputFormat,
    emit,
    open_notebook,
    read_stdin_text,
    reporting_errors,
    stderr,
)

app = typer.Typer(
    name="notebook",
    help="Read and edit the session notebook (working memory) of a thread.",
    no_args_is_help=True,
)

ThreadArgument = Annotated[str, typer.Argument(help="The LangGraph thread id.")]


@app.command()
def show(
    thread: ThreadArgument,
    home: HomeOption = None,
    section: Annotated[str | None, typer.Option(help="Print only this section.")] = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Print a thread's session notebook (Markdown), or one section of it.

    Example: agent-notebook notebook show thread-1 --section "Current State"
    """
    with open_notebook(home) as nb, reporting_errors():
        notes = nb.session_notebook(thread).sync  # checks the thread id
        if thread not in nb.langgraph.session_notebook_threads():
            raise NotFound(
                f"thread {thread!r} has no session notebook; 'agent-notebook notebook list' "
                "lists the threads that have one ('notebook set' starts one)"
            )
        text = notes.get_section(section) if section is not None else notes.load()
    if fmt is OutputFormat.JSON:
        emit({"thread": thread, "section": section, "content": text}, fmt)
    else:
        print(text)


@app.command("list")
def list_threads(home: HomeOption = None, fmt: FormatOption = OutputFormat.TABLE) -> None:
    """List the threads that have a session notebook, sorted.

    Example: agent-notebook notebook list
    """
    with open_notebook(home) as nb, reporting_errors():
        threads = nb.langgraph.session_notebook_threads()
    if fmt is OutputFormat.JSON:
        emit(threads, fmt)
    elif not threads:
        stderr.print("no thread has a session notebook yet ('notebook set' starts one)")
    else:
        print("\n".join(threads))


@app.command("set")
def set_section(
    thread: ThreadArgument,
    section: Annotated[str, typer.Argument(help='A section name, such as "Current State".')],
    home: HomeOption = None,
) -> None:
    """Replace one section of a thread's session notebook with the text on stdin.

    Example: echo "Implementing auth middleware" | agent-notebook notebook set thread-1 "Current State"
    """
    with reporting_errors():
        content = read_stdin_text("notebook set")
    with open_notebook(home, create=True) as nb, reporting_errors():
        notes = nb.session_notebook(thread).sync
        notes.update_section(section, content)
        refs = notes.enforce_budget()
        text = notes.get_section(section)
    for name, ref in refs.items():
        stderr.print(f"condensed {name}: earlier text moved to {ref}", highlight=False)
    print(text)
