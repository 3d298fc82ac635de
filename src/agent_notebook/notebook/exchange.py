"""Lossless export and import between any two notebooks, and merging two notebooks.

What is copied: sessions, moments, counters, text vectors (of every model), the cold
archive (its entries, and with :class:`Archives` its files), and with :class:`ChatState`
the chat state: the LangGraph store's items (session notebooks, the thread → session map,
an app's own items) and the threads' checkpoints.

Ids. A record the target lacks keeps its id. A session whose id the target gives another
session gets the next free id of its day. If any imported moment's number is taken in the
target (active or archived), every imported moment is renumbered, in order, after the
target's last one. References follow the new ids: parents, children, links, rollup lineage,
archive entries and files, recent moments, session links, the thread map, session notebooks
and checkpoints. A thread whose id the target uses for another session is imported as
``<id>~2`` (``~3``…). The report lists every id it changed. A session imported with changed
ids carries a link ``renumbered-from`` to its old id (the note holds the digest of its source
record), so importing the same source again finds it and skips it.

All or nothing: the records are written in one transaction on the target; archive files
written for it are removed if it fails. Store items and checkpoints follow (each is skipped
when already there, so a rerun finishes an interrupted import). A record that exists in the
target with identical content is skipped, so importing the same export twice changes
nothing. A store item the target holds with other content keeps the target's value (the
report names it). Migrating into an empty backend, then counting both: :mod:`.migration`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..compaction.archive import ColdArchive
from ..core.files import refuse_links
from ..errors import Conflict
from ..model import (
    SESSION_ID_RE,
    THREADS_NAMESPACE,
    ArchiveEntry,
    Link,
    Moment,
    Session,
    session_day,
    session_id_for,
    split_link,
)
from ..storage import SqliteBackend, StorageBackend, YamlDirBackend

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import BaseStore


BATCH = 500
#: The relation of the link a session imported with changed ids carries to its old id.
RENUMBERED_FROM = "renumbered-from"
#: Where session notebooks live: ``("session", thread id, …)`` (see :mod:`agent_notebook.session`).
SESSION_NAMESPACE = "session"


@dataclass(frozen=True, slots=True)
class Archives:
    """The cold archives of the source and of the target (their ``archive/`` directories)."""

    source: ColdArchive
    target: ColdArchive
    #: Whether a symbolic link among the source's files may be followed (not on import).
    links: bool = True


@dataclass(frozen=True, slots=True)
class ChatState:
    """A notebook's LangGraph store and checkpointer (either may be absent)."""

    store: BaseStore | None = None
    checkpointer: BaseCheckpointSaver[Any] | None = None


@dataclass(frozen=True, slots=True)
class CopyReport:
    sessions: int
    moments: int
    skipped: int
    source: str
    target: str
    #: Old id -> new id of every session, moment and thread given another id.
    renumbered: dict[str, str] = field(default_factory=dict)
    vectors: int = 0
    archived: int = 0
    store_items: int = 0
    checkpoints: int = 0
    #: Store items (namespace/key) the target already held with other content: kept.
    kept: list[str] = field(default_factory=list)
    #: Archive files written to the target (for cleaning up after a failure).
    archive_files: list[str] = field(default_factory=list)


def media_home(location: Path) -> Path:
    """Where the notebook at ``location`` keeps its ``media/`` and ``archive/``: in the
    directory itself (a home, a YAML notebook) or beside the file (a SQLite ``.db``)."""
    return location if location.is_dir() else location.parent


@contextmanager
def export_target(destination: Path, kind: Literal["yaml", "sqlite"]) -> Iterator[StorageBackend]:
    """The backend an export writes to, closed after. The lock files its writers took
    (``.lock``, ``*.db.lock``) are removed: an export holds the notebook, not the traces of
    writing it. A lock file that was there before stays."""
    before = set(_lock_files(destination))
    target: StorageBackend = (
        YamlDirBackend(destination) if kind == "yaml" else SqliteBackend(destination)
    )
    try:
        yield target
    finally:
        target.close()
        for lock in set(_lock_files(destination)) - before:
            lock.unlink(missing_ok=True)


def _lock_files(destination: Path) -> list[Path]:
    folder = destination if destination.is_dir() else destination.parent
    if not folder.is_dir():
        return []
    return [p for p in folder.iterdir() if p.name.endswith(".lock") and p.is_file()]


def copy_notebook(
    source: StorageBackend,
    target: StorageBackend,
    progress: Callable[[int], None] | None = None,
    *,
    archives: Archives | None = None,
    chat: tuple[ChatState, ChatState] | None = None,
    check: Callable[[Moment], None] | None = None,
) -> CopyReport:
    """Copy everything of ``source`` into ``target`` (see the module docstring);
    ``chat`` is the (source, target) chat state to carry along; ``check`` is run on every
    moment to copy, active or archived, before anything is written (an import checks them
    against the target's limits: it raises to refuse the whole copy)."""
    copier = _Copier(source, target, archives, chat, check)
    try:
        with target.atomic():
            copier.plan()
            copier.write_archive()
            copier.write_records(progress)
    except BaseException:
        copier.remove_written_archive_files()
        raise
    copier.copy_chat_state()
    if progress is not None:
        progress(copier.moments)
    return copier.report()


class _Copier:
    def __init__(
        self,
        source: StorageBackend,
        target: StorageBackend,
        archives: Archives | None,
        chat: tuple[ChatState, ChatState] | None,
        check: Callable[[Moment], None] | None = None,
    ) -> None:
        self.source, self.target, self.archives = source, target, archives
        self.check = check
        self.chat = chat or (ChatState(), ChatState())
        self.ids: dict[str, str] = {}  # every id that changes: sessions, moments, "thread:…"
        self.threads: dict[str, str] = {}  # source thread -> target thread
        self.new_sessions: list[Session] = []
        self.present: set[str] = set()  # source sessions found already imported (renamed)
        self.new_moments: list[int] = []  # numbers of the source moments to import
        self.new_archived: list[ArchiveEntry] = []
        self.sessions = self.moments = self.skipped = self.vectors = 0
        self.store_count = self.checkpoint_count = 0
        self.kept: list[str] = []
        self.written: list[str] = []

    # -- planning -----------------------------------------------------------------------------

    def plan(self) -> None:
        for counter, value in self.source.counters().items():  # before allocating new ids
            self.target.raise_counter(counter, value)
        self._plan_sessions()
        self._plan_moments()
        self._plan_threads()

    def _plan_sessions(self) -> None:
        earlier = {
            (link.target, link.note): session.id
            for session in self.target.list_sessions()
            for link in session.links
            if link.relation == RENUMBERED_FROM
        }
        for session in self.source.list_sessions():
            previous = earlier.get((session.id, _digest(session)))
            existing = self.target.get_session(session.id)
            if previous is not None:  # imported before with other ids: all of it is there
                self.present.add(session.id)
                if previous != session.id:
                    self.ids[session.id] = previous
                self.skipped += 1
            elif existing == session:
                self.skipped += 1
            else:
                if existing is not None:
                    self.ids[session.id] = self._free_session_id(session.id)
                self.new_sessions.append(session)

    def _free_session_id(self, taken: str) -> str:
        day = session_day(taken)
        while True:
            candidate = session_id_for(day, self.target.next_number(f"session:{day.isoformat()}"))
            if self.target.get_session(candidate) is None and (
                self.source.get_session(candidate) is None
            ):
                return candidate

    def _plan_moments(self) -> None:
        clash = False
        for page in _pages(self.source):
            by_id = {m.id: m for m in self.target.get_moments([m.id for m in page])}
            for moment in page:
                if moment.session in self.present or by_id.get(moment.id) == moment:
                    self.skipped += 1
                    continue
                if self.check is not None:
                    self.check(moment)
                clash = clash or moment.id in by_id
                self.new_moments.append(moment.number)
        for entry in self.source.list_archived():
            found = self.target.get_archived([entry.id])
            if entry.session in self.present or (found and found[0] == entry):
                self.skipped += 1
                continue
            self.new_archived.append(entry)
        new_ids = [f"m_{n}" for n in self.new_moments] + [e.id for e in self.new_archived]
        clash = clash or any(
            self.target.get_moment(mid) is not None for mid in new_ids[len(self.new_moments) :]
        )
        clash = clash or bool(self.target.get_archived(new_ids))
        if clash and new_ids:
            first = self.target.next_number("moment", len(new_ids))
            numbers = sorted(int(mid[2:]) for mid in new_ids)
            self.ids.update({f"m_{n}": f"m_{first + i}" for i, n in enumerate(numbers)})

    def _plan_threads(self) -> None:
        from ..langgraph.stores import thread_ids  # LangGraph loads only when chat state is copied

        source_chat, target_chat = self.chat
        if source_chat.store is None and source_chat.checkpointer is None:
            return
        source_map = _thread_map(source_chat.store)
        target_map = _thread_map(target_chat.store)
        target_threads = set(target_map) | thread_ids(target_chat.store, target_chat.checkpointer)
        threads = set(source_map) | thread_ids(source_chat.store, source_chat.checkpointer)
        imported = {self.ids.get(s.id, s.id) for s in self.new_sessions}
        for thread in sorted(threads):
            own = source_map.get(thread)
            if own is None and SESSION_ID_RE.fullmatch(thread) and self.source.get_session(thread):
                own = thread
            wanted = None if own is None else self.ids.get(own, own)
            name = self.ids.get(thread, thread)  # a thread named by its session follows it
            taken = name in target_threads or (
                SESSION_ID_RE.fullmatch(name) is not None
                and name not in imported
                and self.target.get_session(name) is not None
            )
            if taken and not self._same_thread(thread, name, wanted, target_map):
                name = _free_name(name, target_threads | threads)
            if name != thread:
                self.ids[thread] = name
                self.ids[f"thread:{thread}"] = f"thread:{name}"
            self.threads[thread] = name

    def _same_thread(
        self, thread: str, name: str, wanted: str | None, target_map: Mapping[str, str]
    ) -> bool:
        """Whether the target's thread ``name`` is the source's ``thread`` (an earlier
        import of it): both go on in the same session, or (without a session) the target
        holds the source's latest checkpoint, or (with no checkpoint either: a session
        notebook written by hand) the same session notebook."""
        if wanted is not None:
            return target_map.get(name, name) == wanted
        source_saver, target_saver = self.chat[0].checkpointer, self.chat[1].checkpointer
        latest = None
        if source_saver is not None:
            latest = source_saver.get_tuple({"configurable": {"thread_id": thread}})
        if latest is None:
            return self._same_session_notebook(thread, name)
        if target_saver is None:
            return False
        there = {"thread_id": name, "checkpoint_ns": "", "checkpoint_id": latest.checkpoint["id"]}
        return target_saver.get_tuple({"configurable": there}) is not None

    def _same_session_notebook(self, thread: str, name: str) -> bool:
        """Whether the target's thread ``name`` holds every item of the source's session
        notebook of ``thread``, with the same values (and holds at least one)."""
        from ..langgraph.stores import store_items

        source_store, target_store = self.chat[0].store, self.chat[1].store
        if source_store is None or target_store is None:
            return False
        items = list(store_items(source_store, (SESSION_NAMESPACE, thread)))
        for item in items:
            there = target_store.get((SESSION_NAMESPACE, name, *item.namespace[2:]), item.key)
            if there is None or there.value != item.value:
                return False
        return bool(items)

    # -- writing ------------------------------------------------------------------------------

    def write_archive(self) -> None:
        """Write the archive files the imported entries point to (renamed where their
        records change), and point the entries at them."""
        if self.archives is None:
            self.new_archived = [self._renamed_entry(e) for e in self.new_archived]
            return
        by_file: dict[str, list[ArchiveEntry]] = {}
        for entry in self.new_archived:
            by_file.setdefault(entry.file, []).append(entry)
        placed: list[ArchiveEntry] = []
        for name, entries in sorted(by_file.items()):
            if not self.archives.links:
                refuse_links(self.archives.source.root, name, "archive file")
            records = self.archives.source.records_of(name)
            lines: list[bytes] = []
            renamed: list[Moment] = []
            for entry in entries:
                moment = Moment.model_validate_json(records[entry.id])
                if self.check is not None:
                    self.check(moment)
                renamed.append(new := rename_moment(moment, self.ids))
                lines.append(records[entry.id] if new == moment else new.model_dump_json().encode())
            if all(line == records[e.id] for line, e in zip(lines, entries, strict=True)):
                lines, new_name = list(records.values()), name  # the file as it is
            else:
                digest = hashlib.sha256(b"\n".join(lines)).hexdigest()[:12]
                rollup = self.ids.get(entries[0].rollup, entries[0].rollup)
                new_name = f"{Path(name).parent}/{rollup}-{digest}.jsonl.gz"
            self._write_archive_file(new_name, lines)
            shas = {
                m.id: hashlib.sha256(line).hexdigest()
                for m, line in zip(renamed, lines, strict=False)
            }
            for entry, moment in zip(entries, renamed, strict=True):
                placed.append(
                    self._renamed_entry(entry).model_copy(
                        update={"file": new_name, "sha256": shas.get(moment.id, entry.sha256)}
                    )
                )
        self.new_archived = placed

    def _write_archive_file(self, name: str, lines: list[bytes]) -> None:
        assert self.archives is not None
        target = self.archives.target
        if (target.root / name).exists():
            if list(target.records_of(name).values()) != lines:
                raise Conflict(
                    f"archive file {name} exists in {target.root} with other content; "
                    "import into another notebook"
                )
            return
        (target.root / name).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        target.rewrite(name, lines)
        self.written.append(name)

    def remove_written_archive_files(self) -> None:
        if self.archives is not None:
            for name in self.written:
                (self.archives.target.root / name).unlink(missing_ok=True)

    def _renamed_entry(self, entry: ArchiveEntry) -> ArchiveEntry:
        return entry.model_copy(
            update={
                "id": self.ids.get(entry.id, entry.id),
                "session": self.ids.get(entry.session, entry.session),
                "rollup": self.ids.get(entry.rollup, entry.rollup),
            }
        )

    def write_records(self, progress: Callable[[int], None] | None) -> None:
        for session in self.new_sessions:
            renamed = rename_session(session, self.ids)
            if renamed != session:  # so a second import of the same source finds it
                link = Link(target=session.id, relation=RENUMBERED_FROM, note=_digest(session))
                renamed.links = [*renamed.links, link]
            self.target.put_session(renamed)
            self.sessions += 1
        numbers = self.new_moments
        for start in range(0, len(numbers), BATCH):
            chunk = self.source.get_moments([f"m_{n}" for n in numbers[start : start + BATCH]])
            self.target.put_moments([rename_moment(m, self.ids) for m in chunk])
            self.moments += len(chunk)
            self._copy_vectors(chunk)
            if progress is not None:
                progress(self.moments)
        if self.new_archived:
            self.target.archive_moments(self.new_archived)

    def _copy_vectors(self, moments: list[Moment]) -> None:
        nums = [m.number for m in moments]
        texts = {m.number: m.content.text for m in moments}
        for model in self.source.vector_models():
            page = self.source.get_vectors(model, nums[0] - 1, limit=nums[-1] - nums[0] + 1)
            found = [(n, v) for n, v in page if n in texts]
            items = [(int(self.ids.get(f"m_{n}", f"m_{n}")[2:]), texts[n], v) for n, v in found]
            self.target.put_vectors(model, items)
            self.vectors += len(items)

    def copy_chat_state(self) -> None:
        from ..langgraph.stores import (  # LangGraph loads only when chat state is copied
            copy_checkpoints,
            copy_store_items,
        )

        source_chat, target_chat = self.chat
        if source_chat.store is not None and target_chat.store is not None:
            self.store_count, self.kept = copy_store_items(
                source_chat.store, target_chat.store, self._renamed_item
            )
        if source_chat.checkpointer is not None and target_chat.checkpointer is not None:
            self.checkpoint_count = copy_checkpoints(
                source_chat.checkpointer, target_chat.checkpointer, self.threads, self._session
            )

    def _session(self, session_id: str) -> str:
        return self.ids.get(session_id, session_id)

    def _renamed_item(
        self, namespace: tuple[str, ...], key: str, value: dict[str, Any]
    ) -> tuple[tuple[str, ...], str, dict[str, Any]]:
        """An item of the source's store as the target holds it: the thread map's keys and
        the session notebooks' namespaces follow the threads, their session ids the
        sessions."""
        if namespace == THREADS_NAMESPACE:
            key = self.threads.get(key, key)
        elif namespace[:1] == (SESSION_NAMESPACE,) and len(namespace) >= 2:
            thread, rest = namespace[1], namespace[2:]
            namespace = (SESSION_NAMESPACE, self.threads.get(thread, thread), *rest)
        if isinstance(value.get("session_id"), str):
            value = {**value, "session_id": self._session(value["session_id"])}
        return namespace, key, value

    def report(self) -> CopyReport:
        return CopyReport(
            sessions=self.sessions,
            moments=self.moments,
            skipped=self.skipped,
            source=self.source.location,
            target=self.target.location,
            renumbered={k: v for k, v in self.ids.items() if not k.startswith("thread:")},
            vectors=self.vectors,
            archived=len(self.new_archived),
            store_items=self.store_count,
            checkpoints=self.checkpoint_count,
            kept=self.kept,
            archive_files=self.written,
        )


# -- renaming -----------------------------------------------------------------------------------


def _renamed_link(link: str, ids: Mapping[str, str]) -> str:
    """A link with its moment renamed: a moment id, or a fact link ``superseded_by:m_12``."""
    relation, target = split_link(link)
    return f"{relation}:{ids.get(target, target)}" if relation else ids.get(link, link)


def rename_moment(moment: Moment, ids: Mapping[str, str]) -> Moment:
    """``moment`` with every id it holds (its own, its session's, its relations', its
    rollup's lineage) mapped through ``ids``."""
    if not ids:
        return moment
    rel = moment.relations
    update: dict[str, Any] = {
        "id": ids.get(moment.id, moment.id),
        "session": ids.get(moment.session, moment.session),
        "relations": rel.model_copy(
            update={
                "parent": None if rel.parent is None else ids.get(rel.parent, rel.parent),
                "children": [ids.get(c, c) for c in rel.children],
                "links": [_renamed_link(link, ids) for link in rel.links],
            }
        ),
    }
    if moment.rollup is not None:
        update["rollup"] = moment.rollup.model_copy(
            update={
                "sources": [ids.get(s, s) for s in moment.rollup.sources],
                "originals": [ids.get(s, s) for s in moment.rollup.originals],
            }
        )
    return moment.model_copy(update=update, deep=True)


def rename_session(session: Session, ids: Mapping[str, str]) -> Session:
    """``session`` with its id, recent moments, link targets and the moments of its
    decisions and pending items mapped through ``ids``."""
    if not ids:
        return session.model_copy(deep=True)
    context = session.context.model_copy(
        update={"recent_moments": [ids.get(m, m) for m in session.context.recent_moments]}
    )
    links = [
        link.model_copy(update={"target": ids.get(link.target, link.target)})
        for link in session.links
    ]
    # The moments the decisions and pending items were read from, that replaced a decision
    # and that closed an item.
    decisions = [
        d.model_copy(
            update={
                "source": d.source and ids.get(d.source, d.source),
                "replaced_by": d.replaced_by and ids.get(d.replaced_by, d.replaced_by),
            }
        )
        for d in session.decisions
    ]
    pending = [
        p.model_copy(
            update={
                "source": p.source and ids.get(p.source, p.source),
                "closed_by": p.closed_by and ids.get(p.closed_by, p.closed_by),
            }
        )
        for p in session.pending
    ]
    return session.model_copy(
        update={
            "id": ids.get(session.id, session.id),
            "context": context,
            "links": links,
            "decisions": decisions,
            "pending": pending,
        },
        deep=True,
    )


def _digest(session: Session) -> str:
    return "sha256:" + hashlib.sha256(session.model_dump_json().encode()).hexdigest()[:24]


def _pages(backend: StorageBackend) -> Iterator[list[Moment]]:
    offset = 0
    while page := backend.list_moments(offset=offset, limit=BATCH):
        yield page
        offset += len(page)


def _thread_map(store: BaseStore | None) -> dict[str, str]:
    from ..langgraph.stores import store_items  # LangGraph loads only when chat state is copied

    if store is None:
        return {}
    return {
        item.key: str(item.value["session_id"])
        for item in store_items(store, THREADS_NAMESPACE)
        if isinstance(item.value.get("session_id"), str)
    }


def _free_name(name: str, taken: set[str]) -> str:
    n = 2
    while f"{name}~{n}" in taken:
        n += 1
    return f"{name}~{n}"
