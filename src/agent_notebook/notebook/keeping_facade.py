"""The notebook's copies and its archive, part of :class:`~.facade.Notebook`: export,
import and migrate (:mod:`.transfer`), compaction and the cold archive (:mod:`.archive`).
A mixin so the facade's own module stays short; each method hands the call to its part,
where the checks are."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..model import Moment

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from ..compaction import ColdArchive, CompactionReport
    from ..compaction.runner import Progress as CompactProgress
    from ..compaction.summarize import Summarizer
    from ..storage import StorageBackend
    from .archive import Archive
    from .exchange import CopyReport
    from .facade import Notebook
    from .migration import MigrationReport
    from .transfer import Progress, Transfer


class KeepingFacade:
    """Mixed into :class:`~.facade.Notebook`, which sets the two parts and the backend."""

    _transfer: Transfer
    _archive: Archive
    backend: StorageBackend

    # -- export, import, migrate (:mod:`.transfer`) -------------------------------------------

    def export_to(
        self,
        target: StorageBackend,
        progress: Progress | None = None,
        *,
        media_to: Path | None = None,
    ) -> CopyReport:
        """Copy this notebook, its chat state too, into ``target``; with ``media_to``, the
        media and archive files into its ``media/`` and ``archive/`` (see
        :meth:`.transfer.Transfer.export_to`)."""
        return self._transfer.export_to(target, progress, media_to)

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
        return self._transfer.export_file(destination, kind, progress, with_media)

    def import_from(
        self,
        source: StorageBackend,
        progress: Progress | None = None,
        *,
        media_from: Path | None = None,
    ) -> CopyReport:
        """Copy ``source`` into this notebook, all of it or nothing, with its chat state;
        with ``media_from``, its ``media/`` and ``archive/`` files too (see
        :meth:`.transfer.Transfer.import_from`)."""
        return self._transfer.import_from(source, progress, media_from)

    def migrate_to(self, target: Notebook, progress: Progress | None = None) -> MigrationReport:
        """Copy the whole of this notebook (records, vectors, the cold archive and its
        files, the chat state, media files) into the empty ``target`` notebook, then count
        both (see :func:`.migration.migrate`); this one is only read."""
        return self._transfer.migrate_to(target, progress)

    # -- compaction and the cold archive (:mod:`.archive`) ------------------------------------

    @property
    def archive_dir(self) -> Path | None:
        """``<home>/archive``, the cold archive (None for a notebook without a home)."""
        return self._archive.root

    def cold_archive(self, archive_dir: Path | None = None) -> ColdArchive:
        """The cold archive (``archive_dir``, by default :attr:`archive_dir`), sealed as the
        notebook's records are; :class:`InvalidInput` for a notebook without a home."""
        return self._archive.cold_archive(archive_dir)

    def compact(
        self,
        *,
        now: datetime | None = None,
        dry_run: bool = False,
        summarizer: Summarizer | None = None,
        model: BaseChatModel | None = None,
        archive_dir: Path | None = None,
        progress: CompactProgress | None = None,
    ) -> CompactionReport:
        """Apply the age policy (``compaction:`` settings) as of ``now``: faded moments into
        rollups, what monthly rollups replace into the cold archive; ``dry_run`` on a copy
        (see :meth:`.archive.Archive.compact`)."""
        return self._archive.compact(now, dry_run, summarizer, model, archive_dir, progress)

    def archived_record(self, moment_id: str, archive_dir: Path | None = None) -> bytes:
        """The archived moment's record, byte for byte as it was when archived (the JSON
        of :meth:`Moment.model_dump_json`), checked against its SHA-256."""
        return self._archive.record(moment_id, archive_dir)

    def archived_moment(self, moment_id: str, archive_dir: Path | None = None) -> Moment:
        """An archived moment, read back from the cold archive by its id."""
        return self._archive.moment(moment_id, archive_dir)

    def archived_count(self) -> int:
        return self.backend.count_archived()
