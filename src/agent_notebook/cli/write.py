"""Commands that write: init, record, ingest."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import config as cfg
from ..core.validation import validate_record
from ..errors import InvalidInput
from ..model import MomentDraft
from ..notebook.facade import Notebook
from ..notebook.opening import check_backend_choice
from .common import (
    CATCH_UP_LIMIT,
    FormatOption,
    HomeOption,
    OutputFormat,
    ReportFormatOption,
    emit,
    emit_fields,
    open_notebook,
    parse_json,
    progress_bar,
    read_stdin_text,
    reporting_errors,
    stderr,
)
from .read import MOMENT_COLUMNS, SESSION_COLUMNS

if TYPE_CHECKING:  # the parsers load when a command ingests
    from ..ingest import IngestReport


def init(
    home: HomeOption = None,
    backend: Annotated[
        str,
        typer.Option(
            help="sqlite (one file, the default), yaml (the seed's layout) or a "
            "postgresql://user@host/database URL (many servers over one database)."
        ),
    ] = "sqlite",
    fmt: ReportFormatOption = None,
) -> None:
    """Create a notebook: an owner-only directory with config.yaml and its storage. Prints
    the directory (with --format, what was made).

    Example: agent-notebook init --home ~/notes/agent
    """
    with reporting_errors():
        check_backend_choice(backend)
        root = cfg.resolve_home(home)
        from ..core.files import ensure_private_dir

        ensure_private_dir(root)
        if not (root / cfg.CONFIG_FILE).exists():
            cfg.write_config(root, cfg.NotebookConfig(backend=backend))
        from ..privacy.tokens import owner_token_path

        with Notebook.open(root) as nb:
            nb.langgraph.set_up()  # a PostgreSQL notebook's LangGraph tables, made now
            where = nb.location
            tokens = nb.access_tokens()  # a PostgreSQL notebook's: in its database
            _, created = tokens.ensure_owner()  # 'serve' asks every client for a token
            hint = tokens.owner_hint()
    stderr.print(f"notebook ready at {root} ({where})", highlight=False)
    stderr.print(
        f"owner token for 'agent-notebook serve' {'created now; ' if created else ''}{hint} "
        "(send it as 'Authorization: Bearer <token>')",
        highlight=False,
    )
    if fmt is None:
        print(root)
        return
    made = {"home": str(root), "storage": where, "owner_token": str(owner_token_path(root))}
    emit_fields({**made, "owner_token_created": created}, fmt)


def record(
    home: HomeOption = None,
    session: Annotated[
        str | None, typer.Option(help="Record into this session (else the JSON's 'session').")
    ] = None,
    task: Annotated[
        str | None, typer.Option(help="Start a new session with this task and record into it.")
    ] = None,
    image: Annotated[
        Path | None,
        typer.Option(help="Attach this image (PNG, JPEG, WebP) to the moment; JSON optional."),
    ] = None,
    audio: Annotated[
        Path | None,
        typer.Option(help="Attach this audio clip (WAV, FLAC, OGG, MP3) to the moment."),
    ] = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Record moments given as JSON on stdin: one object or a list of them.

    Each object has the fields of a moment draft: text, role, speaker, timestamp, importance,
    concepts, retrieval_keys, actions, parent, source_id… and may name its "session".
    --image or --audio attaches a file to the one moment (copied into <home>/media/ and
    signed); the JSON on stdin is then optional.

    Example: echo '{"text": "Book the train", "role": "user"}' | agent-notebook record --task Trip
    """
    with reporting_errors():
        media = {
            **({} if image is None else {"image_file": str(image)}),
            **({} if audio is None else {"audio_file": str(audio)}),
        }
        raw = "" if media and sys.stdin.isatty() else read_stdin_text("record")
        data = parse_json(raw, "record") if raw.strip() or not media else {}
        items: list[Any] = data if isinstance(data, list) else [data]
        if not items or not all(isinstance(i, dict) for i in items):
            raise InvalidInput("record: expected a JSON object or a non-empty list of objects")
        if media and len(items) != 1:
            raise InvalidInput("record: --image/--audio attach to one moment; give one object")
        if media:
            items[0].update(media)
        given = [i.pop("session") for i in items if "session" in i]
        if not all(isinstance(n, str) for n in given):
            raise InvalidInput('record: "session" must be a session id such as s_2026-06-07_001')
        named = set(given)
        if len(named) > 1 or (named and session and named != {session}):
            raise InvalidInput("record: the moments name different sessions; record them apart")
        target = session or (named.pop() if named else None)
        if target is not None and task is not None:
            raise InvalidInput("record: give --session or --task, not both")
        drafts = [
            validate_record(MomentDraft, item, f"record: moment {n}")
            for n, item in enumerate(items)
        ]
    with open_notebook(home, create=True) as nb:
        nb.check_drafts(drafts, "record: moment")  # before a session is started for them
        if target is None:
            started, recorded = nb.record_in_new_session(
                task or "Recorded from the command line", drafts
            )
            target = started.id
        else:
            recorded = nb.record_many(target, drafts)
    stderr.print(f"recorded {len(recorded)} moment(s) in {target}", highlight=False)
    emit(recorded, fmt, MOMENT_COLUMNS)


def ingest(
    file: Annotated[Path, typer.Argument(help="A JSON or JSONL chat log, or a LoCoMo file.")],
    home: HomeOption = None,
    source_format: Annotated[
        str | None,
        typer.Option(
            "--source-format", help="messages-json, messages-jsonl or locomo (default: detect)."
        ),
    ] = None,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Load a conversation file into sessions and moments (each keeps its source id).
    Ingesting the same file again adds only what is new (a file that grew adds its new
    turns) and says how many moments it skipped; the new moments wait for 'reindex'.

    Example: agent-notebook ingest chat.jsonl
    """
    from ..ingest import parse_file

    with reporting_errors():
        plan = parse_file(file, format=source_format)
    with open_notebook(home, create=True) as nb, progress_bar() as bar:
        task = bar.add_task(f"ingest {file.name}", total=plan.moment_count)
        report = nb.ingest(plan, progress=lambda n: bar.advance(task, n))
        # The new moments wait for a vector, as after 'record' (see docs/cli.md).
        waiting = report.moments_added > 0 and nb.vectors.wants_vectors
    stderr.print(ingest_summary(report, file), highlight=False)
    if waiting:
        stderr.print(
            f"the new moments are found by words until embedded: 'agent-notebook reindex' "
            f"embeds them now (a search embeds up to {CATCH_UP_LIMIT} first)",
            highlight=False,
        )
    if fmt is OutputFormat.JSON:
        emit(report, fmt)
    else:
        emit(report.sessions, fmt, SESSION_COLUMNS)


def ingest_summary(report: IngestReport, file: Path) -> str:
    """``ingested 4 new moments into 1 session(s) from chat.jsonl (messages-jsonl); skipped
    10 already in the notebook``."""
    where = f"from {file} ({report.format})"
    if report.moments_added:
        line = f"ingested {report.moments_added} new moment(s) into {len(report.sessions)} "
        line += f"session(s) {where}"
    else:
        line = f"nothing new {where}"
    if report.moments_skipped:
        line += f"; skipped {report.moments_skipped} already in the notebook"
    return line
