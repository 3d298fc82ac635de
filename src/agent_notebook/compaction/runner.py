"""Running the age policy over a notebook's backend: rollups, lineage, the archive.

Order of every step, so that a run killed anywhere loses nothing and a second run finishes
the work without doing any twice:

1. a rollup is written (one transaction, durable when it returns), listing its sources;
2. the moments it replaces that leave the active set (lower rollups; for a monthly rollup,
   also the original moments it covers) are written to an archive file (fsynced, renamed
   into place);
3. only then, in one transaction, the backend records where they went and forgets them.

Work is always found from what is active (see :mod:`.policy`): after a kill between 1 and
3, the rollup is there and its replaced moments still active, so the next run archives them;
sources a rollup covers are never summarized again. Without new sources a run changes
nothing. A :class:`Compactor` given a ``step_hook`` calls it after each durable step with
how many are done: the crash tests pause or kill the process there
(``tests/support/compact_crash.py`` runs the command line with one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from ..config import CompactionSettings
from ..core.tokens import TokenCounter
from ..errors import InvalidInput
from ..model import ArchiveEntry, Moment, RollupLevel
from ..storage import StorageBackend
from .archive import ColdArchive
from .keep import Keeper, LinkKeeper
from .policy import LEVELS, Group, due_groups, originals_leave
from .rollup import build_rollup, forget_originals

if TYPE_CHECKING:
    from .summarize import Summarizer

__all__ = ["CompactionReport", "Compactor", "DroppedItem", "Progress", "StepHook"]

#: ``progress(stage, done, total)``: the stage is a level (``daily``, ``weekly``,
#: ``monthly``: groups rolled up of those due, reported once before the first), or, for a
#: dry run, ``copy`` (moments copied into memory). Whatever it raises ends the run and
#: comes out of it (a run stopped anywhere loses nothing: see the module doc).
Progress = Callable[[str, int, int], None]
#: ``hook(steps)``: after each durable step, with how many this run has done.
StepHook = Callable[[int], None]


def _zeros() -> dict[str, int]:
    return {str(level): 0 for level in LEVELS}


class DroppedItem(BaseModel):
    """One rollup's dropped manifest, for the report."""

    rollup: str
    level: RollupLevel
    period: str
    salient: int
    dropped: list[str]


class CompactionReport(BaseModel):
    now: datetime
    dry_run: bool
    #: Original moments summarized into daily rollups by this run.
    summarized: int = 0
    #: Rollups made and rollups extended with late sources, by level.
    rollups: dict[str, int] = Field(default_factory=lambda: _zeros())
    extended: dict[str, int] = Field(default_factory=lambda: _zeros())
    #: Original moments and replaced rollups moved to the cold archive by this run.
    archived: int = 0
    archived_rollups: int = 0
    #: Tokens of the active moments before and after.
    tokens_before: int = 0
    tokens_after: int = 0
    active_before: int = 0
    active_after: int = 0
    #: The day the first original moments under the daily and weekly rollups left active
    #: are old enough for the monthly tier, which moves them to the archive (a run on that
    #: day or later does): until then a rollup adds its tokens beside theirs. None when no
    #: daily or weekly rollup is left.
    originals_leave: date | None = None
    #: Salient items (identifiers, numbers, dates, names) of the rollups' sources, and how
    #: many of them the summaries dropped.
    salient: int = 0
    dropped: int = 0
    manifest: list[DroppedItem] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(sum(self.rollups.values()) + sum(self.extended.values()) + self.archived)

    @property
    def token_change(self) -> str:
        """The change of active tokens in words, for every front end: "3.2x fewer", "30 more
        (+3.0%)" when the run adds tokens (new rollups beside originals not archived yet:
        they leave with the archive's age), "unchanged"."""
        before, after = self.tokens_before, self.tokens_after
        if after == before:
            return "unchanged"
        if after > before:
            grown = f" (+{(after - before) / before:.1%})" if before else ""
            return f"{after - before} more{grown}"
        return f"{before / after:.1f}x fewer" if after else "all removed"

    @property
    def originals_note(self) -> str:
        """When the originals under the rollups left active go to the archive, in words."""
        if self.originals_leave is None:
            return "none wait under a daily or weekly rollup"
        return f"from {self.originals_leave.isoformat()}, when the monthly tier archives them"


class Compactor:
    """Applies the policy to ``backend``; see the module doc."""

    def __init__(
        self,
        backend: StorageBackend,
        archive: ColdArchive,
        summarizer: Summarizer,
        settings: CompactionSettings,
        counter: TokenCounter,
        *,
        keeper: Keeper | None = None,
        step_hook: StepHook | None = None,
    ) -> None:
        self.backend, self.archive, self.summarizer = backend, archive, summarizer
        self.settings, self.counter = settings, counter
        #: What each rollup keeps whole and fades (the notebook's reads the facts layer).
        self.keeper = keeper or LinkKeeper(settings.keep_whole_importance)
        self.step_hook = step_hook
        self.archived_numbers: list[int] = []  # for the caller's vector index
        self._steps = 0

    def run(self, now: datetime, *, progress: Progress | None = None) -> CompactionReport:
        """One run at a time per notebook, even with many servers on one database (the
        backend's :meth:`~agent_notebook.storage.StorageBackend.maintenance_lock`)."""
        if now.tzinfo is None or now.utcoffset() is None:
            raise InvalidInput(f"compact: now ({now}) has no timezone; give a UTC time")
        with self.backend.maintenance_lock("compaction"):
            try:
                return self._run(now, progress)
            finally:
                forget_originals()

    def _run(self, now: datetime, progress: Progress | None) -> CompactionReport:
        report = CompactionReport(now=now, dry_run=False)
        active = self._active()
        report.active_before = len(active)
        report.tokens_before = self._tokens(active)
        self._finish_archiving(active, report)  # what an interrupted run left
        read_at = 0  # the active set as of this many durable steps
        for level in LEVELS:
            if self._steps != read_at:  # the active set changed: read it again
                active, read_at = self._active(), self._steps
            groups = due_groups(level, active, now, self.settings)
            if progress is not None:
                progress(level, 0, len(groups))
            for done, group in enumerate(groups, 1):
                self._roll(group, now, report)
                if progress is not None:
                    progress(level, done, len(groups))
        if self._steps != read_at:
            active = self._active()
        report.active_after = len(active)
        report.tokens_after = self._tokens(active)
        report.originals_leave = originals_leave(active, self.settings)
        return report

    # -- steps --------------------------------------------------------------------------------

    def _roll(self, group: Group, now: datetime, report: CompactionReport) -> None:
        sources = list(group.sources)
        if group.extends is not None:  # late sources: the open rollup is made again
            assert group.extends.rollup is not None
            known = {m.id for m in sources}
            earlier = [i for i in group.extends.rollup.sources if i not in known]
            sources += self._load(earlier)
        lineage = [o for m in sources for o in (m.rollup.originals if m.rollup else [m.id])]
        originals = [m for m in self._load(list(dict.fromkeys(lineage))) if m.rollup is None]
        keep = self.keeper.keep_list(originals, now)
        with self.backend.atomic():
            number = (
                group.extends.number
                if group.extends is not None
                else self.backend.next_number("moment")
            )
            rollup = build_rollup(
                number=number,
                level=group.level,
                period=group.period,
                sources=sources,
                originals=originals,
                keep=keep,
                summarizer=self.summarizer,
                settings=self.settings,
                counter=self.counter,
            )
            self.backend.put_moments([rollup])
        self._step()
        assert rollup.rollup is not None
        counts = report.extended if group.extends is not None else report.rollups
        counts[group.level] += 1
        if group.level == "daily":
            report.summarized += len(group.sources)
        report.salient += rollup.rollup.salient
        report.dropped += len(rollup.rollup.dropped)
        report.manifest.append(
            DroppedItem(
                rollup=rollup.id,
                level=group.level,
                period=group.period,
                salient=rollup.rollup.salient,
                dropped=rollup.rollup.dropped,
            )
        )
        self._archive_under(rollup, report)

    def _finish_archiving(self, active: Sequence[Moment], report: CompactionReport) -> None:
        for moment in active:
            if moment.rollup is not None and moment.rollup.level != "daily":
                self._archive_under(moment, report)

    def _archive_under(self, rollup: Moment, report: CompactionReport) -> None:
        """Move what ``rollup`` replaces out of the active set: the rollups below it, and
        for a monthly rollup the originals it covers. Durable file first, then the index."""
        assert rollup.rollup is not None
        if rollup.rollup.level == "daily":
            return
        wanted = list(rollup.rollup.sources)
        if rollup.rollup.level == "monthly":
            wanted += rollup.rollup.originals
        moments = self.backend.get_moments(list(dict.fromkeys(wanted)))
        if not moments:
            return
        entries = self.archive.write(rollup, moments)
        self._step()
        self._forget(entries)
        originals = sum(1 for m in moments if m.rollup is None)
        report.archived += originals
        report.archived_rollups += len(moments) - originals

    def _forget(self, entries: Sequence[ArchiveEntry]) -> None:
        with self.backend.atomic():
            self.backend.archive_moments(entries)
        self.archived_numbers += [e.number for e in entries]
        self._step()

    # -- helpers ------------------------------------------------------------------------------

    def _active(self) -> list[Moment]:
        return list(self.backend.iter_moments())

    def _tokens(self, moments: Sequence[Moment]) -> int:
        return sum(self.counter.count(m.content.text) for m in moments)

    def _load(self, ids: Sequence[str]) -> list[Moment]:
        """Moments by id, active or archived (read now: a redaction since the level began
        is in them)."""
        found = {m.id: m for m in self.backend.get_moments(ids)}
        if missing := [i for i in ids if i not in found]:
            for entry in self.backend.get_archived(missing):
                found[entry.id] = self.archive.moment(entry)
        return [found[i] for i in ids if i in found]

    def _step(self) -> None:
        """A durable step is done: the step hook (if any) is called here."""
        self._steps += 1
        if self.step_hook is not None:
            self.step_hook(self._steps)
