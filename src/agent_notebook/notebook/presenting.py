"""Search hits shown with what the fact rules know of them (issue 30).

* **Repeats folded**: a hit that repeats an earlier moment (``duplicate_of``) is shown once,
  as the first said, with ``said`` the number of times (1 + its ``repeated_by`` links).
* **The current first**: when a hit was ended (``superseded_by``, by the time read) by a
  later moment, the latest of the chain takes the place of the best ranked of them and the
  ended ones follow it, marked ``superseded_by``, each with a score just below the one
  before it (its own kept in ``explain["own_score"]``), so the results stay in score
  order; a successor that did not match is fetched
  (``explain["successor"]``) and shown there too.
* **Contradictions together**: a hit that ``conflicts_with`` another moment has it shown
  right after it (fetched when it did not match), both marked.
* **Expired marked**: a hit whose own end (``expires``) has passed by the time read is
  marked ``expired``; ``current`` (or ``as_of``) leaves out what was ended or expired by
  then.

Pure over the hits, with one batched read (``fetch``) for the moments shown that did not
match. Without a fact link among the hits nothing moves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from ..model import Moment, now_utc, split_link
from ..search.explanation import Explanation, Mark
from ..search.hits import SearchHit

__all__ = ["present"]

Fetch = Callable[[list[str]], list[Moment]]


def _links(moment: Moment, relation: str) -> list[str]:
    return [t for r, t in map(split_link, moment.relations.links) if r == relation]


def present(
    hits: Sequence[SearchHit],
    limit: int,
    *,
    current: bool,
    as_of: datetime | None,
    fetch: Fetch,
    latest_values_first: str | None = None,
) -> list[SearchHit]:
    """``hits`` (best first) folded, ordered and marked as the module says; at most ``limit``.
    With ``latest_values_first`` (the query), of two hits that say another value of the
    same quantity, one the query asks about, the later said goes first (see
    :func:`_latest_values_first`)."""
    at = as_of if as_of is not None else now_utc()
    return [
        _expiry_marked(h, at)
        for h in _present(hits, limit, current, as_of, fetch, latest_values_first)
    ]


def _expiry_marked(hit: SearchHit, at: datetime) -> SearchHit:
    expires = hit.moment.expires
    return (
        hit.model_copy(update={"expired": True}) if expires is not None and expires <= at else hit
    )


def _present(
    hits: Sequence[SearchHit],
    limit: int,
    current: bool,
    as_of: datetime | None,
    fetch: Fetch,
    latest_values_first: str | None,
) -> list[SearchHit]:
    filtered = current or as_of is not None
    if latest_values_first is not None:
        hits = _latest_values_first(hits, limit, latest_values_first)
    if not filtered and not any(split_link(x)[0] for h in hits for x in h.moment.relations.links):
        return list(hits[:limit])
    at = as_of if as_of is not None else now_utc()
    if filtered:
        hits = [h for h in hits if h.moment.holds_at(at)]
    # Repeats: the first said stands for the group, at the best rank of any of them.
    originals = {h.moment.id: (_links(h.moment, "duplicate_of") or [h.moment.id])[0] for h in hits}
    matched = {h.moment.id: h for h in hits}
    wanted = [o for o in originals.values() if o not in matched]
    fetched = {m.id: m for m in fetch(sorted(set(wanted))) if m.redacted is None} if wanted else {}
    folded: list[SearchHit] = []
    placed: set[str] = set()
    for hit in hits:
        first = originals[hit.moment.id]
        if first in placed:
            continue
        placed.add(first)
        moment = matched[first].moment if first in matched else fetched.get(first, hit.moment)
        folded.append(_marked(hit, moment, at, as_of is not None, fetch))
    # The current first: each ended hit goes after the latest of its chain among the hits;
    # a successor that did not match is fetched and shown before the hit it ended.
    shown = {h.moment.id: h for h in folded}
    missing = sorted(
        {
            h.superseded_by
            for h in folded[:limit]
            if h.superseded_by and h.superseded_by not in shown
        }
    )
    for later in fetch(missing) if missing else []:
        if later.redacted is None and later.timestamp <= at and later.id not in shown:
            explain = Explanation(marks=(Mark.SUCCESSOR,))
            hit = SearchHit(moment=later, score=0.0, explain=explain)
            shown[later.id] = _marked(hit, later, at, as_of is not None, fetch)
            folded.append(shown[later.id])
    head: dict[str, str] = {}
    for hit in folded:
        chain, node = [hit.moment.id], hit.superseded_by
        while node is not None and node in shown and node not in chain:
            chain.append(node)
            node = shown[node].superseded_by
        head[hit.moment.id] = chain[-1]
    groups: dict[str, list[SearchHit]] = {}
    for hit in folded:
        groups.setdefault(head[hit.moment.id], []).append(hit)
    ordered: list[SearchHit] = []
    for key, members in groups.items():
        lead = shown[key]
        rest = sorted(
            (m for m in members if m.moment.id != key),
            key=lambda m: m.moment.timestamp,
            reverse=True,
        )
        score = members[0].score
        ordered.append(lead.model_copy(update={"score": score}))
        for ended in rest:  # just below the one before it: the results stay in score order
            score = math.nextafter(score, -math.inf) if score > 0 else 0.0
            ordered.append(_placed_below(ended, score))
    return _with_conflicts(ordered, limit, at if filtered else None, fetch)


def _placed_below(hit: SearchHit, score: float) -> SearchHit:
    """``hit`` (ended) with ``score``, just below the hit before it; its own score is kept
    in its explanation (``own_score``) when it was other."""
    if score == hit.score:
        return hit
    explain = replace(hit.explain, own_score=hit.score)
    return hit.model_copy(update={"score": score, "explain": explain})


def _latest_values_first(hits: Sequence[SearchHit], limit: int, query: str) -> list[SearchHit]:
    """The first ``limit`` hits, each moved before the best ranked earlier hit of the same
    speaker that gives another value of a quantity it gives (:mod:`..facts.quantities`:
    the same kind, words in common, among them a word of ``query``): the rules found no
    update cue, so nothing is marked, but of two values said of one thing the later is
    likelier to hold. A quantity the query does not name moves nothing."""
    from ..facts.quantities import MIN_SHARED, quantities_in
    from ..facts.text import content_stems, prose, sentences

    asked = content_stems(query)
    if not asked:
        return list(hits)

    ordered = list(hits)
    head = ordered[:limit]
    said = {
        h.moment.id: [q for s in sentences(prose(h.moment.content.text)) for q in quantities_in(s)]
        if h.moment.role != "assistant"
        else []
        for h in head
    }

    def restates(later: SearchHit, earlier: SearchHit) -> bool:
        return (
            later.moment.timestamp > earlier.moment.timestamp
            and (later.moment.speaker or later.moment.role)
            == (earlier.moment.speaker or earlier.moment.role)
            and any(
                a.kind == b.kind
                and a.value != b.value
                and len(shared := a.context & b.context) >= MIN_SHARED
                and shared & asked
                for a in said[later.moment.id]
                for b in said[earlier.moment.id]
            )
        )

    for j in range(1, len(head)):
        hit = head[j]
        i = next((i for i in range(j) if restates(hit, head[i])), None)
        if i is not None:
            head.insert(i, head.pop(j))
    return head + ordered[limit:]


def _marked(hit: SearchHit, moment: Moment, at: datetime, past: bool, fetch: Fetch) -> SearchHit:
    ended = moment.valid_until is not None and moment.valid_until <= at
    successor = next(iter(_links(moment, "superseded_by")), None) if ended else None
    repeats = _links(moment, "repeated_by")
    if past and repeats:  # repeats said after the time read do not count
        repeats = [m.id for m in fetch(repeats) if m.timestamp <= at]
    return hit.model_copy(
        update={
            "moment": moment,
            "superseded_by": successor,
            "said": 1 + len(repeats),
            "repeats": repeats,
            "conflicts_with": _links(moment, "conflicts_with"),
        }
    )


def _with_conflicts(
    ordered: list[SearchHit], limit: int, at: datetime | None, fetch: Fetch
) -> list[SearchHit]:
    """Each hit's conflicting moments right after it, fetched when they did not match (and
    left out, with ``at``, when they did not hold then)."""
    by_id = {h.moment.id: h for h in ordered}
    missing = sorted({c for h in ordered[:limit] for c in h.conflicts_with if c not in by_id})
    fetched = {
        m.id: m
        for m in (fetch(missing) if missing else [])
        if m.redacted is None and (at is None or (m.timestamp <= at and m.holds_at(at)))
    }
    result: list[SearchHit] = []
    placed: set[str] = set()
    for hit in ordered:
        if hit.moment.id in placed:
            continue
        conflicts = [c for c in hit.conflicts_with if c in by_id or c in fetched]
        result.append(hit.model_copy(update={"conflicts_with": conflicts}))
        placed.add(hit.moment.id)
        for other_id in conflicts:
            if other_id in placed:
                continue
            other = by_id.get(other_id)
            if other is not None:
                other = other.model_copy(
                    update={"conflicts_with": [c for c in other.conflicts_with if c in by_id]}
                )
            other = other or SearchHit(
                moment=fetched[other_id],
                score=hit.score,
                explain=Explanation(marks=(Mark.CONFLICT,)),
                conflicts_with=[hit.moment.id],
            )
            result.append(other)
            placed.add(other_id)
        if len(result) >= limit:
            break
    return result[:limit]
