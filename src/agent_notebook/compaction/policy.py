"""The age policy of seed 002, as pure functions of the active moments and ``now``.

==========  =================================================================================
age (days)  what happens
==========  =================================================================================
0-7         full fidelity
7-30        moments whose decayed importance ``importance · exp(-decay_rate · age)`` is below
            0.3 are summarized: one daily rollup per session and day
30-90       daily rollups roll into weekly ones (ISO weeks, per session); the dailies go to
            the archive
90+         weekly rollups roll into monthly ones (per session); the weeklies and the
            original moments they cover go to the archive
never       pinned moments (``metadata.pinned`` or importance 1.0) are summarized
==========  =================================================================================

A rollup never mixes sessions: a session is one conversation, and a month of many
conversations in one summary answers no question well (on LoCoMo, rollups per session keep
77.9% of the evidence found within 1,000 tokens of search results, one per month 54.8%;
``bench/compaction_locomo.py``). Every number is a setting (``compaction:`` in
``config.yaml``). A rollup's age is that of
its newest source. Work is found from what is active, so a run after an interrupted one
finds what is left and nothing twice: a moment a rollup already covers is not summarized
again, and a rollup that replaced others archives those still active.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from ..config import CompactionSettings
from ..model import Moment, RollupLevel

__all__ = [
    "LEVELS",
    "Group",
    "age_days",
    "decayed_importance",
    "due_groups",
    "originals_leave",
    "period_of",
    "summarizable",
]

LEVELS: tuple[RollupLevel, ...] = ("daily", "weekly", "monthly")
_BELOW: dict[RollupLevel, RollupLevel | None] = {
    "daily": None,
    "weekly": "daily",
    "monthly": "weekly",
}


def age_days(moment: Moment, now: datetime) -> float:
    return (now - moment.timestamp).total_seconds() / 86_400


def decayed_importance(moment: Moment, now: datetime) -> float:
    """``importance · exp(-decay_rate · age_days)``; never above ``importance``."""
    age = max(0.0, age_days(moment, now))
    return moment.metadata.importance * math.exp(-moment.metadata.decay_rate * age)


def summarizable(moment: Moment, now: datetime, settings: CompactionSettings) -> bool:
    """An original moment the daily tier takes: old enough, faded enough, not pinned."""
    return (
        moment.rollup is None
        and moment.redacted is None
        and not moment.pinned
        and age_days(moment, now) >= settings.full_fidelity_days
        and decayed_importance(moment, now) < settings.summarize_below
    )


def period_of(level: RollupLevel, moment: Moment) -> str:
    """The period a source lands in at ``level``: its day, ISO week or month."""
    when = moment.timestamp
    if level == "daily":
        return when.date().isoformat()
    if level == "weekly":
        year, week, _ = when.isocalendar()
        return f"{year}-W{week:02d}"
    return f"{when:%Y-%m}"


@dataclass
class Group:
    """The sources due for one rollup of ``level``, ``period`` and ``session``, and the
    active rollup of that key they extend, if any."""

    level: RollupLevel
    period: str
    session: str
    sources: list[Moment] = field(default_factory=list)
    extends: Moment | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.level, self.period, self.session)


def due_groups(
    level: RollupLevel,
    active: Sequence[Moment],
    now: datetime,
    settings: CompactionSettings,
) -> list[Group]:
    """The rollups of ``level`` to make (or extend) now, in period order."""
    rollups = [m for m in active if m.rollup is not None]
    replaced = {s for r in rollups for s in _rollup_sources(r)}
    if level == "daily":
        covered = {o for r in rollups for o in _rollup_originals(r)}
        due: Iterable[Moment] = (
            m for m in active if m.id not in covered and summarizable(m, now, settings)
        )
    else:
        below = _BELOW[level]
        threshold = settings.weekly_after_days if level == "weekly" else settings.monthly_after_days
        due = (
            r
            for r in rollups
            if _level(r) == below and r.id not in replaced and age_days(r, now) >= threshold
        )
    open_rollups = {
        _key(r): r for r in rollups if _level(r) == level and r.id not in replaced
    }  # the latest rollup of a key that nothing replaced yet takes late sources
    groups: dict[tuple[str, str, str], Group] = {}
    for moment in due:
        key = (level, period_of(level, moment), moment.session)
        if key not in groups:
            groups[key] = Group(level, key[1], key[2], extends=open_rollups.get(key))
        groups[key].sources.append(moment)
    return [groups[k] for k in sorted(groups, key=lambda k: (k[1], k[2]))]


def originals_leave(active: Sequence[Moment], settings: CompactionSettings) -> date | None:
    """The day the first original moments under the daily and weekly rollups of ``active``
    are old enough for the monthly tier, which archives them; None without such a rollup.
    A session's week of originals leave together, when its weekly rollup (as old as its newest source)
    is ``monthly_after_days`` old; a day's rollup joins its week's first."""
    rollups = [m for m in active if m.rollup is not None]
    replaced = {s for r in rollups for s in _rollup_sources(r)}
    # (ISO week, session) -> its newest daily or weekly rollup
    newest: dict[tuple[str, str], datetime] = {}
    for r in rollups:
        if _level(r) in ("daily", "weekly") and r.id not in replaced:
            week = (period_of("weekly", r), r.session)
            newest[week] = max(newest.get(week, r.timestamp), r.timestamp)
    if not newest:
        return None
    return (min(newest.values()) + timedelta(days=settings.monthly_after_days)).date()


def _key(rollup: Moment) -> tuple[str, str, str]:
    assert rollup.rollup is not None
    return (rollup.rollup.level, rollup.rollup.period, rollup.session)


def _level(moment: Moment) -> RollupLevel | None:
    return None if moment.rollup is None else moment.rollup.level


def _rollup_sources(moment: Moment) -> list[str]:
    return [] if moment.rollup is None else moment.rollup.sources


def _rollup_originals(moment: Moment) -> list[str]:
    return [] if moment.rollup is None else moment.rollup.originals
