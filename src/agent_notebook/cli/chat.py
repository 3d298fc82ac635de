"""Commands of the chat graph: chat, import-checkpoints."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..config import MODEL_ENV, model_from_env
from ..errors import ModelNotConfigured, NotebookError
from .common import (
    FormatOption,
    HomeOption,
    OutputFormat,
    emit,
    fail,
    open_notebook,
    progress_bar,
    stderr,
)

if TYPE_CHECKING:  # the chat graph's parts load when the command runs
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import RunnableConfig

    from ..chat.runs import ChatGraph
    from ..notebook.checkpoints import ThreadImport

EXIT_COMMAND = "/exit"
PROMPT = "you> "
IMPORT_COLUMNS = [
    ("thread", lambda t: t.thread),
    ("session", lambda t: t.session),
    ("messages", lambda t: t.messages),
    ("skipped", lambda t: t.skipped),
]


def chat(
    thread: Annotated[
        str | None,
        typer.Option(
            help="The thread to talk on; an earlier thread resumes it "
            "\\[default: a new one, chat-YYYYMMDD-HHMMSS].",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="The chat model, provider:model \\[default: chat.model in config.yaml, else "
            "AGENT_NOTEBOOK_MODEL]. Offline, with no LLM: 'offline:notes' answers with what "
            "the notebook recalls; 'fake:echo' is a test double that echoes your line.",
            show_default=False,
        ),
    ] = None,
    show_context: Annotated[
        bool,
        typer.Option(
            "--show-context",
            help="Print on stderr, before each answer, what the notebook gave the model: "
            "the part of the system prompt it recalled.",
        ),
    ] = False,
    home: HomeOption = None,
) -> None:
    """Chat on the chat graph: each line of stdin is a turn, each answer is printed on stdout.

    The thread is checkpointed in the notebook and every turn is recorded as moments of the
    thread's session, so --thread resumes a chat later. /exit or end of input stops it.

    Example: agent-notebook chat --thread trip --model openai:gpt-4o-mini
    """
    thread_id = thread or datetime.now().strftime("chat-%Y%m%d-%H%M%S")
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    with open_notebook(home, create=True, long_lived=True) as nb:
        name = model or nb.config.chat.model or model_from_env()
        if not name:  # said before the chat graph's parts load (seconds)
            fail(str(ModelNotConfigured(MODEL_ENV)))
        from ..chat import ModelResolver, build_chat_graph
        from ..chat.models import attach_fact_judge, offline_models

        builtin = offline_models()
        if show_context:
            config["callbacks"] = [_context_printer()]
        resolver = ModelResolver(name, builtin)
        try:
            chosen = resolver.resolve()
            attach_fact_judge(nb, resolver)  # with facts.judge on: a model judges the rules
        except NotebookError:
            raise
        except Exception as err:  # noqa: BLE001 - a provider refusing to start (no key…)
            fail(f"cannot make the chat model {name!r}: {type(err).__name__}: {err}")
        graph = build_chat_graph(nb, model=chosen, models=builtin)
        earlier = _announce(graph, thread_id, config, new=thread is None)
        turns = 0
        try:
            for line in _lines(interactive=sys.stdin.isatty()):
                print(_turn(graph, line, config), flush=True)
                turns += 1
        except KeyboardInterrupt:
            stderr.print("\ninterrupted", highlight=False)
            raise typer.Exit(130) from None
        if turns or earlier:
            stderr.print(
                f"thread {thread_id} is session {nb.thread_session(thread_id)}; "
                f"go on with: agent-notebook chat --thread {thread_id}",
                highlight=False,
                markup=False,
            )


def _context_printer() -> Any:
    """A LangChain callback that prints, when the model is called, what the notebook
    recalled into its system prompt (``--show-context``)."""
    from langchain_core.callbacks import BaseCallbackHandler

    from ..chat.models import recalled

    class ContextPrinter(BaseCallbackHandler):
        def on_chat_model_start(
            self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
        ) -> None:
            shown = recalled(messages[0]) or "(nothing recalled)"
            stderr.print(f"--- context ---\n{shown}\n---", highlight=False, markup=False)

    return ContextPrinter()


def _announce(
    graph: ChatGraph,
    thread_id: str,
    config: RunnableConfig,
    *,
    new: bool,
) -> int:
    """Say on stderr which thread this is and how much it holds; return its message count."""
    values: dict[str, Any] = graph.get_state(config).values or {}
    count = len(values.get("messages") or [])
    if count or values.get("condensed_history"):
        condensed = " and a condensed history" if values.get("condensed_history") else ""
        message = f"resuming thread {thread_id}: {count} message(s){condensed}"
    elif new:
        message = f"new chat on thread {thread_id} (resume it with --thread {thread_id})"
    else:
        message = f"new thread {thread_id}"
    stderr.print(f"{message}; {EXIT_COMMAND} or end of input stops", highlight=False, markup=False)
    return count


def _lines(*, interactive: bool) -> Iterator[str]:
    """Non-empty lines of stdin until end of input or /exit, prompting on a terminal."""
    while True:
        if interactive:
            sys.stderr.write(PROMPT)
            sys.stderr.flush()
        raw = sys.stdin.buffer.readline()
        if not raw:
            if interactive:
                sys.stderr.write("\n")
            return
        text = raw.decode("utf-8", errors="replace").strip()
        if text == EXIT_COMMAND:
            return
        if text:
            yield text


def _turn(graph: ChatGraph, text: str, config: RunnableConfig) -> str:
    from langchain_core.messages import HumanMessage

    try:
        state = graph.invoke({"messages": [HumanMessage(text)]}, config)
    except NotebookError:
        raise
    except Exception as err:  # noqa: BLE001 - a provider's failure (network, key, quota…)
        fail(f"the chat model failed: {type(err).__name__}: {err}")
    messages: list[BaseMessage] = state.get("messages") or []
    return messages[-1].text if messages else ""


def import_checkpoints(
    file: Annotated[
        Path,
        typer.Argument(
            help="A LangGraph SqliteSaver database, such as Open Notebook's "
            "data/sqlite-db/checkpoints.sqlite (opened read-only)."
        ),
    ],
    home: HomeOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Import every thread of a LangGraph checkpoint database as a session with its moments.

    Each thread's latest messages become moments (message ids as source ids) of a session
    linked to thread:<id>, and the thread's state, so `chat --thread <id>` goes on with its
    messages (the newest within chat.live_budget_tokens, the rest condensed). Importing
    again takes only what a thread gained since; a thread with nothing new is skipped.

    Example: agent-notebook import-checkpoints data/sqlite-db/checkpoints.sqlite --format json
    """
    with open_notebook(home, create=True) as nb, progress_bar() as bar:
        task = bar.add_task(f"import {file.name}", total=None)
        report: list[ThreadImport] = nb.transfer.import_checkpoints(
            file, lambda done, total: bar.update(task, completed=done, total=total)
        )
    imported = [t for t in report if t.skipped is None]
    stderr.print(
        f"imported {len(imported)} thread(s) with {sum(t.messages for t in imported)} "
        f"message(s) from {file}; {len(report) - len(imported)} skipped",
        highlight=False,
        markup=False,
    )
    emit(report, fmt, IMPORT_COLUMNS)
