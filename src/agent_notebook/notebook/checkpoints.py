"""Importing LangGraph checkpoints: every thread of a ``SqliteSaver`` database (for example
Open Notebook's ``data/sqlite-db/checkpoints.sqlite``) becomes a session with its moments,
and a thread the notebook's chat graph can go on with.

The database is opened read-only. Each thread's latest checkpoint gives its messages (the
``messages`` channel), recorded as moments like the chat graph records a turn
(:func:`~agent_notebook.langgraph.messages.drafts_for`, the message ids as source ids); a message's
time is that of the first checkpoint that holds it, and the session starts with the thread's
first checkpoint. The session links to ``thread:<id>`` (relation ``imported-from``) and is
remembered as the thread's session, so :meth:`Notebook.thread_session` finds it and a chat on
that thread goes on in it.

The messages also go into the thread's state in the notebook's checkpointer (one checkpoint
appending them, the thread's other channels kept), marked as recorded, so continuing the
thread starts from them; the chat graph fits them to its live budget, the rest condensed,
on that first turn.

Importing again takes only what a thread gained since: the messages after the last one the
notebook holds (by message id). A thread with nothing new is skipped, so a second import of
an unchanged file changes nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypedDict

from langchain_core.messages import AnyMessage, BaseMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, copy_checkpoint, empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph.message import add_messages
from pydantic import BaseModel, ConfigDict

from ..errors import MalformedFile
from ..langgraph.messages import drafts_for, kept
from ..langgraph.stores import write_lock
from ..model import SESSION_ID_RE, THREADS_NAMESPACE, MomentDraft

if TYPE_CHECKING:
    from .langgraph_state import LangGraphState
    from .recording import Recording

__all__ = ["IMPORTED_FROM", "ImportedThread", "ThreadImport", "import_checkpoints"]

#: The relation of the link from an imported session to ``thread:<id>``.
IMPORTED_FROM = "imported-from"
#: Called after each thread with (threads done, threads in all), and once with (0, all).
ImportProgress = Callable[[int, int], None]
_TABLES = {"checkpoints", "writes"}
NOTHING_NEW = "nothing new since the last import"
#: The seed's channels an import carries over besides the messages: what the thread is about.
CARRIED = ("notebook", "context")


class ImportedThread(TypedDict, total=False):
    """The channels of a chat thread's state that an import writes (the chat graph's
    ``ThreadState`` extends it): the messages, merged by ``add_messages``, the id of the last
    one recorded as a moment, and the seed's ``notebook`` (any shape) and ``context``."""

    messages: Annotated[list[AnyMessage], add_messages]
    recorded_through: Optional[str]  # noqa: UP045 - as ThreadState spells it
    notebook: Optional[Any]  # noqa: UP045
    context: Optional[str]  # noqa: UP045


@dataclass(frozen=True)
class ImportTarget:
    """The parts of the notebook an import writes to."""

    recording: Recording
    langgraph: LangGraphState


class ThreadImport(BaseModel):
    """What became of one thread: its session and the moments recorded, or why it was
    skipped (then ``messages`` is 0 and ``session`` names the session it already has, if any).
    """

    model_config = ConfigDict(frozen=True)

    thread: str
    session: str | None = None
    messages: int = 0
    skipped: str | None = None


def import_checkpoints(
    to: ImportTarget, path: Path | str, progress: ImportProgress | None = None
) -> list[ThreadImport]:
    """Import every thread of the checkpoint database at ``path`` into the notebook of ``to``, the oldest
    thread first; see the module docstring. A thread is recorded all at once or not at
    all; a file that is not a checkpoint database raises :class:`MalformedFile`."""
    file = Path(path).expanduser()
    with _open_readonly(file) as conn:
        saver = SqliteSaver(conn)
        threads = _thread_ids(conn, file)
        imported = _imported_sessions(to)
        report = []
        if progress is not None:
            progress(0, len(threads))
        for done, thread in enumerate(threads, start=1):
            report.append(_import_thread(to, saver, file, thread, imported))
            if progress is not None:
                progress(done, len(threads))
    return report


def _import_thread(
    to: ImportTarget, saver: SqliteSaver, file: Path, thread: str, imported: dict[str, str]
) -> ThreadImport:
    config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    try:
        latest = saver.get_tuple(config)
        values: dict[str, Any] = latest.checkpoint["channel_values"] if latest else {}
        if "messages" not in values:
            return ThreadImport(thread=thread, skipped="no 'messages' channel")
        if not isinstance(values["messages"], list) or not values["messages"]:
            return ThreadImport(thread=thread, skipped="no messages")
        messages = convert_to_messages(values["messages"])
    except (sqlite3.Error, ValueError, TypeError, NotImplementedError, KeyError) as err:
        return ThreadImport(thread=thread, skipped=f"unreadable checkpoint: {err}")
    session_id = _existing_session(to, thread) or imported.get(thread)
    new = _after_known(messages, _known_ids(to, thread, session_id))
    if not new:
        return ThreadImport(thread=thread, session=session_id, skipped=NOTHING_NEW)
    try:
        times = _first_seen(saver, config)
    except (sqlite3.Error, ValueError, TypeError, NotImplementedError, KeyError) as err:
        return ThreadImport(thread=thread, skipped=f"unreadable checkpoint: {err}")
    started = min(times.values(), default=None)
    drafts = kept(_timed(drafts_for(new), new, times, started))
    # The live state first: it is keyed by message id, so writing it again after a crash
    # adds nothing, while the moments below are what tells the next import what is known.
    carried = {k: values[k] for k in CARRIED if values.get(k) is not None}
    _append_live(to.langgraph.checkpointer, thread, new, carried)
    with write_lock(to.langgraph.store):
        with to.recording.backend.atomic():
            if session_id is None:
                session_id = to.recording.sessions.start(
                    f"Imported thread {thread}", started=started
                ).id
            if thread not in imported:
                to.recording.sessions.link(session_id, f"thread:{thread}", IMPORTED_FROM, str(file))
            to.recording.record_many(session_id, drafts)
        to.langgraph.store.put(
            THREADS_NAMESPACE,
            thread,
            {"session_id": session_id, "imported_through": new[-1].id},
            index=False,
        )
    return ThreadImport(thread=thread, session=session_id, messages=len(drafts))


def _known_ids(to: ImportTarget, thread: str, session_id: str | None) -> set[str]:
    """The message ids the notebook holds of ``thread``: its session's moments' source ids
    and the last message an import took (which may have made no moment)."""
    if session_id is None:
        return set()
    known = {m.source_id for m in to.recording.backend.list_moments(session_id) if m.source_id}
    item = to.langgraph.store.get(THREADS_NAMESPACE, thread)
    if item is not None and item.value.get("imported_through"):
        known.add(str(item.value["imported_through"]))
    return known


def _after_known(messages: Sequence[BaseMessage], known: set[str]) -> list[BaseMessage]:
    """The messages after the last one whose id is in ``known`` (all when none is)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].id in known:
            return list(messages[index + 1 :])
    return list(messages)


def _append_live(
    saver: BaseCheckpointSaver[Any],
    thread: str,
    messages: list[BaseMessage],
    carried: Mapping[str, Any],
) -> None:
    """Append to ``thread``'s state in ``saver`` the ``messages`` it lacks (by id), marked
    recorded, with the ``carried`` channels, in one checkpoint that keeps the thread's other
    channels as they are."""
    config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    latest = saver.get_tuple(config)
    checkpoint = copy_checkpoint(latest.checkpoint) if latest else empty_checkpoint()
    values = checkpoint["channel_values"]
    current: list[Any] = list(values.get("messages") or [])
    have = {m.id for m in current}
    fresh: list[Any] = [m for m in messages if m.id not in have]
    update = {k: v for k, v in carried.items() if values.get(k) != v}
    if fresh:
        update |= {"messages": add_messages(current, fresh), "recorded_through": messages[-1].id}
    if not update:
        return
    values.update(update)
    versions = checkpoint["channel_versions"]
    changed = {}
    for channel in update:
        versions[channel] = changed[channel] = saver.get_next_version(versions.get(channel), None)
    step = int(latest.metadata.get("step", -1)) + 1 if latest else -1
    checkpoint["id"] = str(uuid6(clock_seq=step))
    checkpoint["ts"] = datetime.now(UTC).isoformat()
    checkpoint["updated_channels"] = sorted(changed)
    parent = latest.config if latest else config
    saver.put(parent, checkpoint, {"source": "update", "step": step, "parents": {}}, changed)


@contextmanager
def _open_readonly(file: Path) -> Iterator[sqlite3.Connection]:
    if not file.is_file():
        problem = "is a directory" if file.is_dir() else "no such file"
        raise MalformedFile(file, f"{problem}; give a LangGraph SqliteSaver database file")
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as err:
        raise MalformedFile(file, f"cannot open it read-only: {err}") from None
    with closing(conn):
        try:
            names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        except sqlite3.DatabaseError as err:
            raise MalformedFile(file, f"not a SQLite database ({err})") from None
        if not _TABLES.issubset(names):
            raise MalformedFile(
                file,
                "not a LangGraph checkpoint database (no 'checkpoints' and 'writes' tables); "
                "give the file of a SqliteSaver, such as data/sqlite-db/checkpoints.sqlite",
            )
        yield conn


def _thread_ids(conn: sqlite3.Connection, file: Path) -> list[str]:
    try:
        rows = conn.execute(  # checkpoint ids grow with time: the oldest thread first
            "SELECT thread_id FROM checkpoints WHERE checkpoint_ns = '' "
            "GROUP BY thread_id ORDER BY MIN(checkpoint_id)"
        ).fetchall()
    except sqlite3.Error as err:
        raise MalformedFile(file, f"cannot read its checkpoints: {err}") from None
    return [str(row[0]) for row in rows]


def _existing_session(to: ImportTarget, thread: str) -> str | None:
    """The session ``thread`` already has (as :meth:`Notebook.thread_session` would find
    it), without starting one."""
    if SESSION_ID_RE.fullmatch(thread) and to.recording.backend.get_session(thread) is not None:
        return thread
    item = to.langgraph.store.get(THREADS_NAMESPACE, thread)
    return None if item is None else str(item.value["session_id"])


def _imported_sessions(to: ImportTarget) -> dict[str, str]:
    """Thread id → session of the sessions an earlier import recorded (found by their link),
    so an import cut short between recording a thread and remembering it is not repeated."""
    found: dict[str, str] = {}
    for session in to.recording.sessions.list():
        for link in session.links:
            if link.relation == IMPORTED_FROM and link.target.startswith("thread:"):
                found.setdefault(link.target.removeprefix("thread:"), session.id)
    return found


def _first_seen(saver: SqliteSaver, config: RunnableConfig) -> dict[str, datetime]:
    """Message id → the time of the earliest checkpoint holding it; '' → the first checkpoint."""
    times: dict[str, datetime] = {}
    for snapshot in saver.list(config):  # newest first: older times overwrite newer ones
        when = datetime.fromisoformat(snapshot.checkpoint["ts"]).astimezone(UTC)
        times[""] = when
        for message in snapshot.checkpoint["channel_values"].get("messages") or []:
            if isinstance(message, BaseMessage) and message.id:
                times[message.id] = when
    return times


def _timed(
    drafts: Sequence[MomentDraft],
    messages: Sequence[BaseMessage],
    times: dict[str, datetime],
    started: datetime | None,
) -> list[MomentDraft]:
    """The drafts with their messages' times (a message of unknown time: its predecessor's)."""
    timed, last = [], started
    for draft, message in zip(drafts, messages, strict=True):
        when = times.get(message.id or "")
        last = max(last, when) if last is not None and when is not None else (when or last)
        timed.append(draft if last is None else draft.model_copy(update={"timestamp": last}))
    return timed
