"""The forgetting policy (issue 30): which moments ``forget --older-than / --inactive-for /
--keep-top`` removes, chosen here and removed by :class:`.redaction.Redaction` (a tombstone
each, the text out of every copy, an entry per moment in its session's audit log).

A candidate is an original moment (not a rollup, not redacted) that is not pinned and not
the source of an entry of its session's audit log (a decision read from it: the log is
kept whole). Of the candidates, one goes when it matches every criterion given:

* ``older_than``: said before ``now - older_than``;
* ``inactive_for``: not seen since ``now - inactive_for``, where a moment is seen when it
  is said and whenever it recurs (a later moment folded onto it, or it onto another, by a
  ``duplicate_of`` link: the group shares its last time);
* ``keep_top``: the N candidates (not counting the protected) of highest standing are kept, standing being the decayed
  importance ``importance · exp(-decay_rate · days since last seen)`` (ties: the newer).
  Alone, it keeps N and lets the rest go.

Durations are written as a number and a unit: ``12h``, ``30d``, ``8w``, ``1y``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from ..errors import InvalidInput
from ..model import Moment, Session, split_link
from .owner_facts import excerpt

__all__ = ["PolicyCandidate", "PolicyReport", "choose", "parse_duration"]

_DURATION = re.compile(r"\s*([0-9]+)\s*(h|d|w|y)\s*", re.IGNORECASE)
_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
_UNITS["y"] = timedelta(days=365)
#: The longest duration taken: beyond it, nothing recorded is older.
MAX_DURATION = timedelta(days=365 * 200)


def parse_duration(text: str | timedelta | None, where: str) -> timedelta | None:
    """``30d`` → 30 days; a :class:`timedelta` as it is; :class:`InvalidInput` that says
    what was wrong, where, and how to write one."""
    if text is None or isinstance(text, timedelta):
        if isinstance(text, timedelta) and text <= timedelta(0):
            raise InvalidInput(f"{where}: {text} is not a positive duration; nothing was forgotten")
        return text
    found = _DURATION.fullmatch(text)
    if found is None or int(found.group(1)) == 0:
        raise InvalidInput(
            f"{where}: {text!r} is not a duration; write a positive number and a unit, "
            "h (hours), d (days), w (weeks) or y (years): 12h, 30d, 8w, 1y "
            "(nothing was forgotten)"
        )
    count, unit = int(found.group(1)), _UNITS[found.group(2).lower()]
    if count > MAX_DURATION // unit:  # checked before multiplying: no overflow
        raise InvalidInput(
            f"{where}: {text!r} is over 200 years; give a shorter duration (nothing was forgotten)"
        )
    return count * unit


class PolicyCandidate(BaseModel):
    """A moment the policy removes (or, dry, would remove)."""

    id: str
    session: str
    timestamp: datetime
    last_seen: datetime
    importance: float
    standing: float = Field(description="Decayed importance at last seen, for --keep-top.")
    excerpt: str


class PolicyReport(BaseModel):
    """What :meth:`Notebook.forget_by_policy` removed, or with ``dry_run`` would remove."""

    policy: str
    moments: list[PolicyCandidate] = Field(default_factory=list)
    #: Candidates the policy looked at, and those left (kept by --keep-top or not matched).
    considered: int = 0
    kept: int = 0
    #: Matched but kept whole: pinned, or the source of an audit-log entry.
    protected: list[str] = Field(default_factory=list)
    dry_run: bool = False


def describe(
    older_than: timedelta | None, inactive_for: timedelta | None, keep_top: int | None
) -> str:
    parts = []
    if older_than is not None:
        parts.append(f"older than {_say(older_than)}")
    if inactive_for is not None:
        parts.append(f"inactive for {_say(inactive_for)}")
    if keep_top is not None:
        parts.append(f"keep the top {keep_top}")
    return "forgetting policy: " + ", ".join(parts)


def _say(span: timedelta) -> str:
    hours = round(span.total_seconds() / 3600)
    return f"{hours // 24}d" if hours % 24 == 0 else f"{hours}h"


def last_seen(moments: list[Moment]) -> dict[str, datetime]:
    """Each moment's last time seen: said, or recurring (its ``duplicate_of`` group)."""
    parent: dict[str, str] = {m.id: m.id for m in moments}

    def root(i: str) -> str:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for m in moments:
        for relation, target in map(split_link, m.relations.links):
            if relation == "duplicate_of" and target in parent:
                parent[root(m.id)] = root(target)
    latest: dict[str, datetime] = {}
    for m in moments:
        r = root(m.id)
        latest[r] = max(latest.get(r, m.timestamp), m.timestamp)
    return {m.id: latest[root(m.id)] for m in moments}


def choose(
    moments: Iterable[Moment],
    sessions: Iterable[Session],
    now: datetime,
    older_than: timedelta | None,
    inactive_for: timedelta | None,
    keep_top: int | None,
) -> PolicyReport:
    """The report of what the policy removes from ``moments`` at ``now`` (not applied)."""
    if older_than is None and inactive_for is None and keep_top is None:
        raise InvalidInput(
            "forget by policy: give --older-than, --inactive-for or --keep-top "
            "(or a concept to forget); nothing was forgotten"
        )
    if keep_top is not None and keep_top < 0:
        raise InvalidInput(f"forget --keep-top: {keep_top} is negative; give 0 or more")
    originals = [m for m in moments if m.rollup is None and m.redacted is None]
    seen = last_seen(originals)
    sources = {d.source for s in sessions for d in s.decisions if d.source is not None}

    def standing(m: Moment) -> float:
        days = max(0.0, (now - seen[m.id]).total_seconds() / 86_400)
        return m.metadata.importance * math.exp(-m.metadata.decay_rate * days)

    free = [m for m in originals if not (m.pinned or m.id in sources)]  # kept all the same
    ranked = sorted(free, key=lambda m: (standing(m), seen[m.id], m.number), reverse=True)
    top = {m.id for m in ranked[: keep_top or 0]}
    report = PolicyReport(
        policy=describe(older_than, inactive_for, keep_top), considered=len(originals)
    )
    for m in sorted(originals, key=lambda m: m.number):
        if m.id in top:
            continue
        if older_than is not None and m.timestamp >= now - older_than:
            continue
        if inactive_for is not None and seen[m.id] >= now - inactive_for:
            continue
        if m.pinned or m.id in sources:
            report.protected.append(m.id)
            continue
        report.moments.append(
            PolicyCandidate(
                id=m.id,
                session=m.session,
                timestamp=m.timestamp,
                last_seen=seen[m.id],
                importance=m.metadata.importance,
                standing=round(standing(m), 6),
                excerpt=excerpt(m.content.text),
            )
        )
    report.kept = report.considered - len(report.moments)
    return report
