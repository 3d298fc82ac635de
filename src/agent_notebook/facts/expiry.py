"""When a statement stops holding, from its own words: "until Friday", "for this week",
"for the next 3 days", "until June 12". The end is the end of the day named (midnight
after it, in the statement's own time zone); an end already past when it was said (``I
worked there until 2019``) is no expiry.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from typing import Final

from ..core.enrich import exact_identifiers
from .text import sentences

__all__ = ["expires_from_text"]

_WEEKDAYS: Final = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_UNTIL: Final = r"(?:until|till|til|through|thru|up to|up until)"
_EXPIRY: Final = re.compile(
    rf"\b(?:{_UNTIL}\s+(?:next\s+)?(?P<weekday>{'|'.join(_WEEKDAYS)})"
    rf"|{_UNTIL}\s+(?P<tomorrow>tomorrow)"
    rf"|(?P<today>(?:for|just|only)\s+(?:today|tonight)|{_UNTIL}\s+(?:tonight|the end of (?:the )?day))"
    rf"|(?P<week>(?:for|just|only)\s+this\s+week\b|this\s+week\s+only|{_UNTIL}\s+the\s+end\s+of\s+(?:the|this)\s+week)"
    rf"|(?P<month>(?:for|just|only)\s+this\s+month\b|this\s+month\s+only|{_UNTIL}\s+the\s+end\s+of\s+(?:the|this)\s+month)"
    r"|for\s+the\s+next\s+(?P<count>\d{1,3}|two|three|four|five|six|seven|ten)\s+(?P<unit>hours?|days?|weeks?)"
    rf"|{_UNTIL}\s+(?P<rest>(?:the\s+)?\d[^,;.]{{0,20}}|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?))",
    re.IGNORECASE,
)
_CUE: Final = re.compile(
    r"\b(?:until|till|til|through|thru|up to|today|tonight|this week|this month|the next)\b", re.I
)
_COUNTS: Final = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "ten": 10}
_ISO_DAY: Final = re.compile(r"(\d{4}|-)-(\d{2})-(\d{2})")


def expires_from_text(text: str, said: datetime) -> datetime | None:
    """The earliest end ``text`` gives itself, said at ``said`` (an aware time), or None."""
    ends = [
        end
        for sentence in sentences(text)
        if _CUE.search(sentence)  # a quick look first: the full pattern is slow
        for m in _EXPIRY.finditer(sentence)
        if (end := _end(m, said)) and end > said
    ]
    return min(ends) if ends else None


def _end(m: re.Match[str], said: datetime) -> datetime | None:
    today = said.date()
    if m["weekday"]:
        wanted = _WEEKDAYS.index(m["weekday"].casefold())
        return _end_of(today + timedelta(days=(wanted - today.weekday()) % 7), said)
    if m["tomorrow"]:
        return _end_of(today + timedelta(days=1), said)
    if m["today"]:
        return _end_of(today, said)
    if m["week"]:
        return _end_of(today + timedelta(days=6 - today.weekday()), said)
    if m["month"]:
        first_next = date(today.year + today.month // 12, today.month % 12 + 1, 1)
        return _end_of(first_next - timedelta(days=1), said)
    if m["count"]:
        count = m["count"].casefold()
        n = int(count) if count.isdigit() else _COUNTS[count]
        unit = m["unit"].casefold().rstrip("s")
        return (
            said
            + {"hour": timedelta(hours=n), "day": timedelta(days=n), "week": timedelta(weeks=n)}[
                unit
            ]
        )
    if m["rest"]:
        for key in exact_identifiers(m["rest"]):
            if day := _ISO_DAY.fullmatch(key):
                year = today.year if day[1] == "-" else int(day[1])
                try:
                    end = date(year, int(day[2]), int(day[3]))
                except ValueError:
                    return None
                if day[1] == "-" and end < today:  # "until March 3" said in December
                    end = end.replace(year=year + 1)
                return _end_of(end, said)
    return None


def _end_of(day: date, said: datetime) -> datetime:
    """Midnight after ``day`` in the time zone of ``said``."""
    return datetime.combine(day + timedelta(days=1), time(0), tzinfo=said.tzinfo)
