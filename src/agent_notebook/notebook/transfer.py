"""Moving a whole notebook: export into another backend or to a file, import from one,
and migrating into another notebook (see :mod:`.exchange` for what is copied and how ids
are kept), each with the media files, the cold archive and the chat state alongside."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..compaction import ARCHIVE_DIR, ColdArchive
from ..storage import StorageBackend

if TYPE_CHECKING:
    from ..langgraph.stores import Closeable
    from ..media.store import MediaStore
    from .exchange import CopyReport
    from .facade import Notebook
    from .migration import MigrationReport

Progress = Callable[[int], None]


class Transfer:
    """Export, import and migration of one notebook (see :meth:`Notebook.export_to`)."""

    def __init__(self, notebook: Notebook) -> None:
        self.nb = notebook

    def export_to(
        self, target: StorageBackend, progress: Progress | None, media_to: Path | None
    ) -> CopyReport:
        """Copy this notebook into ``target`` (for example a :class:`YamlDirBackend`): the
        records, vectors, archive entries, and the chat state (store items: session
        notebooks, the thread map; checkpoints) into ``target``'s own store and checkpoint
        files. With ``media_to``, the media files go to ``media_to/media/`` (each checked
        against its SHA-256 first) and the cold archive's files to ``media_to/archive/``."""
        from ..langgraph.stores import open_checkpointer, open_store, store_items
        from .exchange import Archives, ChatState, copy_notebook

        nb = self.nb
        nb.settle()  # the exported sessions count every moment
        archives = None
        if media_to is not None:
            from ..media.store import MediaStore

            _copy_media(nb.backend, nb.media_store(), MediaStore(media_to))
            if nb.archive_dir is not None and nb.backend.count_archived():
                archives = Archives(nb.cold_archive(), ColdArchive(media_to / ARCHIVE_DIR))
        mine = ChatState(nb.store, nb.checkpointer)
        conns: list[Closeable] = []
        try:
            theirs = ChatState()
            if next(store_items(nb.store), None) is not None:
                store, conn = open_store(target)
                theirs = ChatState(store=store)
                conns += [conn] if conn is not None else []
            if next(iter(nb.checkpointer.list(None)), None) is not None:
                saver, conn = open_checkpointer(target, keep=nb.config.chat.keep_checkpoints)
                theirs = ChatState(theirs.store, saver)
                conns += [conn] if conn is not None else []
            return copy_notebook(
                nb.backend, target, progress, archives=archives, chat=(mine, theirs)
            )
        finally:
            for conn in conns:
                conn.close()

    def export_file(
        self,
        destination: Path,
        kind: Literal["yaml", "sqlite"],
        progress: Progress | None,
        with_media: bool,
    ) -> CopyReport:
        from .exchange import export_target, media_home

        with export_target(destination, kind) as target:
            media = media_home(destination) if with_media else None
            return self.export_to(target, progress, media)

    def import_from(
        self, source: StorageBackend, progress: Progress | None, media_from: Path | None
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

        nb = self.nb
        copied: list[str] = []
        archives = None
        if media_from is not None:
            from ..media.store import MediaStore

            copied = _copy_media(source, MediaStore(media_from), nb.media_store())
            if nb.archive_dir is not None and source.count_archived():
                archives = Archives(ColdArchive(media_from / ARCHIVE_DIR), nb.cold_archive())
        store, saver, conns = open_existing(source, source.cipher)
        try:
            theirs = ChatState(store, saver)
            mine = ChatState(
                nb.store if store is not None else None,
                nb.checkpointer if saver is not None else None,
            )
            report = copy_notebook(
                source, nb.backend, progress, archives=archives, chat=(theirs, mine)
            )
        except BaseException:
            if copied:
                nb._recording.remove_unused_media(copied)
            raise
        finally:
            for conn in conns:
                conn.close()
        nb._vectors.notify_new()
        return report

    def migrate_to(self, target: Notebook, progress: Progress | None) -> MigrationReport:
        from .exchange import Archives, ChatState
        from .migration import migrate

        source = self.nb
        archives = None
        if source.archived_count():
            archives = Archives(source.cold_archive(), target.cold_archive())
        chat = (
            ChatState(source.store, source.checkpointer),
            ChatState(target.store, target.checkpointer),
        )
        return migrate(
            source.backend,
            target.backend,
            chat,
            archives=archives,
            media=(source.media_store(), target.media_store()),
            progress=progress,
        )


def _copy_media(moments_of: StorageBackend, source: MediaStore, target: MediaStore) -> list[str]:
    """Copy the media files the moments of ``moments_of`` refer to from ``source`` to
    ``target`` (each checked against its SHA-256); returns the files new to ``target``."""
    from ..media.store import media_paths_of

    wanted = media_paths_of(moments_of.iter_moments())
    return target.copy_from(source, sorted(wanted)) if wanted else []
