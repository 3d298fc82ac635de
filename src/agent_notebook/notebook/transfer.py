"""Moving a whole notebook: export into another backend or to a file, import from one,
and migrating into another notebook (see :mod:`.exchange` for what is copied and how ids
are kept), each with the media files, the cold archive and the chat state alongside."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from ..compaction import ARCHIVE_DIR, ColdArchive
from ..storage import StorageBackend

if TYPE_CHECKING:
    from ..config import MomentLimits
    from ..langgraph.stores import Closeable
    from ..media.store import MediaStore
    from ..model import Moment
    from .archive import Archive
    from .checkpoints import ImportProgress, ThreadImport
    from .context import NotebookContext
    from .exchange import CopyReport
    from .langgraph_state import LangGraphState
    from .migration import MigrationReport
    from .recording import Recording

Progress = Callable[[int], None]


class Migratable(Protocol):
    """What :meth:`Transfer.migrate_to` takes: a notebook, or its ``transfer`` part."""

    @property
    def transfer(self) -> Transfer: ...


class Transfer:
    """Export, import and migration of one notebook, ``nb.transfer``:
    ``nb.transfer.export_file(path)``, ``nb.transfer.import_from(backend)``…"""

    def __init__(
        self,
        context: NotebookContext,
        recording: Recording,
        archive: Archive,
        langgraph: LangGraphState,
    ) -> None:
        self.context = context
        self.recording = recording
        self.archive = archive
        self.langgraph = langgraph

    @property
    def transfer(self) -> Transfer:
        return self

    def export_to(
        self,
        target: StorageBackend,
        progress: Progress | None = None,
        *,
        media_to: Path | None = None,
    ) -> CopyReport:
        """Copy this notebook into ``target`` (for example a :class:`YamlDirBackend`): the
        records, vectors, archive entries, and the chat state (store items: session
        notebooks, the thread map; checkpoints) into ``target``'s own store and checkpoint
        files. With ``media_to``, the media files go to ``media_to/media/`` (each checked
        against its SHA-256 first) and the cold archive's files to ``media_to/archive/``."""
        from ..langgraph.stores import open_checkpointer, open_store, store_items
        from .exchange import Archives, ChatState, copy_notebook

        context, backend, chat = self.context, self.context.backend, self.langgraph
        backend.settle()  # the exported sessions count every moment
        self.recording.sessions.settle()
        archives = None
        if media_to is not None:
            from ..media.store import MediaStore

            _copy_media(backend, context.media_store(), MediaStore(media_to))
            if context.archive_dir is not None and backend.count_archived():
                archives = Archives(
                    self.archive.cold_archive(), ColdArchive(media_to / ARCHIVE_DIR)
                )
        mine = ChatState(chat.store, chat.checkpointer)
        conns: list[Closeable] = []
        try:
            theirs = ChatState()
            if next(store_items(chat.store), None) is not None:
                store, conn = open_store(target)
                theirs = ChatState(store=store)
                conns += [conn] if conn is not None else []
            if next(iter(chat.checkpointer.list(None)), None) is not None:
                saver, conn = open_checkpointer(target, keep=context.config.chat.keep_checkpoints)
                theirs = ChatState(theirs.store, saver)
                conns += [conn] if conn is not None else []
            return copy_notebook(backend, target, progress, archives=archives, chat=(mine, theirs))
        finally:
            for conn in conns:
                conn.close()

    def export_file(
        self,
        destination: Path,
        kind: Literal["yaml", "sqlite"] = "yaml",
        progress: Progress | None = None,
        *,
        with_media: bool = True,
    ) -> CopyReport:
        """Export (as :meth:`export_to`) into a new YAML directory or SQLite file, with its
        media and archive files (beside a ``.db`` file) unless not ``with_media``; the lock
        files the export took are gone after it (:func:`.exchange.export_target`)."""
        from .exchange import export_target, media_home

        with export_target(destination, kind) as target:
            media = media_home(destination) if with_media else None
            return self.export_to(target, progress, media_to=media)

    def import_from(
        self,
        source: StorageBackend,
        progress: Progress | None = None,
        *,
        media_from: Path | None = None,
    ) -> CopyReport:
        """Copy ``source`` into this notebook, all of it or nothing (see :mod:`.exchange`):
        ids the notebook already uses for other records are renumbered (the report lists
        them), the chat state in ``source``'s store and checkpoint files comes along, so a
        chat on an imported thread goes on in its session. Imported moments without a
        vector are embedded like recorded ones. With ``media_from``, the media files they
        refer to are copied from ``media_from/media/`` (checked against their SHA-256) and
        the archive files from ``media_from/archive/``."""
        from ..langgraph.stores import open_existing
        from .exchange import Archives, ChatState, copy_notebook

        context, chat = self.context, self.langgraph
        copied: list[str] = []
        archives = None
        if media_from is not None:
            from ..media.store import MediaStore

            copied = _copy_media(source, MediaStore(media_from), context.media_store(), links=False)
            if context.archive_dir is not None and source.count_archived():
                archives = Archives(
                    ColdArchive(media_from / ARCHIVE_DIR), self.archive.cold_archive(), links=False
                )
        store, saver, conns = open_existing(source, source.cipher)
        try:
            theirs = ChatState(store, saver)
            mine = ChatState(
                chat.store if store is not None else None,
                chat.checkpointer if saver is not None else None,
            )
            report = copy_notebook(
                source,
                context.backend,
                progress,
                archives=archives,
                chat=(theirs, mine),
                check=partial(_check_imported, source, context.config.moments),
            )
        except BaseException:
            if copied:
                self.recording.remove_unused_media(copied)
            raise
        finally:
            for conn in conns:
                conn.close()
        self.recording.vectors.notify_new()
        return report

    def import_checkpoints(
        self, path: Path | str, progress: ImportProgress | None = None
    ) -> list[ThreadImport]:
        """Import every thread of a LangGraph checkpoint database (``SqliteSaver``'s file, as
        Open Notebook keeps) as sessions with their moments (see :mod:`.checkpoints`)."""
        from .checkpoints import ImportTarget, import_checkpoints

        return import_checkpoints(ImportTarget(self.recording, self.langgraph), path, progress)

    def import_file(
        self,
        source: Path,
        progress: Progress | None = None,
        *,
        sized: Callable[[int], None] | None = None,
    ) -> CopyReport:
        """:meth:`import_from` the notebook at ``source`` (a YAML directory or a SQLite
        file), with the ``media/`` and ``archive/`` files in it (beside a ``.db``);
        ``sized`` learns how many moments it holds before the copy starts."""
        from ..storage import open_backend
        from .exchange import media_home

        backend = open_backend(source, read_only=True)  # no lock file left in the source
        try:
            if sized is not None:
                sized(backend.count_moments())
            return self.import_from(backend, progress, media_from=media_home(source))
        finally:
            backend.close()

    def migrate_to(self, target: Migratable, progress: Progress | None = None) -> MigrationReport:
        """Copy the whole of this notebook (records, vectors, the cold archive and its
        files, the chat state, media files) into the empty ``target`` notebook, then count
        both (see :func:`.migration.migrate`); this one is only read."""
        from .exchange import Archives, ChatState
        from .migration import migrate

        theirs = target.transfer
        archives = None
        if self.archive.count():
            archives = Archives(self.archive.cold_archive(), theirs.archive.cold_archive())
        chat = (
            ChatState(self.langgraph.store, self.langgraph.checkpointer),
            ChatState(theirs.langgraph.store, theirs.langgraph.checkpointer),
        )
        return migrate(
            self.context.backend,
            theirs.context.backend,
            chat,
            archives=archives,
            media=(self.context.media_store(), theirs.context.media_store()),
            progress=progress,
        )


def _check_imported(source: StorageBackend, limits: MomentLimits, moment: Moment) -> None:
    """A moment of ``source`` held to this notebook's limits, named by its file when it has
    one (a YAML folder's), else by the source and its id."""
    from .drafts import check_imported

    where = f"{source.location}: moment {moment.id}"
    file = Path(source.location) / "sessions" / moment.session / "moments" / f"{moment.id}.yaml"
    if file.is_file():  # a YAML folder's
        where = str(file)
    check_imported(moment, limits, where)


def _copy_media(
    moments_of: StorageBackend, source: MediaStore, target: MediaStore, *, links: bool = True
) -> list[str]:
    """Copy the media files the moments of ``moments_of`` refer to from ``source`` to
    ``target`` (each checked against its SHA-256); returns the files new to ``target``.
    Without ``links`` (an import), a symbolic link in ``source`` is refused."""
    from ..media.store import media_paths_of

    wanted = media_paths_of(moments_of.iter_moments())
    return target.copy_from(source, sorted(wanted), links=links) if wanted else []
