"""Relative dates ("last Saturday", "yesterday", "two weeks ago") resolved against the date
a moment was said, as ISO keys: ``2023-05-06`` for a day, ``2023-05`` for a month, ``2023``
for a year. Pure standard library; the keys are those of :mod:`.enrich`'s dates, so a
moment is found by the date it speaks of, whatever words it used.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Final

__all__ = ["day_key", "month_key", "relative_dates"]

_WEEKDAYS: Final = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
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
    rf"|(?P<dir>last|this past|past|next|this coming|coming)\s+(?P<weekday>{'|'.join(_WEEKDAYS)})"
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
            wanted = _WEEKDAYS.index(m["weekday"].casefold())
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
