"""The days a question points at, found in the notebook (:class:`Windows`): its spans read
against the time it is asked (:mod:`.asked`), a day or month without a year taken in the
latest year the notebook has moments then, and an event's span ("before the move") bounded by
the first moment that tells of it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta

from ..core.dates import TimeSpan, day_key, month_key
from ..storage import MomentBrief, MomentFilter, StorageBackend
from .asked import AskedTime

__all__ = ["YEARS_BACK", "Windows", "find_windows", "within"]

#: How many years back a day or a month named without a year is looked for.
YEARS_BACK = 10
#: A span of at most this many days is looked up day by day among the moments' dates.
DAYS_LOOKED_UP = 8
#: The moments that tell of an event: its best lexical matches, at most this many.
EVENT_MATCHES = 5

_EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
_LATEST = datetime(9999, 12, 30, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Windows:
    """The spans of time a question names, as UTC bounds (``until`` exclusive), and the
    moments that speak of a day in them (a resolved "last Saturday" of theirs)."""

    spans: tuple[tuple[datetime, datetime], ...] = ()
    speaking: frozenset[int] = field(default_factory=frozenset)
    #: The moments said in the spans narrow enough to name them (at most ``DAYS_LOOKED_UP``
    #: days, at most ``pool`` moments each): the date signal's candidates.
    said: frozenset[int] = field(default_factory=frozenset)

    def __bool__(self) -> bool:
        return bool(self.spans)

    def holds(self, brief: MomentBrief) -> bool:
        """Whether the moment was said in a span, or speaks of a day in one."""
        if brief.number in self.speaking:
            return True
        return any(since <= brief.timestamp < until for since, until in self.spans)


def find_windows(
    backend: StorageBackend,
    asked: AskedTime,
    where: MomentFilter,
    pool: int,
    event_matches: Callable[[str], Sequence[str]],
) -> Windows:
    """The windows of ``asked`` in ``backend`` within ``where``: ``event_matches`` finds the
    moments (ids, best first) that tell of an event's words. Each span's moments are read
    once: to know it has some, and as the date signal's candidates when it is narrow."""
    spans: list[tuple[datetime, datetime]] = []
    speaking: set[int] = set()
    said: set[int] = set()
    for span in asked.spans:
        found = _latest_with_moments(backend, span, where) if span.yearly else (span, None)
        if found is None:
            continue
        days, numbers = found
        told = {n for key in _date_keys(days) for n in backend.concept_members(key, pool) or ()}
        if numbers is None:
            numbers = _said_in(backend, days, where)
        if not told and not numbers:
            continue  # no moment said then or speaking of it: its words are words again
        spans.append((_utc(days.first), _utc(days.last)))
        speaking |= told
        if (days.last - days.first).days <= DAYS_LOOKED_UP and len(numbers) <= pool:
            said.update(numbers)
    if asked.event is not None:
        way, words = asked.event
        telling = list(event_matches(words))[:EVENT_MATCHES]
        mentioned = [b.timestamp for b in backend.moment_briefs(telling)]
        if mentioned:
            first = min(mentioned)
            spans.append((_EARLIEST, first) if way == "before" else (first, _LATEST))
    return Windows(tuple(spans), frozenset(speaking), frozenset(said))


def within(where: MomentFilter, since: datetime, until: datetime) -> MomentFilter | None:
    """``where`` narrowed to ``since``..``until`` (None: nothing is left of it)."""
    since = since if where.since is None else max(since, where.since)
    until = until if where.until is None else min(until, where.until)
    return replace(where, since=since, until=until) if since < until else None


def _said_in(backend: StorageBackend, span: TimeSpan, where: MomentFilter) -> list[int]:
    """The numbers of the moments said in ``span`` within ``where``."""
    narrowed = within(where, _utc(span.first), _utc(span.last))
    return [] if narrowed is None else backend.moment_numbers(narrowed)


def _latest_with_moments(
    backend: StorageBackend, span: TimeSpan, where: MomentFilter
) -> tuple[TimeSpan, list[int]] | None:
    """``span`` (a day or month without a year) in the latest year, at most ``YEARS_BACK``
    back, in which the notebook has moments then, and those moments; None when it has none."""
    for back in range(YEARS_BACK + 1):
        moved = span.years_back(back)
        if numbers := _said_in(backend, moved, where):
            return moved, numbers
    return None


def _date_keys(span: TimeSpan) -> list[str]:
    """The date concepts of the days of a short span, or of its month or year."""
    days = (span.last - span.first).days
    if days <= DAYS_LOOKED_UP:
        return [day_key(span.first + timedelta(days=i)) for i in range(days)]
    if span.first.day == 1 and days <= 31:
        return [month_key(span.first)]
    if span.first == date(span.first.year, 1, 1) and days >= 365:
        return [f"{span.first.year:04d}"]
    return []


def _utc(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)
