"""Fusing ranked lists into one ranking, and the priors applied after fusion (pure).

Each signal (lexical BM25, vector similarity, concept matches) ranks its own candidates. The
fused score of a moment is weighted reciprocal rank fusion, ``sum(weight / (k + rank))``,
which needs no calibration between BM25 scores and cosine similarities. Priors then scale
the fused score by ``1 + weight * (value - 0.5)`` (importance with decay, recency), so they
reorder near-ties without overriding relevance.

Fused scores are ranks, so the top hit scores the same whether it matches well or not.
:func:`relevance` is the absolute measure behind ``min_score``: 1 for a match on a word of
the query that is not a stopword, on a concept or by example, else the vector similarity.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..config import SearchSettings
from ..core.lexical import tokenize
from ..storage.base import MomentBrief
from .explanation import CoverageStep, Gain, Prior, Signal

__all__ = [
    "MEDIA_WEIGHT",
    "WINDOW_RAW",
    "Coverage",
    "Fused",
    "SignalScore",
    "by_the_other_signals",
    "content_first",
    "cover_query",
    "cover_scores",
    "evidence_weights",
    "fuse",
    "margin",
    "named_speakers",
    "neighbour_spread",
    "overlap",
    "prior_factors",
    "relevance",
    "session_evidence",
]

#: The media signal's weight when fused with a text query: as much as the words themselves.
MEDIA_WEIGHT = 1.0
#: Signals whose every hit is a match (relevance 1), whatever its rank.
_MATCHING = frozenset([Signal.CONCEPT, Signal.MEDIA, Signal.DATE, Signal.LEXICAL_LATEST])


@dataclass(frozen=True, slots=True)
class SignalScore:
    """One signal's part in a result: its rank (1 = best) and raw score in that signal,
    and what it added to the fused score."""

    rank: int
    raw: float
    contribution: float


@dataclass(slots=True)
class Fused:
    moment_id: str
    score: float = 0.0
    signals: dict[Signal, SignalScore] = field(default_factory=dict)
    #: Score added by other results (their neighbours), by source.
    gains: dict[Gain, float] = field(default_factory=dict)

    def shares(self) -> dict[Signal, float]:
        """Each signal's share of the fused score before priors (sums to 1)."""
        total = sum(s.contribution for s in self.signals.values())
        return {n: s.contribution / total for n, s in self.signals.items()} if total else {}


def margin(scores: Sequence[float], depth: int) -> float:
    """How far a signal's best score stands above its ``depth``-th (its last when it has
    fewer), relative to the best: 0 (a flat list: every hit matches alike, nothing stands
    out) to 1 (the rest score nothing). Scale-free, so BM25 of any backend reads alike."""
    if not scores or scores[0] <= 0:
        return 0.0
    last = scores[min(depth, len(scores)) - 1]
    return max(0.0, min(1.0, (scores[0] - last) / scores[0]))


def overlap(first: Sequence[str], second: Sequence[str], depth: int) -> float:
    """The share of ``first``'s best ``depth`` that ``second`` has among its best
    ``depth``: 1 when the two signals agree on their heads, 0 when they share nothing."""
    head = first[:depth]
    if not head:
        return 0.0
    return len(set(head) & set(second[:depth])) / len(head)


def evidence_weights(
    weights: Mapping[Signal, float],
    ranked: Mapping[Signal, Sequence[tuple[str, float]]],
    settings: SearchSettings,
) -> dict[Signal, float]:
    """``weights`` with the lexical one scaled by the lexical signal's own evidence, when a
    vector signal runs beside it: ``min(1, margin / fusion_margin_full)`` (a flat BM25 list,
    many moments sharing common words of a long query, says little) times
    ``1 - fusion_agreement * (1 - overlap)`` (a lexical head the vector signal does not
    share is likelier noise), that one only where the vector signal's own margin is at
    least ``fusion.vector_margin`` (sure of its head). All 0 (the defaults): ``weights``
    unchanged."""
    scaled = dict(weights)
    lexical, vector = ranked.get(Signal.LEXICAL), ranked.get(Signal.VECTOR)
    full, agreement, depth = (
        settings.fusion.margin_full,
        settings.fusion.agreement,
        settings.fusion.depth,
    )
    if lexical is None or vector is None or (full <= 0 and agreement <= 0):
        return scaled
    if not vector or scaled.get(Signal.VECTOR, 0.0) <= 0:
        return scaled
    factor = 1.0
    if full > 0:
        factor *= min(1.0, margin([s for _, s in lexical], depth) / full)
    sure = settings.fusion.vector_margin
    if agreement > 0 and margin([s for _, s in vector], depth) >= sure:
        shared = overlap([m for m, _ in lexical], [m for m, _ in vector], depth)
        factor *= 1.0 - agreement * (1.0 - shared)
    scaled[Signal.LEXICAL] = scaled.get(Signal.LEXICAL, 0.0) * factor
    return scaled


def fuse(
    ranked: Mapping[Signal, Sequence[tuple[str, float]]],
    weights: Mapping[Signal, float],
    k: int,
    flat: Collection[Signal] = (),
) -> dict[str, Fused]:
    """Weighted reciprocal rank fusion of each signal's ``(moment id, raw score)`` list;
    in a ``flat`` signal (a yes or no, like a date) every hit of raw score 1 counts as ranked
    first (the others, less sure, by their rank)."""
    fused: dict[str, Fused] = {}
    for signal, hits in ranked.items():
        weight = weights.get(signal, 0.0)
        if weight <= 0:
            continue
        for rank, (moment_id, raw) in enumerate(hits, start=1):
            part = weight / (k + (1 if signal in flat and raw >= 1.0 else rank))
            entry = fused.setdefault(moment_id, Fused(moment_id))
            entry.score += part
            entry.signals[signal] = SignalScore(rank, raw, part)
    return fused


#: The date signal's raw score for a moment said on the days a question's time words point
#: at ("last week"): ranked among them by the other signals, not first like one that names
#: or speaks of the day (every moment of a busy week is no answer to "what did we decide").
WINDOW_RAW = 0.5


def by_the_other_signals(
    ranked: Mapping[Signal, Sequence[tuple[str, float]]],
    signal: Signal,
    within: Sequence[tuple[str, float]] = (),
) -> list[tuple[str, float]]:
    """``signal``'s list with its less sure hits (raw score under 1) ordered by their best
    rank in the other signals and in ``within`` (a ranking of theirs alone), those none
    found last, in their order."""
    hits = list(ranked[signal])
    if all(raw >= 1.0 for _, raw in hits):
        return hits
    best: dict[str, int] = {}
    lists = [found for other, found in ranked.items() if other is not signal]
    for found in [*lists, within]:
        for rank, (moment_id, _) in enumerate(found):
            best[moment_id] = min(rank, best.get(moment_id, rank))
    sure = [h for h in hits if h[1] >= 1.0]
    rest = [h for h in hits if h[1] < 1.0]
    rest.sort(key=lambda h: best.get(h[0], len(best) + 1))
    return sure + rest


def content_first(
    found: Sequence[tuple[str, float]], content: Collection[str]
) -> list[tuple[str, float]]:
    """A lexical ranking with the hits having a word of the query other than a stopword
    first, those matching stopwords alone after them, each in its order: beside a vector
    signal they stay as weak evidence, but "what's the plan" must not outrank "decided" for
    "what did we decide"."""
    return [h for h in found if h[0] in content] + [h for h in found if h[0] not in content]


def neighbour_spread(
    fused: dict[str, Fused],
    neighbours: Mapping[str, Sequence[str]],
    share: float,
    source: Gain = Gain.NEIGHBOURS,
) -> None:
    """Give each turn's ``neighbours`` ``share`` of its score (in place), recorded in their
    ``gains`` under ``source``: in a conversation the answer to a question often sits next
    to the turn that matches it."""
    if share <= 0:
        return
    gains: dict[str, float] = {}
    for moment_id, entry in list(fused.items()):
        for other in neighbours.get(moment_id, ()):
            gains[other] = gains.get(other, 0.0) + share * entry.score
    for moment_id, gain in gains.items():
        entry = fused.setdefault(moment_id, Fused(moment_id))
        entry.score += gain
        if gain:
            entry.gains[source] = entry.gains.get(source, 0.0) + gain


def session_evidence(
    fused: dict[str, Fused], session_of: Mapping[str, str], share: float, best: int
) -> None:
    """Give each candidate ``share`` of the sum of its session's ``best`` best scores (in
    place; not shown apart in ``gains``, which the CLI's table shows as columns): evidence
    is told in a session, and a session that matches well as a whole is where the answer
    most likely is."""
    if share <= 0:
        return
    by_session: dict[str, list[float]] = {}
    for moment_id, entry in fused.items():
        session = session_of.get(moment_id)
        if session is not None:
            by_session.setdefault(session, []).append(entry.score)
    strength = {s: sum(sorted(v, reverse=True)[:best]) for s, v in by_session.items()}
    for moment_id, entry in fused.items():
        session = session_of.get(moment_id)
        if session is not None:
            entry.score += share * strength[session]


@dataclass(frozen=True, slots=True)
class Coverage:
    """What :func:`cover_query` did to a result: its place (1 = first) before and after,
    and the query's words (stems) it has, in the query's order."""

    before: int
    after: int
    words: list[str]
    #: What the step added to the hit's score (its order is the order of the new scores).
    added: float = 0.0

    def step(self) -> CoverageStep:
        """For a hit's explanation: its place before and after the step, and the score it
        added."""
        return CoverageStep(self.before, self.after, self.added)


def cover_query(
    scores: Sequence[float],
    covers: Sequence[Collection[str]],
    weights: Mapping[str, float],
    gain: float,
    limit: int,
    residual: float = 0.0,
) -> list[int]:
    """The order in which :func:`cover_scores` takes ``limit`` of the candidates."""
    return [i for i, _ in cover_scores(scores, covers, weights, gain, limit, residual)]


def cover_scores(
    scores: Sequence[float],
    covers: Sequence[Collection[str]],
    weights: Mapping[str, float],
    gain: float,
    limit: int,
    residual: float = 0.0,
) -> list[tuple[int, float]]:
    """The order (indices into ``scores``, best first) in which ``limit`` of the
    candidates are taken, each with its score when taken, greedily: each next is the one
    with the best ``score + top score * gain * (weight left of the query words it has) /
    (weight of all the query words)``, a score that only falls as words are taken, so the
    scores taken never rise: the order is the order of the scores. A word's weight is cut
    to ``residual`` of it each time a candidate having it is taken. A question often asks for several things ("where does Ana walk her dog, and
    what did Bo adopt?") told in different sessions: the turns telling the one that
    matches most must not fill the top alone. ``covers``: each candidate's query words;
    ``weights``: each query word's weight (rarer ones weigh more)."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    total = sum(weights.values())
    if gain <= 0 or total <= 0 or not order or scores[order[0]] <= 0:
        return [(i, scores[i]) for i in order[:limit]]
    step = scores[order[0]] * gain / total  # a query word's weight, in score
    left = dict(weights)  # what each query word still adds
    taken: list[tuple[int, float]] = []
    while order and len(taken) < limit:
        if not left:  # nothing left to gain: the rest keep their order and scores
            taken += [(i, scores[i]) for i in order[: limit - len(taken)]]
            break

        def value(i: int) -> float:
            return scores[i] + step * sum(left.get(w, 0.0) for w in covers[i])

        best = max(order, key=value)  # ties: the earlier, better-scored one
        order.remove(best)
        taken.append((best, value(best)))
        for word in covers[best]:
            if word in left:
                left[word] *= residual
                if left[word] <= 0:
                    del left[word]
    return taken


def prior_factors(
    moment: MomentBrief, now: datetime, settings: SearchSettings
) -> dict[Prior, float]:
    """The priors' multipliers for ``moment``: ``1 + weight * (value - 0.5)`` each."""
    age_days = max(0.0, (now - moment.timestamp).total_seconds() / 86_400)
    importance = moment.importance * math.exp(-moment.decay_rate * age_days)
    recency = 0.5 ** (age_days / settings.priors.recency_half_life_days)
    factors: dict[Prior, float] = {}
    if settings.priors.importance:
        factors[Prior.IMPORTANCE] = 1 + settings.priors.importance * (importance - 0.5)
    if settings.priors.recency:
        factors[Prior.RECENCY] = 1 + settings.priors.recency * (recency - 0.5)
    return factors


def named_speakers(query_words: Collection[str], speakers: Iterable[str]) -> set[str]:
    """The ``speakers`` the query names: each of their words is one of ``query_words``
    (casefolded, as :func:`agent_notebook.core.lexical.tokenize` splits them)."""
    wanted = set(query_words)
    named = set()
    for speaker in speakers:
        words = tokenize(speaker)
        if words and wanted.issuperset(words):
            named.add(speaker)
    return named


@dataclass
class Givers:
    """Who passed part of their score to whom (receiver: givers): the questions a reply
    answers, and the turn before a turn (``before``)."""

    questions: dict[str, list[str]] = field(default_factory=dict)
    before: dict[str, list[str]] = field(default_factory=dict)


#: Words by which a turn points back at the one before it ("I picked *it* up in Lisbon").
_BACK = frozenset(
    [
        "it",
        "its",
        "that",
        "this",
        "these",
        "those",
        "there",
        "then",
        "he",
        "she",
        "him",
        "her",
        "his",
        "hers",
        "they",
        "them",
        "their",
    ]
)
_WORD = re.compile(r"[a-z']+")


def refers_back(text: str) -> bool:
    """Whether a turn leans on the one before it: a pronoun or a demonstrative that points
    back, or a turn of four words or fewer ("In Lisbon.", "Yes, last May")."""
    words = _WORD.findall(text.lower())
    return len(words) <= 4 or not _BACK.isdisjoint(words)


def relevance(
    fused: Mapping[str, Fused], word_matches: Collection[str], givers: Givers
) -> dict[str, float]:
    """How well each fused moment matches, from 0 to 1: 1 when it has a word of the query
    that is not a stopword (``word_matches``: their ids) or a concept or an example found
    it; else its cosine similarity to the query. A reply is as relevant as the best
    question it answers: it is the answer, whatever its words."""
    own: dict[str, float] = {}
    for moment_id, entry in fused.items():
        found = entry.signals
        if moment_id in word_matches or not found.keys().isdisjoint(_MATCHING):
            own[moment_id] = 1.0
        else:
            vector = found.get(Signal.VECTOR)
            own[moment_id] = 0.0 if vector is None else max(0.0, min(1.0, vector.raw))
    return {
        moment_id: max([score, *(own.get(g, 0.0) for g in givers.questions.get(moment_id, ()))])
        for moment_id, score in own.items()
    }


def read_with_the_turn_before(
    relevant: dict[str, float], before: Mapping[str, Sequence[str]], leaning: Collection[str]
) -> None:
    """A turn that leans on the one before it (``leaning``: see :func:`refers_back`) is
    read with it (in place): halfway between its own relevance and that turn's. "I picked
    it up in Lisbon" after "my new red guitar" is about the guitar; a turn that names its
    own subject is judged on its own, so a note beside a match is not a result for it."""
    for moment_id in leaning:
        earlier = [relevant.get(g, 0.0) for g in before.get(moment_id, ())]
        if earlier:
            mine = relevant.get(moment_id, 0.0)
            relevant[moment_id] = max(mine, (mine + max(earlier)) / 2)
