"""Search composed from the backend's primitives: lexical, vector and concept signals,
fused (see :mod:`.hybrid`), filtered, with priors; every hit says what found it."""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from ..config import SearchSettings
from ..core.enrich import STOPWORDS, enrich, identifiers
from ..core.lexical import stem, terms, tokenize
from ..model import Moment, SearchHit, moment_number, normalize_concept, now_utc
from ..storage import MomentBrief, MomentFilter, StorageBackend
from .hybrid import (
    CONCEPT,
    DATE,
    LEXICAL,
    LEXICAL_LATEST,
    MEDIA,
    MEDIA_WEIGHT,
    VECTOR,
    Coverage,
    Fused,
    cover_query,
    fuse,
    named_speakers,
    neighbour_spread,
    prior_factors,
    relevance,
    session_evidence,
)
from .query import (
    dialogue_context,
    dialogue_words,
    latest_turns,
    query_dates,
    speaker_turns,
)
from .semantic import SemanticIndex

__all__ = [
    "Mode",
    "SearchEngine",
    "SearchRequest",
    "content_words",
    "matches_words",
    "neighbour_ids",
]

Mode = Literal["hybrid", "lexical", "vector"]
#: A concept in more moments than this says little about any of them; it is not scored.
MAX_CONCEPT_MOMENTS = 2000
#: ... but in a small notebook, a concept in this many moments is still scored.
MIN_CONCEPT_CAP = 10
#: Query coverage reads this much of each moment's text: a turn whole, a long document by
#: its opening (a moment may hold a MiB of text; the search must stay a few ms).
COVERAGE_CHARS = 4000
#: What the vector signal embeds of a dialogue: its newest words, at most this many (an
#: embedder cuts a long text's end, and embedding time grows with the length: 96 words are
#: about 125 of MiniLM's word pieces; a user's last three turns are 33-51 words in the
#: dialogue dev cases, and LoCoMo's long turns reach 256).
DIALOGUE_WORDS = 96
#: ... and of the rest of the dialogue's last turns (``dialogue_context_turns``), at most this
#: many newest words (in the dialogue dev cases that rest is the other side's three replies
#: and the user's turn before: 30-60 words).
CONTEXT_WORDS = 96
_PUNCTUATION = "\"'`.,;:!?()[]{}<>\u00ab\u00bb\u201c\u201d\u2018"


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    where: MomentFilter
    limit: int
    concept: str | None = None
    exclude: Collection[str] = ()
    mode: Mode = "hybrid"
    now: datetime | None = None
    #: The signature of an example image or audio clip: search by example.
    example: str | None = None
    #: Hits less relevant than this (see :func:`.hybrid.relevance`, 0 to 1) are left out.
    min_score: float = 0.0


def content_words(query: str) -> list[str]:
    """The query's words without stopwords ("what's", "the") and stray letters (the "s"
    of "Ana's"), as :func:`agent_notebook.core.lexical.tokenize` splits them."""
    return list(_content_words(query))


@functools.lru_cache(maxsize=64)  # one search asks it of the same query several times
def _content_words(query: str) -> tuple[str, ...]:
    kept = []
    for word in query.split():
        if word.casefold().replace("\u2019", "'").strip(_PUNCTUATION) in STOPWORDS:
            continue
        kept += [t for t in tokenize(word) if t not in STOPWORDS and (len(t) > 1 or t.isdigit())]
    return tuple(kept)


def matches_words(text: str, query: str) -> bool:
    """Whether ``text`` has a word of ``query`` other than a stopword (stems compared)."""
    wanted = {stem(word) for word in content_words(query)}
    return bool(wanted) and not wanted.isdisjoint(terms(text))


def neighbour_ids(number: int) -> list[str]:
    """The ids just before and after moment ``number`` (m_0 does not exist)."""
    return [f"m_{n}" for n in (number - 1, number + 1) if n >= 1]


class SearchEngine:
    def __init__(
        self,
        backend: StorageBackend,
        settings: SearchSettings,
        semantic: SemanticIndex | None,
    ) -> None:
        self.backend, self.settings, self.semantic = backend, settings, semantic

    def search(self, request: SearchRequest) -> list[SearchHit]:
        allowed = self._concept_members(request.concept)
        if allowed is not None and not allowed:
            return []
        wanted = request.limit + len(request.exclude)
        pool = max(self.settings.candidates, wanted)
        ranked: dict[str, list[tuple[str, float]]] = {}
        # With an example and no words, the media ranking alone (and no priors: a near
        # copy must not fall behind a far one that is more recent or important).
        words = request.example is None or bool(request.query.strip())
        settings = self.settings
        latest = latest_turns(request.query, settings.latest_turns) if words else None
        said, lexical_scale = self._dialogue(request) if words else (None, 1.0)
        if said is not None:
            request = replace(
                request, min_score=min(request.min_score, settings.dialogue_min_score)
            )
        lexical = words and request.mode in ("hybrid", "lexical") and lexical_scale > 0
        # Beside a vector signal a match on stopwords alone stays in the lexical ranking, as
        # weak evidence the vector signal and min_score judge (leave-one-conversation-out
        # on LoCoMo chose that in hybrid, and dropping them in lexical mode).
        judged_by_words = request.mode == "lexical" or self.semantic is None
        drop_stopword_only = lexical and settings.content_match and judged_by_words
        wanted_content = drop_stopword_only or request.min_score > 0
        spoken = replace(request, query=dialogue_words(request.query))
        wordiness = self._wordiness(spoken.query)
        if wordiness < 1:  # a dialogue: its stopwords say nothing; one search, not two
            spoken = replace(spoken, query=" ".join(content_words(spoken.query)))
        # A dialogue read by meaning: sharing some of its many ordinary words makes no
        # memory relevant (and looking them up at 100k moments costs a lexical search).
        by_meaning = said is not None and self.semantic is not None and request.mode != "lexical"
        if by_meaning:
            content: list[str] | None = []
        else:
            content = (
                self._content_hits(spoken, pool, allowed) if words and wanted_content else None
            )
        if lexical:
            # A query of stopwords only ("what is it") has nothing else to match by.
            having = content if drop_stopword_only and content_words(spoken.query) else None
            ranked[LEXICAL] = self._lexical(spoken, pool, allowed, having)
            if latest is not None and settings.latest_turn_weight > 0:
                later = replace(request, query=latest)
                # Its every hit counts as a match (relevance 1): never one on stopwords.
                if settings.content_match and content_words(latest):
                    having = self._content_hits(later, pool, allowed)
                else:
                    having = None
                ranked[LEXICAL_LATEST] = self._lexical(later, pool, allowed, having)
        if words and request.mode in ("hybrid", "vector") and self.semantic is not None:
            ranked[VECTOR] = self._vector(request, pool, allowed, latest, said)
        if words and request.mode == "hybrid":
            ranked[CONCEPT] = self._concepts(request.query, pool, allowed)
        if words and request.mode != "vector" and settings.date_weight > 0:
            ranked[DATE] = self._dated(request, pool, allowed)
        if request.example is not None:
            ranked[MEDIA] = self._media(request, request.example, pool, allowed)
        lexical_weight = lexical_scale * (
            settings.lexical_weight if request.mode != "lexical" else 1.0
        )
        weights = {
            LEXICAL: lexical_weight * wordiness,
            LEXICAL_LATEST: lexical_weight * settings.latest_turn_weight,
            VECTOR: settings.vector_weight if request.mode != "vector" else 1.0,
            CONCEPT: settings.concept_weight,
            DATE: settings.date_weight,
            MEDIA: MEDIA_WEIGHT,
        }
        fused = fuse(ranked, weights, settings.rrf_k, flat={DATE})
        # Ranked on briefs; only the moments returned are loaded whole.
        briefs = self._briefs(list(fused))
        givers = self._spread(fused, briefs) if request.mode == "hybrid" else {}
        session_of = {mid: b.session for mid, b in briefs.items() if mid in fused}
        if words:  # by example alone, the nearest copy comes first, whatever its session
            session_evidence(fused, session_of, settings.session_share, settings.session_best)
        relevant: dict[str, float] = {}
        if words and request.min_score > 0:
            if content is None:  # every word of the query counts: its lexical ranking
                found = ranked.get(LEXICAL) or self._lexical(spoken, 2 * pool, allowed)
                content = [mid for mid, _ in found]
            relevant = relevance(fused, set(content), givers)
        now = request.now or now_utc()
        # A question's named speaker; a dialogue's tags name its speakers in every turn.
        asking = words and said is None and latest is None
        named = self._named(request.query, briefs) if asking else set()
        ranked_hits: list[tuple[float, int, Fused, dict[str, float]]] = []
        for moment_id, entry in fused.items():
            brief = briefs.get(moment_id)
            if brief is None or moment_id in request.exclude or brief.redacted:
                continue
            if not request.where.matches(brief):
                continue
            if allowed is not None and brief.number not in allowed:
                continue
            if relevant.get(moment_id, 1.0) < request.min_score:
                continue
            factors = prior_factors(brief, now, self.settings) if words else {}
            if brief.speaker in named:
                factors["speaker"] = 1 + settings.speaker_bonus
            score = entry.score * math.prod(factors.values())
            ranked_hits.append((score, brief.number, entry, factors))
        ranked_hits.sort(key=lambda h: (-h[0], h[1]))
        if settings.session_decay < 1:
            ranked_hits = _spread_sessions(
                ranked_hits, briefs, settings.session_decay, settings.session_free, request.limit
            )
        asked = self._aspects(spoken.query) if words and latest is None else []
        shown = max(request.limit, settings.coverage_window) if asked else request.limit
        window = ranked_hits[:shown]
        moments = {m.number: m for m in self.backend.get_moments([f"m_{h[1]}" for h in window])}
        coverage: dict[int, Coverage] = {}
        if asked:  # the best coverage_window, whatever the limit: the same head for any
            covered = settings.coverage_window
            reordered, coverage = _cover_aspects(window[:covered], moments, asked, settings)
            window = reordered + window[covered:]
        head = window[: request.limit]
        return [
            self._hit(
                moments[number],
                score,
                entry,
                factors,
                relevant.get(f"m_{number}"),
                coverage.get(number),
            )
            for score, number, entry, factors in head
            if number in moments  # gone since it was ranked (archived, say)
        ]

    # -- the signals -------------------------------------------------------------------------

    def _lexical(
        self,
        request: SearchRequest,
        pool: int,
        allowed: set[int] | None,
        content: list[str] | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 over the query's words; with ``content`` (the moments that have a word of
        the query other than a stopword, or None when every word of the query is one), a
        match on stopwords alone is left out."""
        found = self.backend.search_text(request.query, request.where, pool)
        if allowed is not None:
            found = [(mid, s) for mid, s in found if moment_number(mid) in allowed]
        if content is not None:
            having = set(content)
            found = [(mid, s) for mid, s in found if mid in having]
        return found

    def _dialogue(self, request: SearchRequest) -> tuple[str | None, float]:
        """For a speaker-tagged dialogue, what the user said lately (``dialogue_turns``: the
        vector signal reads it alone) and the scale of the lexical signals' weights
        (``dialogue_lexical_weight`` beside a vector signal; 0: not ranked at all); for
        any other query, None and 1."""
        settings = self.settings
        said = speaker_turns(
            request.query, settings.dialogue_speaker, settings.dialogue_turns, DIALOGUE_WORDS
        )
        if said is None or request.mode != "hybrid" or self.semantic is None:
            return said, 1.0
        return said, settings.dialogue_lexical_weight

    def _aspects(self, query: str) -> list[str]:
        """The stems a question asks about, for :func:`.hybrid.cover_query`: its words
        that are not stopwords, when it has two to ``long_query_terms`` of them (a long
        query, like a dialogue so far, is not a list of things asked)."""
        if self.settings.coverage_gain <= 0:
            return []
        asked = list(dict.fromkeys(stem(word) for word in content_words(query)))
        longest = self.settings.long_query_terms
        return asked if len(asked) >= 2 and (not longest or len(asked) <= longest) else []

    def _named(self, query: str, briefs: dict[str, MomentBrief]) -> set[str]:
        """The speakers of the candidates that ``query`` names, for ``speaker_bonus``."""
        if self.settings.speaker_bonus <= 0:
            return set()
        return named_speakers(tokenize(query), {b.speaker for b in briefs.values()})

    def _wordiness(self, query: str) -> float:
        """The whole query's lexical weight, 1 for a question: a dialogue-long query matches
        a moment by a few of its many ordinary words, which says little of what it is
        about (its latest turns are ranked on their own for their words)."""
        longest = self.settings.long_query_terms
        distinct = len({stem(word) for word in content_words(query)})
        return 1.0 if not longest or distinct <= longest else longest / distinct

    def _content_hits(
        self, request: SearchRequest, pool: int, allowed: set[int] | None
    ) -> list[str] | None:
        """The moments that have a word of the query other than a stopword ("the door code"
        matches many moments by "the"), best first, or None when every word of the query
        is one (the lexical ranking itself is that list then). The lexical ranking keeps
        the stopwords (BM25 ranks better with them), so the other words are looked up once
        more for this."""
        words = content_words(request.query)
        if not words:
            return []
        if words == tokenize(request.query):
            return None
        plain = SearchRequest(" ".join(words), request.where, request.limit)
        return [mid for mid, _ in self._lexical(plain, 2 * pool, allowed)]

    def _vector(
        self,
        request: SearchRequest,
        pool: int,
        allowed: set[int] | None,
        latest: str | None = None,
        said: str | None = None,
    ) -> list[tuple[str, float]]:
        """Moments nearest the query by meaning; a dialogue's by what the user ``said``
        lately and, weighing less, the exchange around it (see ``dialogue_turns`` and
        ``dialogue_context_turns``), another query of several lines by the whole and its
        ``latest`` turns."""
        assert self.semantic is not None
        restrict = self._restrict(request, allowed)
        if restrict is not None and not restrict:
            return []
        if said is not None:
            settings = self.settings
            context = None
            if settings.dialogue_context_weight > 0:
                context = dialogue_context(
                    request.query,
                    settings.dialogue_speaker,
                    settings.dialogue_turns,
                    settings.dialogue_context_turns,
                    CONTEXT_WORDS,
                )
            return self.semantic.search(
                said,
                pool,
                allowed=restrict,
                latest=context,
                latest_weight=settings.dialogue_context_weight,
            )
        return self.semantic.search(
            request.query,
            pool,
            allowed=restrict,
            latest=latest,
            latest_weight=self.settings.latest_turn_weight,
        )

    def _dated(
        self, request: SearchRequest, pool: int, allowed: set[int] | None
    ) -> list[tuple[str, float]]:
        """The moments said on a day or in a month the query names, or that speak of it
        (a date, "last Saturday", is a concept of the moment: see ``enrich``), within the
        filters; a span with more moments than ``pool`` is too wide to say anything."""
        found: dict[int, None] = {}
        where = request.where
        restrict = None
        for span in query_dates(request.query):
            speaking = self.backend.concept_members(span.key, pool) or []
            if speaking and where != MomentFilter():
                if restrict is None:
                    restrict = self._restrict(request, allowed) or set()
                speaking = [n for n in speaking if n in restrict]
            found.update((n, None) for n in speaking if allowed is None or n in allowed)
            since = span.since if where.since is None else max(span.since, where.since)
            until = span.until if where.until is None else min(span.until, where.until)
            if since >= until:
                continue
            numbers = self.backend.moment_numbers(replace(where, since=since, until=until))
            if len(numbers) <= pool:
                found.update((n, None) for n in numbers if allowed is None or n in allowed)
        return [(f"m_{n}", 1.0) for n in found]

    def _media(
        self, request: SearchRequest, example: str, pool: int, allowed: set[int] | None
    ) -> list[tuple[str, float]]:
        """Moments whose stored signature of the example's kind is nearest, as
        ``(id, 1 - distance)``, within the filters."""
        from ..media.signatures import rank_by_example, signature_kind

        stored = self.backend.media_signatures(signature_kind(example))
        restrict = self._restrict(request, allowed)
        if restrict is not None:
            stored = [(n, sig) for n, sig in stored if n in restrict]
        return [(f"m_{n}", 1.0 - d) for n, d in rank_by_example(example, stored, pool)]

    def _restrict(self, request: SearchRequest, allowed: set[int] | None) -> set[int] | None:
        """The moment numbers a signal that cannot filter by itself may return: those the
        filters and the concept allow (None: any)."""
        if request.where == MomentFilter():
            return allowed
        numbers = set(self.backend.moment_numbers(request.where))
        return numbers if allowed is None else numbers & allowed

    def _concepts(self, query: str, pool: int, allowed: set[int] | None) -> list[tuple[str, float]]:
        """Moments sharing the query's concepts and identifiers, rarer ones weighing more;
        concepts in too many moments to say anything about one are skipped."""
        names = dict.fromkeys(
            [*enrich(query).concepts, *map(normalize_concept, identifiers(query))]
        )
        total = max(1, self.backend.count_moments())
        most = min(
            MAX_CONCEPT_MOMENTS,
            max(MIN_CONCEPT_CAP, int(self.settings.concept_max_share * total)),
        )
        scores: dict[int, float] = {}
        for name in names:
            members = self.backend.concept_members(name, most)
            if not members:  # none, or too many to say anything
                continue
            weight = math.log(1 + total / len(members))
            for num in members:
                if allowed is None or num in allowed:
                    scores[num] = scores.get(num, 0.0) + weight
        best = heapq.nlargest(pool, scores.items(), key=lambda item: (item[1], item[0]))
        return [(f"m_{num}", score) for num, score in best]

    def _concept_members(self, concept: str | None) -> set[int] | None:
        if concept is None:
            return None
        entry = self.backend.get_concept(normalize_concept(concept))
        return set() if entry is None else {moment_number(m) for m in entry.moments}

    # -- assembling --------------------------------------------------------------------------

    def _briefs(self, moment_ids: list[str]) -> dict[str, MomentBrief]:
        return {b.id: b for b in self.backend.moment_briefs(moment_ids)}

    def _spread(
        self, fused: dict[str, Fused], briefs: dict[str, MomentBrief]
    ) -> dict[str, list[str]]:
        """Pass part of each candidate's score to the turns around it (in place; the turns
        it reaches are added to ``briefs``): a question's reply gets ``reply_share``, each
        neighbour ``neighbour_share``. Returns who gave to whom (receiver: givers)."""
        reply_share, neighbour_share = self.settings.reply_share, self.settings.neighbour_share
        if reply_share <= 0 and neighbour_share <= 0:
            return {}
        around: dict[str, list[str]] = {}
        for b in briefs.values():
            if neighbour_share > 0:
                around[b.id] = neighbour_ids(b.number)
            elif b.asks:
                around[b.id] = [f"m_{b.number + 1}"]
        wanted = {n for ids in around.values() for n in ids if n not in briefs}
        briefs.update(self._briefs(sorted(wanted)))

        def same_session(mid: str, ids: list[str]) -> list[str]:
            return [n for n in ids if n in briefs and briefs[n].session == briefs[mid].session]

        replies = {
            mid: same_session(mid, [f"m_{briefs[mid].number + 1}"])
            for mid in around
            if briefs[mid].asks
        }
        neighbours = {mid: same_session(mid, ids) for mid, ids in around.items()}
        neighbour_spread(fused, replies, reply_share, source="reply")
        neighbour_spread(fused, neighbours, neighbour_share)
        givers: dict[str, list[str]] = {}
        for spread, share in ((replies, reply_share), (neighbours, neighbour_share)):
            for giver, receivers in spread.items() if share > 0 else ():
                for receiver in receivers:
                    givers.setdefault(receiver, []).append(giver)
        return givers

    @staticmethod
    def _hit(
        moment: Moment,
        score: float,
        entry: Fused,
        factors: dict[str, float],
        relevant: float | None,
        coverage: Coverage | None = None,
    ) -> SearchHit:
        moved = {} if coverage is None else coverage.explain()
        explain = {
            **({} if relevant is None else {"relevance": relevant}),
            "fused": entry.score,
            **{f"{name}_share": share for name, share in entry.shares().items()},
            **{f"{name}_rank": float(s.rank) for name, s in entry.signals.items()},
            **{f"{name}_raw": s.raw for name, s in entry.signals.items()},
            **{f"{name}_prior": f for name, f in factors.items()},
            **{f"{name}_gain": g for name, g in entry.gains.items()},
            **moved,
        }
        covered = [] if coverage is None else coverage.words
        return SearchHit(moment=moment, score=score, explain=explain, covered=covered)


def _cover_aspects(
    hits: list[tuple[float, int, Fused, dict[str, float]]],
    moments: dict[int, Moment],
    asked: list[str],
    settings: SearchSettings,
) -> tuple[list[tuple[float, int, Fused, dict[str, float]]], dict[int, Coverage]]:
    """``hits`` (best first) reordered by :func:`.hybrid.cover_query` over the stems
    ``asked``, each weighing ``log(1 + hits / hits having it) ** coverage_idf_power``: a
    word most of the candidates have says nothing new (a speaker's name), a word only one
    has is what the others miss; and, by moment number, what the step did to each."""
    wanted = set(asked)
    covers = [
        wanted.intersection(terms(moments[n].content.text[:COVERAGE_CHARS]))
        if n in moments
        else set()
        for _, n, _, _ in hits
    ]
    having = {word: sum(word in c for c in covers) for word in asked}
    power = settings.coverage_idf_power
    weights = {w: math.log(1 + len(hits) / n) ** power for w, n in having.items() if n}
    order = cover_query(
        [h[0] for h in hits],
        covers,
        weights,
        settings.coverage_gain,
        len(hits),
        settings.coverage_residual,
    )
    done = {
        hits[i][1]: Coverage(i + 1, after + 1, [w for w in asked if w in covers[i]])
        for after, i in enumerate(order)
    }
    return [hits[i] for i in order], done


def _spread_sessions(
    hits: list[tuple[float, int, Fused, dict[str, float]]],
    briefs: dict[str, MomentBrief],
    decay: float,
    free: int,
    limit: int,
) -> list[tuple[float, int, Fused, dict[str, float]]]:
    """``hits`` (best first) reordered so that, past the first ``free`` hits of a session,
    each hit's score counts ``decay`` less for every further better hit of its session
    already taken: the head of the results spans sessions, as the evidence of a question
    often does, without breaking up a session's few best turns. Lazy greedy: a hit is
    re-scored when popped."""
    taken: dict[str, int] = {}
    heap = [(-score, number, 0, i) for i, (score, number, _, _) in enumerate(hits)]
    heapq.heapify(heap)
    order: list[int] = []
    while heap and len(order) < limit:
        _, number, seen, i = heapq.heappop(heap)
        session = briefs[f"m_{number}"].session
        now_seen = taken.get(session, 0)
        if now_seen != seen:  # its session gained hits since it was scored
            factor = decay ** max(0, now_seen - free + 1)
            heapq.heappush(heap, (-hits[i][0] * factor, number, now_seen, i))
            continue
        order.append(i)
        taken[session] = now_seen + 1
    chosen = set(order)
    return [hits[i] for i in order] + [h for i, h in enumerate(hits) if i not in chosen]
