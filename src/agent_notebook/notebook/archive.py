"""The notebook's compaction and its cold archive: ``compact`` (for real or on a copy), the
archive opened with the notebook's cipher, archived records read back by id, and archived
records dropped with their session."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..compaction import ColdArchive, CompactionReport, Compactor
from ..compaction.pacing import PacedCounter, PacedProgress
from ..compaction.runner import Progress as CompactProgress
from ..core import files
from ..core.files import exclusive_lock as write_lock_file
from ..errors import InvalidInput, NotFound
from ..model import ArchiveEntry, Moment, check_moment_id, now_utc
from ..storage import MemoryBackend, StorageBackend
from .checks import aware
from .keeping import FactsKeeper

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from ..compaction.summarize import Summarizer
    from ..core.tokens import TokenCounter
    from .context import NotebookContext
    from .sessions import Sessions
    from .vectors import Vectors


class Archive:
    """One notebook's compaction and cold archive, ``nb.archive``: ``nb.archive.compact()``,
    ``nb.archive.moment(moment_id)``…"""

    def __init__(self, context: NotebookContext, sessions: Sessions, vectors: Vectors) -> None:
        self.context = context
        self.sessions = sessions
        self.vectors = vectors
        self._opened: ColdArchive | None = None

    @property
    def root(self) -> Path | None:
        """``<home>/archive``, the cold archive (None for a notebook without a home)."""
        return self.context.archive_dir

    def count(self) -> int:
        """How many moments the cold archive holds."""
        return self.context.backend.count_archived()

    def cold_archive(self, archive_dir: Path | None = None) -> ColdArchive:
        """The cold archive (``archive_dir``, by default :attr:`root`), sealed as the
        notebook's records are; :class:`InvalidInput` for a notebook without a home."""
        root = archive_dir or self.root
        if root is None:
            raise InvalidInput(
                "compaction needs an archive directory: open the notebook with a home "
                "(Notebook.open(home)) or pass archive_dir"
            )
        if self._opened is None or self._opened.root != root:
            self._opened = ColdArchive(root, cipher=self.context.backend.cipher)
        return self._opened

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
        """Apply the age policy (``compaction:`` settings) as of ``now``: summarize faded
        moments into daily rollups, roll days into weeks and weeks into months, and move
        what the monthly rollups replace to the cold archive. Idempotent and safe to kill
        (see :mod:`agent_notebook.compaction.runner`). ``dry_run`` does the same on a copy
        and changes nothing. ``summarizer`` defaults to ``compaction.summarizer``: the
        extractive one, or with ``llm`` one over ``model`` that falls back to it. ``progress``
        is called as the run goes (see :data:`~agent_notebook.compaction.runner.Progress`;
        a dry run's copy first, as ``copy``); what it raises stops the run and comes out."""
        context, backend = self.context, self.context.backend
        when = now_utc() if now is None else aware(now, "now")
        # reported at a steady pace, also while one large rollup is made (see .pacing)
        paced = None if progress is None else PacedProgress(progress)
        counter = context.tokens if paced is None else PacedCounter(context.tokens, paced)
        chosen = summarizer or self._summarizer(model, counter)
        archive = self.cold_archive(archive_dir)
        settings = context.config.compaction
        files.ensure_private_dir(archive.root)
        with write_lock_file(archive.root / ".lock", 5.0):
            if not dry_run:
                backend.settle()  # no moment archived before its session counted it
                self.sessions.settle()
                compactor = Compactor(
                    backend, archive, chosen, settings, counter, keeper=self._keeper(backend)
                )
                try:
                    return compactor.run(when, progress=paced)
                finally:
                    self.vectors.forget(compactor.archived_numbers)
                    self.vectors.notify_new()  # the new rollups wait for a vector
            with tempfile.TemporaryDirectory(prefix="compact-dry-run-") as scratch:
                copy = scratch_copy(backend, paced)
                scratch_archive = ColdArchive(
                    Path(scratch), also=[archive.root], cipher=archive.cipher
                )
                compactor = Compactor(
                    copy, scratch_archive, chosen, settings, counter, keeper=self._keeper(copy)
                )
                report = compactor.run(when, progress=paced)
                return report.model_copy(update={"dry_run": True})

    def _keeper(self, backend: StorageBackend) -> FactsKeeper:
        """What the rollups keep: what the facts layer holds as current (see .keeping)."""
        config = self.context.config
        return FactsKeeper(
            backend, config.compaction.keep_whole_importance, facts_on=config.facts.enabled
        )

    def _summarizer(self, model: BaseChatModel | None, counter: TokenCounter) -> Summarizer:
        from ..compaction.summarize import ExtractiveSummarizer, LlmSummarizer

        extractive = ExtractiveSummarizer(counter)
        if self.context.config.compaction.summarizer == "extractive":
            return extractive
        if model is None:
            raise InvalidInput(
                "compaction.summarizer is 'llm' but no chat model was given: pass model=, "
                "set compaction.model or chat.model in config.yaml, or use 'extractive'"
            )
        return LlmSummarizer(model, fallback=extractive, counter=counter)

    def record(self, moment_id: str, archive_dir: Path | None = None) -> bytes:
        """The archived moment's record, byte for byte as it was when archived (the JSON
        of :meth:`Moment.model_dump_json`), checked against its SHA-256."""
        backend = self.context.backend
        found = backend.get_archived([check_moment_id(moment_id)])  # the id is checked first
        if not found:
            where = "is active: use get_moment" if backend.get_moment(moment_id) else ""
            raise NotFound(
                f"moment {moment_id} is not in the cold archive of {backend.location}"
                + (f"; it {where}" if where else "")
            )
        return self.cold_archive(archive_dir).record(found[0])

    def moment(self, moment_id: str, archive_dir: Path | None = None) -> Moment:
        """An archived moment, read back from the cold archive by its id."""
        return Moment.model_validate_json(self.record(moment_id, archive_dir))


#: Moments copied between two progress reports of a dry run's copy.
COPY_BATCH = 1000


def scratch_copy(backend: StorageBackend, progress: CompactProgress | None = None) -> MemoryBackend:
    """What compaction reads of ``backend`` (counters, sessions, moments, archive entries)
    in memory, for a dry run: records shared, not copied (the compactor changes none in
    place), words not indexed. ``progress("copy", done, total)`` after each
    :data:`COPY_BATCH` moments."""
    copy = MemoryBackend(shared=True)
    total = backend.count_moments()
    if progress is not None:
        progress("copy", 0, total)
    with copy.atomic():
        for counter, value in backend.counters().items():
            copy.raise_counter(counter, value)
        for session in backend.list_sessions():
            copy.put_session(session)
    done = 0
    batch: list[Moment] = []
    for moment in backend.iter_moments(COPY_BATCH):
        batch.append(moment)
        if len(batch) == COPY_BATCH:
            copy.put_moments(batch)  # a transaction each: indexed as it goes
            done, batch = done + len(batch), []
            if progress is not None:
                progress("copy", done, max(total, done))
    copy.put_moments(batch)
    offset = 0
    while page := backend.list_archived(offset, COPY_BATCH):
        copy.archive_moments(page)
        offset += len(page)
    if progress is not None:
        progress("copy", done + len(batch), max(total, done + len(batch)))
    return copy


def drop_archived(archive: ColdArchive, entries: Sequence[ArchiveEntry]) -> None:
    """Take the records of ``entries`` out of their archive files (a file left empty is
    deleted); the other records of a file keep their bytes, so their entries stay valid."""
    ids_by_file: dict[str, set[str]] = {}
    for entry in entries:
        ids_by_file.setdefault(entry.file, set()).add(entry.id)
    for name, ids in ids_by_file.items():
        if not (archive.root / name).exists():
            continue
        kept = [line for mid, line in archive.records_of(name).items() if mid not in ids]
        if kept:
            archive.rewrite(name, kept)
        else:
            (archive.root / name).unlink(missing_ok=True)
