"""Relative dates ("last Saturday", "yesterday", "two weeks ago") resolved against the date
a moment was said, as ISO keys: ``2023-05-06`` for a day, ``2023-05`` for a month, ``2023``
for a year. Pure standard library; the keys are those of :mod:`.enrich`'s dates, so a
moment is found by the date it speaks of, whatever words it used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Final

__all__ = [
    "MONTHS",
    "WEEKDAYS",
    "TimeSpan",
    "day_key",
    "month_key",
    "relative_dates",
    "time_spans",
]

#: The weekdays' names, Monday first.
WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COUNTS: Final = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 3,
}
_COUNT = r"\d{1,3}|" + "|".join(sorted(map(re.escape, _COUNTS), key=len, reverse=True))
_RELATIVE: Final = re.compile(
    r"\b(?:(?P<yesterday>yesterday|last night)"
    r"|(?P<tomorrow>tomorrow)"
    rf"|(?P<dir>last|this past|past|next|this coming|coming)\s+(?P<weekday>{'|'.join(WEEKDAYS)})"
    r"|(?P<dir2>last|next|past)\s+(?P<span>weekend|week|month|year)"
    rf"|(?P<count>{_COUNT})\s+(?P<unit>days?|weeks?|months?|years?)\s+(?P<way>ago|later|from now)"
    rf"|\bin\s+(?P<in_count>{_COUNT})\s+(?P<in_unit>days?|weeks?|months?|years?)(?!\s+(?:ago|old))"
    rf"|\bfor\s+(?:the\s+(?:last|past)\s+)?(?P<for_count>{_COUNT})\s+(?P<for_unit>days?|weeks?|"
    r"months?|years?)(?:\s+(?:now|already|so far|and counting))"
    r"|\bthe\s+(?P<rel_span>day|week|month|year)\s+(?P<rel_way>before|after)\b(?!\s+(?:the|that|my|"
    r"our|his|her|their|last|next|\d))"
    r")\b",
    re.IGNORECASE,
)


def day_key(day: date) -> str:
    return day.isoformat()


def month_key(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def _months_before(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 - months
    return date(index // 12, index % 12 + 1, 1)


def relative_dates(text: str, said_on: date) -> list[str]:
    """The dates ``text`` refers to relative to ``said_on``, as ISO keys, in order and
    without repeats: a day for "yesterday", "last Saturday" or "3 days ago", the days of
    "last weekend" or "this past weekend", the month of "last month", "next month" or
    "two months ago", the year of "last year", a year and its month for "three years
    ago", a day and its month for "two weeks ago" (a week back is rarely exact), the
    week's Monday and its month for "last week" or "the week before" (said of the day it
    was said), the same ahead for "in two weeks", and the start of a duration that runs
    until then: "for three years now" began three years before."""
    keys: list[str] = []
    for m in _RELATIVE.finditer(text):
        found: list[str] = []
        if m["yesterday"]:
            found = [day_key(said_on - timedelta(days=1))]
        elif m["tomorrow"]:
            found = [day_key(said_on + timedelta(days=1))]
        elif m["weekday"]:
            wanted = WEEKDAYS.index(m["weekday"].casefold())
            if m["dir"].casefold() in ("next", "this coming", "coming"):
                ahead = (wanted - said_on.weekday() - 1) % 7 + 1
                found = [day_key(said_on + timedelta(days=ahead))]
            else:  # the latest such day strictly before
                back = (said_on.weekday() - wanted - 1) % 7 + 1
                found = [day_key(said_on - timedelta(days=back))]
        elif m["span"]:
            found = _span(m["span"].casefold(), m["dir2"].casefold() == "next", said_on)
        elif m["count"]:
            sign = -1 if m["way"].casefold() == "ago" else 1
            found = _counted(m["unit"].casefold().rstrip("s"), sign * _n(m["count"]), said_on)
        elif m["in_count"]:  # "in two weeks": ahead
            found = _counted(m["in_unit"].casefold().rstrip("s"), _n(m["in_count"]), said_on)
        elif m["for_count"]:  # "for three years now": it started then
            found = _counted(m["for_unit"].casefold().rstrip("s"), -_n(m["for_count"]), said_on)
        elif m["rel_span"]:  # "the week before", told on the day it was said
            ahead = m["rel_way"].casefold() == "after"
            found = _span(m["rel_span"].casefold(), ahead, said_on)
        keys += [k for k in found if k not in keys]
    return keys


def _n(count: str) -> int:
    count = count.casefold()
    return int(count) if count.isdigit() else _COUNTS[" ".join(count.split())]


def _span(span: str, ahead: bool, said_on: date) -> list[str]:
    sign = 1 if ahead else -1
    if span == "weekend":
        if ahead:
            saturday = said_on + timedelta(days=(5 - said_on.weekday() - 1) % 7 + 1)
        else:
            saturday = said_on - timedelta(days=(said_on.weekday() - 5 - 1) % 7 + 1)
        return [day_key(saturday), day_key(saturday + timedelta(days=1))]
    if span == "day":
        return [day_key(said_on + timedelta(days=sign))]
    if span == "week":  # that week's Monday and its month
        monday = said_on + timedelta(days=7 * sign - said_on.weekday())
        return [day_key(monday), month_key(said_on + timedelta(days=7 * sign))]
    if span == "month":
        return [month_key(_months_before(said_on, -sign))]
    return [f"{said_on.year + sign:04d}"]


def _counted(unit: str, n: int, said_on: date) -> list[str]:
    if unit == "day":
        return [day_key(said_on + timedelta(days=n))]
    if unit == "week":
        day = said_on + timedelta(days=7 * n)
        return [day_key(day), month_key(day)]
    if unit == "month":
        return [month_key(_months_before(said_on, -n))]
    # a year and, as a guess, its month ("a year ago" in May: May of last year)
    return [f"{said_on.year + n:04d}", month_key(_months_before(said_on, -12 * n))]


# -- the spans of time a question names ------------------------------------------------------

#: The months' names, January first.
MONTHS: Final = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH = (
    r"(?P<{name}>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(?P<{name}>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
#: A day of a month without a year ("25 November", "Nov 25th", "the 25th of November") and a
#: month after a word that makes it one ("in March", "last May": never the verb "may"); a year
#: after either makes it a full date, which :mod:`.enrich` reads (not this).
_NO_YEAR: Final = re.compile(
    r"\b(?:(?:the\s+)?"
    + _DAY.format(name="day")
    + r"(?:\s+of)?\s+"
    + _MONTH.format(name="month")
    + r"|"
    + _MONTH.format(name="month2")
    + r"\s+(?:the\s+)?"
    + _DAY.format(name="day2")
    + r"|(?P<lead>in|during|since|until|before|after|by|from|of|early|late|mid-?|last|this|"
    r"next|past)\s+(?:the\s+)?"
    + _MONTH.format(name="month3")
    + r"(?!\s+(?:the\s+)?\d))(?![\w-]|\s*,?\s*'?\d{2,4}\b)",
    re.IGNORECASE,
)
#: The day it is said and its week, month or year ("today", "this week"); the days just
#: before ("the other day"; not "recently", which a question says of any time it means).
_CURRENT: Final = re.compile(
    r"\b(?:(?P<today>today|tonight|this (?:morning|afternoon|evening)|earlier today)"
    r"|this\s+(?P<this>week|month|year)"
    r"|(?P<lately>the other day|the past few days|the last few days))\b",
    re.IGNORECASE,
)
#: How far back "the other day" and "the past few days" reach.
_LATELY_DAYS: Final = 14


@dataclass(frozen=True, slots=True)
class TimeSpan:
    """A span of days a text names: ``first`` to ``last`` (exclusive), and where the words
    are in the text (``start``, ``end``). ``yearly``: a day or a month named without a year,
    whose year is the reader's to choose (the span is its latest on or before the day it was
    said)."""

    start: int
    end: int
    first: date
    last: date
    yearly: bool = False

    def years_back(self, years: int) -> TimeSpan:
        """The same day or month ``years`` years earlier (29 February: the 28th)."""
        return TimeSpan(
            self.start,
            self.end,
            _same_day(self.first, self.first.year - years),
            _same_day(self.last, self.last.year - years),
            self.yearly,
        )


def time_spans(text: str, said_on: date) -> list[TimeSpan]:
    """The spans of time ``text`` names, read as said on ``said_on``, in the order written:
    what :func:`relative_dates` resolves ("yesterday", "last week", "two weeks ago", "last
    Saturday"), as the days it covers (a week back or a few days ago is rarely exact: "two
    weeks ago" is the week around that day, "3 days ago" a day either side); "today", "this
    week", "this month", "the other day"; and a day or a month without a year ("25 November", "in
    March"), ``yearly``. A text's spans say when its words point, not what it is about."""
    found: list[TimeSpan] = []
    for m in _RELATIVE.finditer(text):
        span = _relative_span(m, said_on)
        if span is not None:
            found.append(TimeSpan(m.start(), m.end(), *span))
    for m in _CURRENT.finditer(text):
        found.append(TimeSpan(m.start(), m.end(), *_current_span(m, said_on)))
    for m in _NO_YEAR.finditer(text):
        span = _no_year_span(m, said_on)
        if span is not None:
            found.append(TimeSpan(m.start(), m.end(), *span, yearly=True))
    found.sort(key=lambda s: s.start)
    kept: list[TimeSpan] = []
    for each in found:  # overlapping words: the first reading ("last May 5" is not two)
        if not kept or each.start >= kept[-1].end:
            kept.append(each)
    return kept


def _relative_span(m: re.Match[str], said_on: date) -> tuple[date, date] | None:
    day = timedelta(days=1)
    if m["yesterday"]:
        return said_on - day, said_on
    if m["tomorrow"]:
        return said_on + day, said_on + 2 * day
    if m["weekday"]:
        (key,) = relative_dates(m[0], said_on)
        first = date.fromisoformat(key)
        return first, first + day
    if m["span"]:
        return _whole_span(m["span"].casefold(), m["dir2"].casefold() == "next", said_on)
    counted = (m["count"], m["unit"], -1 if m["count"] and m["way"].casefold() == "ago" else 1)
    if not m["count"]:
        if not m["in_count"]:
            return None  # "for three years now", "the week before": not when it points
        counted = (m["in_count"], m["in_unit"], 1)
    count, unit, sign = counted
    n, unit = sign * _n(count), unit.casefold().rstrip("s")
    if unit == "day":  # a day either side
        middle = said_on + timedelta(days=n)
        return middle - day, middle + 2 * day
    if unit == "week":  # the week around that day
        middle = said_on + timedelta(days=7 * n)
        return middle - 4 * day, middle + 4 * day
    if unit == "month":
        first = _months_before(said_on, -n)
        return first, _months_before(first, -1)
    return date(said_on.year + n, 1, 1), date(said_on.year + n + 1, 1, 1)


def _whole_span(span: str, ahead: bool, said_on: date) -> tuple[date, date]:
    """The whole weekend, week, month or year before (or after) the one ``said_on`` is in."""
    if span == "weekend":
        saturday = date.fromisoformat(_span("weekend", ahead, said_on)[0])
        return saturday, saturday + timedelta(days=2)
    if span == "week":
        monday = said_on + timedelta(days=(7 if ahead else -7) - said_on.weekday())
        return monday, monday + timedelta(days=7)
    if span == "month":
        first = _months_before(said_on, -1 if ahead else 1)
        return first, _months_before(first, -1)
    year = said_on.year + (1 if ahead else -1)
    return date(year, 1, 1), date(year + 1, 1, 1)


def _current_span(m: re.Match[str], said_on: date) -> tuple[date, date]:
    tomorrow = said_on + timedelta(days=1)
    if m["today"]:
        return said_on, tomorrow
    if m["lately"]:
        return said_on - timedelta(days=_LATELY_DAYS), tomorrow
    this = m["this"].casefold()
    if this == "week":
        return said_on - timedelta(days=said_on.weekday()), tomorrow
    if this == "month":
        return said_on.replace(day=1), tomorrow
    return date(said_on.year, 1, 1), tomorrow


def _no_year_span(m: re.Match[str], said_on: date) -> tuple[date, date] | None:
    """The latest such day or month on or before ``said_on`` (its month: this year's)."""
    name = m["month"] or m["month2"] or m["month3"]
    month = next(i for i, full in enumerate(MONTHS, 1) if full.startswith(name.casefold()[:3]))
    day_text = m["day"] or m["day2"]
    if day_text is None:
        year = said_on.year if month <= said_on.month else said_on.year - 1
        first = date(year, month, 1)
        return first, _months_before(first, -1)
    year = (
        said_on.year if (month, int(day_text)) <= (said_on.month, said_on.day) else said_on.year - 1
    )
    try:
        first = date(year, month, int(day_text))
    except ValueError:  # 31 April; 29 February of another year than a leap one
        if (month, int(day_text)) != (2, 29):
            return None
        first = date(year, 2, 28)
    return first, first + timedelta(days=1)


def _same_day(day: date, year: int) -> date:
    try:
        return day.replace(year=year)
    except ValueError:  # 29 February
        return day.replace(year=year, day=28)
