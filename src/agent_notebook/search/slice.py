"""Slices: what a guest agent reads, and the one way it writes back.

Seed 002: the guest "reads the relevant slice, makes a decision, and writes back". A slice is
read-only, relevance-ranked and provenance-tagged: each item names its source
(``moment:m_12``, ``session:s_…#pending:p_1``), so an answer can cite it. It holds the moments
a search finds with the turns around them, and for each session they come from: its task,
the open pending items and the standing decisions that share a word (not a stopword) with
the query. It never exceeds its token budget: the rendered text is measured, not estimated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Literal

import yaml
from pydantic import BaseModel, Field

from ..core.enrich import STOPWORDS
from ..core.lexical import tokenize
from ..core.tokens import TokenCounter
from ..model import Moment, Session
from .hits import SearchHit

__all__ = ["MAX_SLICE_TOKENS", "Slice", "SliceItem", "build_slice"]

MAX_SLICE_TOKENS = 262_144  # 256K
Format = Literal["markdown", "yaml"]
Kind = Literal["task", "pending", "decision", "moment", "context"]
#: Decisions per session that make it into a slice, those sharing most words with the query.
MAX_DECISIONS = 3


class SliceItem(BaseModel):
    kind: Kind
    source: str  # provenance: "moment:m_12", "session:s_…", "session:s_…#pending:p_1"
    session: str
    text: str
    when: datetime | None = None
    who: str = ""
    score: float | None = None  # the search score of a matched moment
    #: What the fact rules know of a matched moment: "conflicting: m_58 vs m_24",
    #: "superseded by m_12", "said 3 times" (see :meth:`SearchHit.fact_note`).
    note: str = ""


class Slice(BaseModel):
    query: str
    audience: str
    budget_tokens: int
    tokens: int = 0
    items: list[SliceItem] = Field(default_factory=list)
    #: Matching moments left out because the budget was full.
    cut: int = 0
    format: Format = "markdown"

    def render(self, fmt: Format | None = None) -> str:
        return _render(self, fmt or self.format)


def build_slice(
    query: str,
    hits: Sequence[SearchHit],
    *,
    budget_tokens: int,
    audience: str,
    counter: TokenCounter,
    session_of: Callable[[str], Session],
    neighbours_of: Callable[[Moment], list[Moment]],
    fmt: Format = "markdown",
    admit: Callable[[SliceItem], bool] | None = None,
) -> Slice:
    """Fill a slice with ``hits`` (best first) and their context, within ``budget_tokens``;
    with ``admit``, only the items it admits (a guest token's scope)."""
    result = Slice(query=query, audience=audience, budget_tokens=budget_tokens, format=fmt)
    used = counter.count(result.render())  # the header alone
    seen: set[str] = set()
    for hit in hits:
        group: list[SliceItem] = []
        session_id = hit.moment.session
        if f"session:{session_id}" not in seen:
            group += _session_items(session_of(session_id), query)
        moments = sorted([hit.moment, *neighbours_of(hit.moment)], key=lambda m: m.number)
        for m in moments:
            if f"moment:{m.id}" not in seen:
                matched = m.id == hit.moment.id
                item = _moment_item(m, hit.score if matched else None)
                group.append(item.model_copy(update={"note": hit.fact_note()}) if matched else item)
        group = [i for i in group if i.source not in seen and (admit is None or admit(i))]
        cost = sum(counter.count(_render_item(item, fmt)) for item in group)
        if used + cost > budget_tokens:
            result.cut += 1
            continue  # a smaller later group may still fit
        result.items += group
        seen.update(item.source for item in group)
        used += cost
    # Measured whole: what the per-item counts could not see (joins, YAML) is trimmed here.
    while result.items and (excess := counter.count(result.render()) - budget_tokens) > 0:
        while result.items and excess > 0:
            dropped = result.items.pop()
            excess -= max(1, counter.count(_render_item(dropped, fmt)))
            if dropped.kind == "moment":
                result.cut += 1
    result.items = _by_session(result.items)
    result.tokens = counter.count(result.render())
    return result


def _by_session(items: list[SliceItem]) -> list[SliceItem]:
    """``items`` grouped by their own session, sessions in the order they first come (the
    best hit's first), each under its task line: a later hit of a session met before
    joins that session's items, not the last session's."""
    groups: dict[str, list[SliceItem]] = {}
    for item in items:
        groups.setdefault(item.session, []).append(item)
    return [item for group in groups.values() for item in group]


def _session_items(session: Session, query: str) -> list[SliceItem]:
    sid = session.id
    items = [
        SliceItem(
            kind="task",
            source=f"session:{sid}",
            session=sid,
            text=f"{session.task} ({session.task_status.value})",
            when=session.started,
        )
    ]
    # Only the open items and standing decisions that bear on the query: a word of it in
    # common, not a stopword ("the", "for"): a guest asking about the cake gets the cake's.
    words = set(tokenize(query)) - STOPWORDS
    items += [
        SliceItem(
            kind="pending",
            source=f"session:{sid}#pending:{p.id}",
            session=sid,
            text=p.what,
            when=p.since,
        )
        for p in session.pending
        if p.closed is None and words & set(tokenize(p.what))
    ]
    scored = [
        (len(words & set(tokenize(f"{d.what} {d.why}"))), n, d)
        for n, d in enumerate(session.decisions, start=1)
        if d.replaced_by is None
    ]
    relevant = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], -s[1]))
    items += [
        SliceItem(
            kind="decision",
            source=f"session:{sid}#decision:{n}",
            session=sid,
            text=d.what + (f" (why: {d.why})" if d.why else ""),
            when=d.when,
            who=d.who,
        )
        for _, n, d in relevant[:MAX_DECISIONS]
    ]
    return items


def _moment_item(moment: Moment, score: float | None) -> SliceItem:
    return SliceItem(
        kind="moment" if score is not None else "context",
        source=f"moment:{moment.id}",
        session=moment.session,
        text=moment.content.text,
        when=moment.timestamp,
        who=moment.speaker or moment.role,
        score=score,
    )


def _render_item(item: SliceItem, fmt: Format) -> str:
    if fmt == "yaml":
        return yaml.safe_dump([_plain(item)], allow_unicode=True, sort_keys=False)
    when = f" {item.when:%Y-%m-%d %H:%M}" if item.when else ""
    who = f" {item.who}:" if item.who else ""
    note = f" [{item.note}]" if item.note else ""
    return f"- [{item.source}] ({item.kind}){when}{who} {item.text}{note}\n"


def _plain(item: SliceItem) -> dict[str, object]:
    data = item.model_dump(mode="json", exclude_none=True)
    for empty in ("who", "note"):
        if not data.get(empty):
            data.pop(empty, None)
    return data


def _render(s: Slice, fmt: Format) -> str:
    if fmt == "yaml":
        head = {"query": s.query, "audience": s.audience, "budget_tokens": s.budget_tokens}
        body = {**head, "items": [_plain(item) for item in s.items]}
        return yaml.safe_dump(body, allow_unicode=True, sort_keys=False)
    lines = [
        f"# Notebook slice for {s.audience}",
        f"query: {s.query}",
        "Read-only. Cite items by their [source]. Write back with write_back.",
        "",
    ]
    return "\n".join(lines) + "".join(_render_item(item, fmt) for item in s.items)
