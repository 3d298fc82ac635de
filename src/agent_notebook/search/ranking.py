"""From fused candidates to the hits a search returns (pure, no I/O): the filters and
priors that score each candidate, the spread of the head over sessions, the reordering by
the aspects of the question a hit covers, and each hit's explanation."""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from typing import NamedTuple

from ..config import SearchSettings
from ..core.lexical import terms
from ..model import Moment
from ..storage import MomentBrief, MomentFilter
from .asked import echoes, first_person_claim
from .explanation import Explanation, Prior, Signal, SignalPart
from .hits import SearchHit
from .hybrid import Coverage, Fused, cover_scores, prior_factors

__all__ = [
    "COVERAGE_CHARS",
    "Ranked",
    "cover_aspects",
    "dated_first",
    "explained_hit",
    "in_time_order",
    "protect",
    "read_for_the_question",
    "scored_hits",
    "spread_sessions",
]

#: Query coverage reads this much of each moment's text: a turn whole, a long document by
#: its opening (a moment may hold a MiB of text; the search must stay a few ms).
COVERAGE_CHARS = 4000


class Ranked(NamedTuple):
    """A candidate that passed the filters: its final score, moment number, fusion entry
    and prior factors (name: multiplier)."""

    score: float
    number: int
    entry: Fused
    factors: dict[Prior, float]


def scored_hits(
    fused: Mapping[str, Fused],
    briefs: Mapping[str, MomentBrief],
    *,
    where: MomentFilter,
    exclude: Collection[str],
    allowed: set[int] | None,
    relevant: Mapping[str, float],
    min_score: float,
    priors: bool,
    named: Collection[str],
    now: datetime,
    settings: SearchSettings,
    kept: Collection[str] = (),
    window: Callable[[MomentBrief], bool] | None = None,
) -> list[Ranked]:
    """The candidates within the filters (``where``, not in ``exclude``, not redacted, of
    the concept ``allowed``, at least ``min_score`` relevant or ``kept`` by
    :func:`protect`), each fused score times its priors, a bonus when its speaker is
    ``named``, when it is in the question's time ``window`` and ``priors.assistant_weight``
    when a model said it: best first, ties by moment number."""
    ranked: list[Ranked] = []
    for moment_id, entry in fused.items():
        brief = briefs.get(moment_id)
        if brief is None or moment_id in exclude or brief.redacted:
            continue
        if not where.matches(brief):
            continue
        if allowed is not None and brief.number not in allowed:
            continue
        if relevant.get(moment_id, 1.0) < min_score and moment_id not in kept:
            continue
        factors = prior_factors(brief, now, settings) if priors else {}
        if brief.speaker in named:
            factors[Prior.SPEAKER] = 1 + settings.priors.speaker_bonus
        if window is not None and window(brief):
            factors[Prior.WINDOW] = 1 + settings.priors.time_window_bonus
        if brief.role == "assistant" and settings.priors.assistant_weight != 1:
            factors[Prior.ASSISTANT] = settings.priors.assistant_weight
        score = entry.score * math.prod(factors.values())
        ranked.append(Ranked(score, brief.number, entry, factors))
    ranked.sort(key=lambda h: (-h[0], h[1]))
    return ranked


def protect(
    relevant: Mapping[str, float],
    fused: Mapping[str, Fused],
    briefs: Mapping[str, MomentBrief],
    people: Collection[str],
    window: Callable[[MomentBrief], bool] | None,
    min_score: float,
    floor: float,
) -> set[str]:
    """The candidates ``min_score`` must not cut, their relevance at least ``floor``: those
    said by a person the question names (``people``, casefolded) or in its time ``window``,
    and, when the cut keeps any hit, the one the vector signal ranks first (the best of its
    own list, however low its similarity; the other signals' hits are matches, relevance
    1, but for the lexical one's on stopwords alone, which say nothing). A cut that keeps weaker hits and drops these would hide the
    answer; when nothing matches well, nothing is still the answer."""
    some_kept = any(value >= min_score for value in relevant.values())
    kept = set()
    for moment_id, entry in fused.items():
        if relevant.get(moment_id, 1.0) < floor:
            continue
        brief = briefs.get(moment_id)
        vector = entry.signals.get(Signal.VECTOR)
        first = some_kept and vector is not None and vector.rank == 1
        if first or (
            brief is not None
            and (brief.speaker.casefold() in people or (window is not None and window(brief)))
        ):
            kept.add(moment_id)
    return kept


def in_time_order(
    hits: list[Ranked], moments: Mapping[int, Moment], order: str, bonus: float
) -> list[Ranked]:
    """``hits`` (best first) with "the first time" read (``order`` "first"; "last": the
    newest): the earliest of those scoring at least half the best times ``1 + bonus`` (its
    ``order`` factor), best first again."""
    near = [h for h in hits if h.score >= hits[0].score / 2 and h.number in moments]
    if not near or bonus <= 0:
        return hits
    when = {h.number: moments[h.number].timestamp for h in near}
    pick = (min if order == "first" else max)(near, key=lambda h: (when[h.number], h.number))
    return _scaled(hits, {pick.number: {Prior.ORDER: 1 + bonus}})


def read_for_the_question(
    hits: list[Ranked],
    moments: Mapping[int, Moment],
    people: Collection[str],
    question_stems: Collection[str],
    settings: SearchSettings,
    relevant: Mapping[str, float],
) -> list[Ranked]:
    """``hits`` (best first) read for what the question asks, best first again: a question
    naming someone (``people``) scales another person's words about themselves, found by
    meaning alone (not by a word of the question: those words may be what it is about,
    whoever said them), by ``priors.other_person_weight``; a recorded question that is this
    one asked again by ``priors.echo_weight``."""
    priors = settings.priors
    scaled: dict[int, dict[Prior, float]] = {}
    for hit in hits:
        moment = moments.get(hit.number)
        if moment is None:
            continue
        text = moment.content.text[:COVERAGE_CHARS]
        speaker = moment.speaker.casefold()
        if (
            people
            and speaker
            and moment.role != "assistant"
            and not any(speaker == p or speaker.split()[0] == p.split()[0] for p in people)
            and priors.other_person_weight < 1
            and relevant.get(f"m_{hit.number}", 1.0) < 1.0
            and first_person_claim(text, people)
        ):
            scaled.setdefault(hit.number, {})[Prior.OTHER_PERSON] = priors.other_person_weight
        if priors.echo_weight < 1 and echoes(text, question_stems):
            scaled.setdefault(hit.number, {})[Prior.ECHO] = priors.echo_weight
    return _scaled(hits, scaled)


def _scaled(hits: list[Ranked], scaled: Mapping[int, dict[Prior, float]]) -> list[Ranked]:
    """``hits`` with the score of those in ``scaled`` times its factors (noted), best first."""
    if not scaled:
        return hits
    out = [
        h._replace(score=h.score * math.prod(f.values()), factors={**h.factors, **f})
        if (f := scaled.get(h.number))
        else h
        for h in hits
    ]
    out.sort(key=lambda h: (-h.score, h.number))
    return out


def spread_sessions(
    hits: list[Ranked],
    briefs: Mapping[str, MomentBrief],
    decay: float,
    free: int,
    limit: int,
) -> list[Ranked]:
    """``hits`` (best first) reordered so that, past the first ``free`` hits of a session,
    each hit's score counts ``decay`` less for every further better hit of its session
    already taken: the head of the results spans sessions, as the evidence of a question
    often does, without breaking up a session's few best turns. Lazy greedy: a hit is
    re-scored when popped. A hit's score is the one it was taken with (its ``spread``
    factor says by how much it fell): the scores taken never rise, so the order is the
    order of the scores; the hits past ``limit`` keep theirs, at most the last one taken."""
    taken: dict[str, int] = {}
    heap = [(-score, number, 0, i) for i, (score, number, _, _) in enumerate(hits)]
    heapq.heapify(heap)
    order: list[tuple[int, float]] = []
    while heap and len(order) < limit:
        key, number, seen, i = heapq.heappop(heap)
        session = briefs[f"m_{number}"].session
        now_seen = taken.get(session, 0)
        if now_seen != seen:  # its session gained hits since it was scored
            factor = decay ** max(0, now_seen - free + 1)
            heapq.heappush(heap, (-hits[i][0] * factor, number, now_seen, i))
            continue
        order.append((i, -key))
        taken[session] = now_seen + 1
    chosen = {i for i, _ in order}
    floor = order[-1][1] if order else math.inf
    head = [_rescored(hits[i], score) for i, score in order]
    return head + [_rescored(h, min(h.score, floor)) for i, h in enumerate(hits) if i not in chosen]


def _rescored(hit: Ranked, score: float) -> Ranked:
    """``hit`` with ``score``, the step's factor noted among its factors as ``spread``."""
    if score == hit.score:
        return hit
    factor = score / hit.score if hit.score else 1.0
    return hit._replace(score=score, factors={**hit.factors, Prior.SPREAD: factor})


#: A duration a moment tells ("11 hours door to door", "for three nights", "2 weeks"): what
#: a "how long" question asks.
_DURATION = re.compile(
    r"\b(?:\d+(?:[.,]\d+)?|an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve|a few|"
    r"a couple of|several|half an?)\s*(?:-\s*)?(?:minutes?|mins?|hours?|hrs?|h|days?|nights?|weeks?|"
    r"months?|years?|yrs?)\b",
    re.IGNORECASE,
)
#: A date a moment carries as a concept: a year, a month or a day (see ``core.dates``).
_DATE_CONCEPT = re.compile(r"\d{4}(?:-\d{2}){0,2}")


def dated_first(hits: list[Ranked], moments: Mapping[int, Moment], bonus: float) -> list[Ranked]:
    """``hits`` with the score of those whose moment carries a date (written, or resolved
    when it was recorded) or tells a duration times ``1 + bonus`` (their ``dated`` factor),
    best first: a question about time wants the turns that say when or how long."""
    dated = {
        hit.number: {Prior.DATED: 1 + bonus}
        for hit in hits
        if (moment := moments.get(hit.number)) is not None
        and (
            any(_DATE_CONCEPT.fullmatch(c) for c in moment.metadata.concepts)
            or _DURATION.search(moment.content.text[:COVERAGE_CHARS])
        )
    }
    return _scaled(hits, dated) if dated else sorted(hits, key=lambda h: (-h.score, h.number))


def cover_aspects(
    hits: list[Ranked],
    moments: Mapping[int, Moment],
    asked: tuple[str, ...],
    settings: SearchSettings,
) -> tuple[list[Ranked], dict[int, Coverage]]:
    """``hits`` (best first) reordered by :func:`.hybrid.cover_query` over the stems
    ``asked``, each weighing ``log(1 + hits / hits having it) ** coverage_idf_power``: a
    word most of the candidates have says nothing new (a speaker's name), a word only one
    has is what the others miss; each hit's score is the one it was taken with (its own
    and what its words added), so the order is the order of the scores; and, by moment
    number, what the step did to each."""
    wanted = set(asked)
    covers = [
        wanted.intersection(terms(moments[n].content.text[:COVERAGE_CHARS]))
        if n in moments
        else set()
        for _, n, _, _ in hits
    ]
    having = {word: sum(word in c for c in covers) for word in asked}
    power = settings.coverage.idf_power
    weights = {w: math.log(1 + len(hits) / n) ** power for w, n in having.items() if n}
    order = cover_scores(
        [h[0] for h in hits],
        covers,
        weights,
        settings.coverage.gain,
        len(hits),
        settings.coverage.residual,
    )
    done = {
        hits[i][1]: Coverage(
            i + 1, after + 1, [w for w in asked if w in covers[i]], score - hits[i].score
        )
        for after, (i, score) in enumerate(order)
    }
    return [hits[i]._replace(score=score) for i, score in order], done


def explained_hit(
    moment: Moment,
    hit: Ranked,
    relevant: float | None,
    coverage: Coverage | None = None,
) -> SearchHit:
    """The hit for ``moment``, its ``explain`` saying what found it and what moved it:
    relevance, the fused score with each signal's share, rank and raw score, the priors,
    the gains from neighbours and sessions, the coverage step's move."""
    entry = hit.entry
    shares = entry.shares()
    explain = Explanation(
        relevance=relevant,
        fused=entry.score,
        signals={
            name: SignalPart(s.rank, s.raw, shares.get(name)) for name, s in entry.signals.items()
        },
        priors=dict(hit.factors),
        gains=dict(entry.gains),
        coverage=None if coverage is None else coverage.step(),
    )
    covered = [] if coverage is None else coverage.words
    return SearchHit(moment=moment, score=hit.score, explain=explain, covered=covered)
