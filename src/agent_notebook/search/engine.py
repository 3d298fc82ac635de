"""Search composed from the backend's primitives: lexical, vector and concept signals,
fused (see :mod:`.hybrid`), filtered, with priors; every hit says what found it.

:meth:`SearchEngine.search` carries out a :class:`.plan.SearchPlan` (what to run, decided
from the request alone) in named steps: the candidates of each signal, their fusion, the
spread to neighbours and sessions, relevance, the filters and priors, the order of the head
and each hit's explanation (the pure ones in :mod:`.ranking`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import timedelta

from ..config import SearchSettings
from ..core.enrich import enrich, identifiers
from ..core.lexical import stem, terms, tokenize
from ..model import moment_number, normalize_concept, now_utc
from ..storage import MomentBrief, MomentFilter, StorageBackend
from .asked import capitalised, named_people, says_i
from .explanation import Gain, Signal
from .hits import SearchHit
from .hybrid import (
    WINDOW_RAW,
    Coverage,
    Fused,
    Givers,
    by_the_other_signals,
    content_first,
    evidence_weights,
    fuse,
    named_speakers,
    neighbour_spread,
    read_with_the_turn_before,
    refers_back,
    relevance,
    session_evidence,
)
from .plan import SearchPlan, VectorQuery, plan_search
from .query import content_words, query_dates
from .ranking import (
    Ranked,
    cover_aspects,
    dated_first,
    explained_hit,
    in_time_order,
    protect,
    read_for_the_question,
    scored_hits,
    spread_sessions,
)
from .request import SearchRequest
from .semantic import SemanticIndex
from .when import Windows, find_windows, within

__all__ = [
    "SearchEngine",
    "content_words",
    "matches_words",
    "neighbour_ids",
]

#: A word in fewer moments than this is never common, however small the notebook: in a
#: chat of 60 turns, a name said in 4 of them still picks them out.
COMMON_AT_LEAST = 20
#: A concept in more moments than this says little about any of them; it is not scored.
MAX_CONCEPT_MOMENTS = 2000
#: ... but in a small notebook, a concept in this many moments is still scored.
MIN_CONCEPT_CAP = 10

Candidates = dict[Signal, list[tuple[str, float]]]


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
        plan = plan_search(request, self.settings, self.semantic is not None)
        windows = self._windows(plan, allowed)
        if (plan.asked.spans or plan.asked.event) and not windows:  # they point at nothing
            plan = plan_search(request, self.settings, self.semantic is not None, read_time=False)
        content = self._content(plan, allowed)
        ranked = self._candidates(plan, allowed, content, windows)
        if Signal.DATE in ranked and windows:
            within = self._within_windows(plan, windows, allowed)
            listed = {mid for mid, _ in ranked[Signal.DATE]}
            ranked[Signal.DATE] += [(m, WINDOW_RAW) for m, _ in within if m not in listed]
            ranked[Signal.DATE] = by_the_other_signals(ranked, Signal.DATE, within)
        weights = evidence_weights(plan.weights, ranked, self.settings)
        if Signal.VECTOR in ranked and self._common_words(plan):
            scale = self.settings.fusion.common_weight
            for signal in (Signal.LEXICAL, Signal.LEXICAL_LATEST, Signal.CONCEPT):
                weights[signal] = weights.get(signal, 0.0) * scale
        fused = fuse(ranked, weights, self.settings.fusion.rrf_k, flat={Signal.DATE})
        # Ranked on briefs; only the moments returned are loaded whole.
        briefs = self._briefs(list(fused))
        # By example (a picture, a clip), neighbours are no context: a roll of photos
        # taken one after another would lend each other the match.
        context = request.example is None
        givers = self._spread(fused, briefs, context) if plan.spread_to_neighbours else Givers()
        if plan.session_evidence:
            self._session_evidence(fused, briefs)
        people = self._people(plan, briefs)
        relevant = self._relevance(plan, fused, ranked, content, givers, allowed)
        window = windows.holds if windows else None
        floor = self.settings.fusion.first_floor
        kept = protect(relevant, fused, briefs, people, window, plan.request.min_score, floor)
        hits = self._ranked(plan, fused, briefs, relevant, allowed, people, window, kept)
        return self._results(plan, hits, relevant, people)

    # -- the steps ---------------------------------------------------------------------------

    def _content(self, plan: SearchPlan, allowed: set[int] | None) -> list[str] | None:
        """The moments having a word of the query other than a stopword, best first (None:
        not needed, or the lexical ranking itself)."""
        return self._content_hits(plan.content_query, plan, allowed)

    def _windows(self, plan: SearchPlan, allowed: set[int] | None) -> Windows:
        """The days the question points at (none: no time words, or the priors off)."""
        if not plan.asked or self.settings.priors.time_window_bonus <= 0:
            return Windows()
        request = plan.request

        def told(words: str) -> list[str]:
            return [mid for mid, _ in self._lexical(replace(request, query=words), 20, allowed)]

        return find_windows(self.backend, plan.asked, request.where, plan.pool, told)

    def _known(self, name: str) -> bool:
        """Whether the concept index has ``name`` in any moment: asked for at most none of
        its members, the backend answers without reading them (None: more than none)."""
        return self.backend.concept_members(normalize_concept(name), 0) is None

    def _common_words(self, plan: SearchPlan) -> bool:
        """Whether every word of a one-line question that any moment has (but stopwords) is
        in more than ``fusion.common_share`` of the moments (see ``fusion.common_weight``)."""
        fusion = self.settings.fusion
        if not plan.one_line or fusion.common_weight >= 1:
            return False
        words = " ".join(content_words(plan.spoken))
        counted = self.backend.term_documents(words) if words else None
        if counted is None or not counted[1] or counted[0] <= 0:
            return False
        total, docs = counted
        return min(docs.values()) > max(fusion.common_share * total, COMMON_AT_LEAST)

    def _within_windows(
        self, plan: SearchPlan, windows: Windows, allowed: set[int] | None
    ) -> list[tuple[str, float]]:
        """The lexical ranking within each of the question's windows, best first: the
        moments of a busy week, a month or the years before an event that have its words,
        whether or not they are among the best of the whole notebook."""
        if not content_words(plan.spoken):
            return []
        where = plan.request.where
        found: dict[str, float] = {}
        for since, until in windows.spans:
            narrowed = within(where, since, until)
            if narrowed is None:
                continue
            inside = replace(plan.request, query=plan.spoken, where=narrowed)
            content = None
            if plan.content_query:
                plain = SearchRequest(plan.content_query, inside.where, inside.limit)
                content = [mid for mid, _ in self._lexical(plain, 2 * plan.pool, allowed)]
            for mid, score in self._lexical(inside, plan.pool, allowed, content):
                found.setdefault(mid, score)
        return sorted(found.items(), key=lambda h: -h[1])

    def _people(self, plan: SearchPlan, briefs: dict[str, MomentBrief]) -> list[str]:
        """The people a one-line question names: its candidates' speakers, and the names the
        notebook knows as concepts (someone spoken of who never speaks), casefolded."""
        if not plan.one_line:
            return []
        known = {b.speaker.casefold() for b in briefs.values() if b.speaker}
        query, asker = plan.request.query, plan.request.asker
        named = named_people(query, known)
        if asker and asker.casefold() not in named and says_i(query):
            named.append(asker.casefold())
        others = [w for w in named_people(query, capitalised(query)) if w not in named]
        return named + [w for w in others if self._known(w)]

    def _candidates(
        self,
        plan: SearchPlan,
        allowed: set[int] | None,
        content: list[str] | None,
        windows: Windows,
    ) -> Candidates:
        """Each signal of the plan's ``(moment id, raw score)`` candidates, best first."""
        return {
            signal: self._signal(signal, plan, allowed, content, windows) for signal in plan.signals
        }

    def _signal(
        self,
        signal: Signal,
        plan: SearchPlan,
        allowed: set[int] | None,
        content: list[str] | None,
        windows: Windows,
    ) -> list[tuple[str, float]]:
        request, pool = plan.request, plan.pool
        if signal is Signal.LEXICAL:
            having = content if plan.lexical_by_content else None
            found = self._lexical(self._spoken(plan), pool, allowed, having)
            beside_vector = Signal.VECTOR in plan.signals and plan.request.min_score > 0
            if (
                content is not None
                and having is None
                and beside_vector
                and self.settings.fusion.content_first
            ):
                matching = set(content)
                if not any(mid in matching for mid, _ in found):
                    return []  # stopwords alone matched: no evidence at all
                found = content_first(found, matching)
            return found
        if signal is Signal.LEXICAL_LATEST:
            assert plan.latest is not None
            later = replace(request, query=plan.latest)
            # Its every hit counts as a match (relevance 1): never one on stopwords.
            having = self._content_hits(plan.latest_content_query, plan, allowed)
            return self._lexical(later, pool, allowed, having)
        if signal is Signal.VECTOR:
            assert plan.vector is not None
            return self._vector(request, pool, allowed, plan.vector)
        if signal is Signal.CONCEPT:
            return self._concepts(request.query, pool, allowed)
        if signal is Signal.DATE:
            return self._dated(request, pool, allowed, windows)
        assert signal is Signal.MEDIA and request.example is not None
        return self._media(request, request.example, pool, allowed)

    def _session_evidence(self, fused: dict[str, Fused], briefs: dict[str, MomentBrief]) -> None:
        """Lift the candidates of sessions that hold several (in place)."""
        session_of = {mid: b.session for mid, b in briefs.items() if mid in fused}
        settings = self.settings
        session_evidence(
            fused, session_of, settings.spread.session_share, settings.spread.session_best
        )

    def _relevance(
        self,
        plan: SearchPlan,
        fused: dict[str, Fused],
        ranked: Candidates,
        content: list[str] | None,
        givers: Givers,
        allowed: set[int] | None,
    ) -> dict[str, float]:
        """Each candidate's relevance (see :func:`.hybrid.relevance`) when the plan judges
        it; else none."""
        if not plan.judge_relevance:
            return {}
        if content is None:  # every word of the query counts: its lexical ranking
            found = ranked.get(Signal.LEXICAL) or self._lexical(
                self._spoken(plan), 2 * plan.pool, allowed
            )
            content = [mid for mid, _ in found]
        relevant = relevance(fused, set(content), givers)
        # Only the turns the cut-off would drop are read (their texts fetched) with the turn
        # before them: few, and the others are relevant enough on their own.
        low = [m for m in givers.before if relevant.get(m, 0.0) < plan.request.min_score]
        if low:
            leaning = [m.id for m in self.backend.get_moments(low) if refers_back(m.content.text)]
            read_with_the_turn_before(relevant, givers.before, leaning)
        return relevant

    def _ranked(
        self,
        plan: SearchPlan,
        fused: dict[str, Fused],
        briefs: dict[str, MomentBrief],
        relevant: dict[str, float],
        allowed: set[int] | None,
        people: list[str],
        window: Callable[[MomentBrief], bool] | None,
        kept: set[str],
    ) -> list[Ranked]:
        """The candidates within the filters, scored with the priors, best first (the head
        spread over sessions when the plan says so, or the question gathers)."""
        request, settings = plan.request, self.settings
        hits = scored_hits(
            fused,
            briefs,
            where=request.where,
            exclude=request.exclude,
            allowed=allowed,
            relevant=relevant,
            min_score=request.min_score,
            priors=plan.priors,
            named=self._named(request.query, briefs, people) if plan.name_speakers else set(),
            now=request.now or now_utc(),
            settings=settings,
            kept=kept,
            window=window,
        )
        coverage = settings.coverage
        if plan.gathers and coverage.gather_decay < 1:
            hits = spread_sessions(
                hits, briefs, coverage.gather_decay, coverage.gather_free, plan.shown
            )
        elif plan.spread_sessions:
            decay, free = coverage.session_decay, coverage.session_free
            hits = spread_sessions(hits, briefs, decay, free, plan.limit)
        return hits

    def _results(
        self, plan: SearchPlan, hits: list[Ranked], relevant: dict[str, float], people: list[str]
    ) -> list[SearchHit]:
        """The head of ``hits``, loaded whole, read for what the question asks (a date, the
        first time, someone's own words, not its own echo), reordered by the aspects of the
        question it covers (when the plan has them) and explained."""
        window = hits[: plan.shown]
        wanted = [f"m_{h.number}" for h in window]
        moments = {m.number: m for m in self.backend.get_moments(wanted)}
        priors = self.settings.priors
        if plan.time_question:
            window = dated_first(window, moments, priors.time_question_bonus)
        if plan.asked.order is not None and window:
            window = in_time_order(window, moments, plan.asked.order, priors.time_order_bonus)
        coverage: dict[int, Coverage] = {}
        if plan.aspects:  # the best coverage_window, whatever the limit: the same head for any
            covered = self.settings.coverage.window
            reordered, coverage = cover_aspects(
                window[:covered], moments, plan.aspects, self.settings
            )
            window = reordered + window[covered:]
        if plan.one_line:  # last: an echo covers every word of the question
            window = read_for_the_question(
                window, moments, people, plan.question_stems, self.settings, relevant
            )
        # Each step's scores already fall in its order; sorted once more, the order is the
        # order of the final scores whatever a step's rounding.
        window.sort(key=lambda h: -h.score)
        return [
            explained_hit(
                moments[hit.number], hit, relevant.get(f"m_{hit.number}"), coverage.get(hit.number)
            )
            for hit in window[: plan.limit]
            if hit.number in moments  # gone since it was ranked (archived, say)
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

    @staticmethod
    def _spoken(plan: SearchPlan) -> SearchRequest:
        """The request as the lexical signal reads it (see ``SearchPlan.spoken``)."""
        return replace(plan.request, query=plan.spoken)

    def _content_hits(
        self, query: str | None, plan: SearchPlan, allowed: set[int] | None
    ) -> list[str] | None:
        """The moments the lexical search for ``query`` (the words of a query other than
        stopwords; see ``SearchPlan.content_query``) finds, best first; "" finds none,
        None is no list."""
        if query is None:
            return None
        if not query:
            return []
        plain = SearchRequest(query, plan.request.where, plan.request.limit)
        return [mid for mid, _ in self._lexical(plain, 2 * plan.pool, allowed)]

    def _named(self, query: str, briefs: dict[str, MomentBrief], people: list[str]) -> set[str]:
        """The speakers of the candidates that ``query`` names (or whose first name it
        says), for ``priors.speaker_bonus``."""
        speakers = {b.speaker for b in briefs.values()}
        return named_speakers(tokenize(query), speakers) | {
            s for s in speakers if s.casefold() in people
        }

    def _vector(
        self,
        request: SearchRequest,
        pool: int,
        allowed: set[int] | None,
        vector: VectorQuery,
    ) -> list[tuple[str, float]]:
        """Moments nearest the plan's ``vector`` query by meaning (see
        :class:`.plan.VectorQuery`), within the filters."""
        assert self.semantic is not None
        restrict = self._restrict(request, allowed)
        if restrict is not None and not restrict:
            return []
        return self.semantic.search(
            vector.text,
            pool,
            allowed=restrict,
            latest=vector.latest,
            latest_weight=vector.latest_weight,
        )

    def _dated(
        self, request: SearchRequest, pool: int, allowed: set[int] | None, windows: Windows
    ) -> list[tuple[str, float]]:
        """The moments said on a day or in a month the query names, or that speak of it
        (a date, "last Saturday", is a concept of the moment: see ``enrich``), within the
        filters, and those of the days its time words point at (``windows``: "last week",
        asked today); a span with more moments than ``pool`` is too wide to say anything."""
        where = request.where
        restrict: set[int] | None = None

        def speaking(numbers: Iterable[int]) -> list[int]:
            """Of the moments that speak of a date (the concept index knows no filter),
            those within the filters and the concept."""
            nonlocal restrict
            if where == MomentFilter():
                return [n for n in numbers if allowed is None or n in allowed]
            if restrict is None:
                restrict = self._restrict(request, allowed) or set()
            return [n for n in numbers if n in restrict]

        found = dict.fromkeys(speaking(sorted(windows.speaking)))
        # said on the days the time words point at (read with the filters): less sure
        said = [n for n in sorted(windows.said) if allowed is None or n in allowed]
        for span in query_dates(request.query):
            found.update(
                dict.fromkeys(speaking(self.backend.concept_members(span.key, pool) or []))
            )
            if (narrowed := within(where, span.since, span.until)) is None:
                continue
            numbers = self.backend.moment_numbers(narrowed)
            if len(numbers) <= pool:
                found.update((n, None) for n in numbers if allowed is None or n in allowed)
        sure = [(f"m_{n}", 1.0) for n in found]
        return sure + [(f"m_{n}", WINDOW_RAW) for n in said if n not in found]

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
            max(MIN_CONCEPT_CAP, int(self.settings.fusion.concept_max_share * total)),
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
        self, fused: dict[str, Fused], briefs: dict[str, MomentBrief], context: bool = True
    ) -> Givers:
        """Pass part of each candidate's score to the turns around it (in place; the turns
        it reaches are added to ``briefs``): a question's reply gets ``spread.reply_share`` (an
        assistant's reply ``spread.assistant_reply_share``), each neighbour ``spread.neighbour_share``.
        Returns who gave to whom."""
        reply_share = self.settings.spread.reply_share
        neighbour_share = self.settings.spread.neighbour_share if context else 0.0
        assistant_share = self.settings.spread.assistant_reply_share
        if reply_share <= 0 and assistant_share <= 0 and neighbour_share <= 0:
            return Givers()
        # A neighbour only ranks higher: one no signal found does not become a result, so
        # only the replies, which may be found by their question alone, are read here.
        found = fused.keys() & briefs.keys()
        asking = [b.id for b in briefs.values() if b.asks]
        wanted = {f"m_{briefs[mid].number + 1}" for mid in asking} - briefs.keys()
        briefs.update(self._briefs(sorted(wanted)))

        def same_session(mid: str, ids: list[str]) -> list[str]:
            return [n for n in ids if n in briefs and briefs[n].session == briefs[mid].session]

        replies = {mid: same_session(mid, [f"m_{briefs[mid].number + 1}"]) for mid in asking}
        by_assistant = {
            mid: [n for n in ids if briefs[n].role == "assistant"] for mid, ids in replies.items()
        }
        by_others = {
            mid: [n for n in ids if briefs[n].role != "assistant"] for mid, ids in replies.items()
        }
        gap = timedelta(minutes=self.settings.spread.neighbour_gap_minutes)

        def one_conversation(mid: str) -> list[str]:
            """The turns beside ``mid`` a signal found, said by people close in time. A
            model's turn neither lends nor borrows: it is long and spans what it was asked,
            and in a user-assistant chat every neighbour of a user's turn is one (BEAM: R@10
            -0.8)."""
            when = briefs[mid].timestamp
            if briefs[mid].role == "assistant":
                return []
            beside = [n for n in neighbour_ids(briefs[mid].number) if n in found]
            return [
                n
                for n in same_session(mid, beside)
                if briefs[n].role != "assistant" and abs(briefs[n].timestamp - when) <= gap
            ]

        neighbours = {mid: one_conversation(mid) for mid in found} if neighbour_share > 0 else {}
        neighbour_spread(fused, by_others, reply_share, source=Gain.REPLY)
        neighbour_spread(fused, by_assistant, assistant_share, source=Gain.REPLY)
        neighbour_spread(fused, neighbours, neighbour_share)
        givers = Givers()
        spreads = (
            (by_others, reply_share, givers.questions),
            (by_assistant, assistant_share, givers.questions),
        )
        for spread, share, of in spreads:
            for giver, receivers in spread.items() if share > 0 else ():
                for receiver in receivers:
                    of.setdefault(receiver, []).append(giver)
        for giver, receivers in neighbours.items():
            for receiver in receivers:
                if briefs[receiver].number == briefs[giver].number + 1:
                    givers.before.setdefault(receiver, []).append(giver)
        return givers
