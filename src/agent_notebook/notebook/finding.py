"""Finding what the notebook holds: moments by id or session, concepts, search (the
engine's hits tagged by tier, with the cold archive ranked among them on request) and the
slice of the notebook a guest gets."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidInput, NotFound
from ..model import (
    ConceptEntry,
    Moment,
    Session,
    check_moment_id,
    normalize_concept,
)
from ..search.engine import SearchEngine, matches_words, neighbour_ids
from ..search.explanation import Explanation, Mark, Signal, SignalPart
from ..search.hits import SearchHit
from ..search.request import MODES, Mode, SearchRequest
from ..search.slice import MAX_SLICE_TOKENS, Slice, build_slice
from ..search.slice import Format as SliceFormat
from ..storage import MomentFilter, StorageBackend
from . import scoping
from .checks import (
    MAX_SEARCH_LIMIT,
    aware,
    check_query,
    check_who,
    limit_of,
    offset_of,
    optional_limit,
    weak_match_hint,
)
from .facts import as_of_until, view_limit
from .presenting import present

if TYPE_CHECKING:
    from ..privacy.guest_scope import GuestScope
    from .archive import Archive
    from .context import NotebookContext
    from .sessions import Sessions
    from .vectors import Vectors


class SearchResults(list[SearchHit]):
    """What :meth:`Notebook.search` found, best first (a list of hits), knowing the query
    and the minimum score it was cut at, so that every front end words an empty result the
    same way (:meth:`hint`)."""

    def __init__(self, hits: Sequence[SearchHit], query: str, min_score: float) -> None:
        super().__init__(hits)
        self.query = query
        self.min_score = min_score

    def hint(self, option: str = "min_score") -> str | None:
        """What to tell the caller when nothing matched well enough (None when something
        did, or when the cut was 0), naming the front end's ``option`` for the cut."""
        if self or self.min_score <= 0 or not self.query.strip():
            return None
        return weak_match_hint(self.query, self.min_score, option)


class Finding:
    """The reads of one notebook (see :meth:`Notebook.search`)."""

    def __init__(
        self, context: NotebookContext, sessions: Sessions, vectors: Vectors, archive: Archive
    ) -> None:
        self.context = context
        self.sessions = sessions
        self.vectors = vectors
        self.archive = archive

    @property
    def backend(self) -> StorageBackend:
        return self.context.backend

    def get_moment(self, moment_id: str) -> Moment:
        found = self.backend.get_moment(check_moment_id(moment_id))
        if found is None:
            raise NotFound(f"no moment {moment_id} in {self.backend.location}")
        return found

    def moments(
        self, session_id: str | None = None, offset: int = 0, limit: int | None = None
    ) -> list[Moment]:
        if session_id is not None:
            self.sessions.get(session_id)
        return self.backend.list_moments(session_id, offset_of(offset), optional_limit(limit))

    def moments_by_source(
        self, session_id: str, source_ids: Collection[str] | None
    ) -> dict[str, Moment]:
        if isinstance(source_ids, str):
            raise InvalidInput("moments_by_source takes a list of source ids, not one string")
        wanted = None if source_ids is None else set(source_ids)
        for source_id in wanted or ():
            if not isinstance(source_id, str) or not source_id:
                raise InvalidInput(
                    f"source ids must be non-empty strings, not {source_id!r}: give the ids "
                    "the moments were recorded with (source_id)"
                )
        self.sessions.get(session_id)  # NotFound, or InvalidId for a malformed id
        found: dict[str, Moment] = {}
        offset = 0
        # Oldest first: a later moment of the same source id (a replacement) wins.
        while page := self.backend.list_moments(session_id, offset=offset, limit=500):
            for moment in page:
                source = moment.source_id
                if source and moment.redacted is None and (wanted is None or source in wanted):
                    found[source] = moment
            offset += len(page)
        return found

    def moment_count(self, since: datetime | None, until: datetime | None) -> int:
        if since is None and until is None:
            return self.backend.count_moments()
        where = MomentFilter(
            since=None if since is None else aware(since, "since"),
            until=None if until is None else aware(until, "until"),
        )
        return len(self.backend.moment_numbers(where))

    def concept(self, name: str) -> ConceptEntry:
        entry = self._concept_with_archive(normalize_concept(name))
        if entry is None:
            raise NotFound(
                f"no concept {name!r} in the index; 'agent-notebook concepts' lists them"
            )
        return entry

    def concepts(
        self, offset: int = 0, limit: int | None = None, text: str = ""
    ) -> list[ConceptEntry]:
        words = text.strip().casefold()
        if not words:
            return self.backend.list_concepts(offset_of(offset), optional_limit(limit))
        found = [c for c in self.backend.list_concepts() if words in c.concept.casefold()]
        end = None if optional_limit(limit) is None else offset_of(offset) + (limit or 0)
        return found[offset_of(offset) : end]

    def search(
        self,
        query: str,
        *,
        session: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        speaker: str | None = None,
        concept: str | None = None,
        limit: int = 10,
        exclude: Collection[str] = (),
        mode: Mode = "hybrid",
        include_archive: bool = False,
        image: Path | str | None = None,
        audio: Path | str | None = None,
        min_score: float | None = None,
        current: bool = False,
        as_of: datetime | None = None,
        current_session_id: str | None = None,
        asked_at: datetime | None = None,
        asker: str | None = None,
    ) -> SearchResults:
        """Moments relevant to ``query``, best first, within the filters. ``hybrid`` fuses
        lexical (BM25), vector and concept matches (lexical alone without an embedder);
        each hit's ``explain`` says what found it. Moments in ``exclude`` (say, those
        already in the live messages) are passed over. Rollups are found like moments
        (``tier="rollup"``); with ``include_archive`` the cold archive is searched too (by
        words) and its hits come ranked among the others, ``tier="archived"``. ``image`` or
        ``audio`` searches by example: moments whose stored signature is nearest (``media``
        in ``explain``), fused with the words when there is a query, alone without one.
        Hits less relevant than ``min_score`` (default ``search.min_score``, 0.3) are left
        out: relevance (``explain["relevance"]``) is 1 for a match on a word other than a
        stopword, on a concept or by example, else the vector similarity; an empty result
        then means nothing matches well (:func:`.checks.weak_match_hint` says so).
        ``current`` leaves out what a later moment superseded or what expired; ``as_of``
        reads the notebook as it stood then (moments said by then, current then). What the
        fact rules linked is shown with the hits (:mod:`.presenting`): repeats once, "said N
        times"; the current fact before those it ended, which are marked ``superseded_by``;
        a conflicting moment right after the hit it conflicts with.
        ``current_session_id`` is the conversation the caller is in: its recent turns
        (``context.recent_moments``, which a chat's own context search skips too) are left
        out, as the caller has them already and its own question and the model's answer
        would match best and hide the facts (issue 31).
        ``asked_at`` is when the question is asked (default ``as_of``, else now): its time
        words ("last week", "yesterday", "25 November", "before the move") are read against
        it, as a soft window (:mod:`agent_notebook.search.asked`), and the recency prior.
        ``asker``, who asks (a speaker's name), is who "I", "my" and "me" name."""
        example = _example(image, audio)
        check_query(query, "search", required=example is None)
        asked_at = aware(asked_at, "asked_at") if asked_at is not None else None
        if as_of is not None:  # see notebook/facts.py
            until = as_of_until(aware(as_of, "as_of"), until)
            asked_at = asked_at or aware(as_of, "as_of")
        if min_score is None:
            min_score = self.context.config.search.min_score
        elif not 0.0 <= min_score <= 1.0:  # NaN fails too
            raise InvalidInput(f"search: min_score {min_score!r} must be between 0 and 1")
        if session is not None:
            self.sessions.get(session)
        if current_session_id:
            recent = self.sessions.get(current_session_id).context.recent_moments
            exclude = {*exclude, *recent}
        if since is not None and until is not None and since >= until:
            raise InvalidInput(f"search: since ({since}) must be before until ({until})")
        if mode not in MODES:
            raise InvalidInput(f"search: mode {mode!r} is not one of {', '.join(MODES)}")
        semantic = None if mode == "lexical" else self.vectors.semantic  # lexical: no model loaded
        if mode == "vector" and semantic is None:
            raise InvalidInput(
                "search: vector mode needs an embedder; 'agent-notebook doctor' says why "
                "there is none"
            )
        where = MomentFilter(
            session=session,
            since=None if since is None else aware(since, "since"),
            until=None if until is None else aware(until, "until"),
            speaker=speaker,
        )
        engine = SearchEngine(self.backend, self.context.config.search, semantic)
        request = SearchRequest(
            query,
            where,
            view_limit(limit_of(limit), current or as_of is not None),
            concept=concept,
            exclude=set(exclude),
            mode=mode,
            example=example,
            min_score=min_score,
            now=asked_at,
            asker=check_who(asker, "search: asker") if asker is not None else None,
        )
        hits = self._with_tiers(engine.search(request), request, include_archive)
        shown = present(
            hits,
            limit_of(limit),
            current=current,
            as_of=as_of,
            fetch=self.backend.get_moments,
            latest_values_first=query if self.context.config.facts.enabled else None,
        )
        return SearchResults(shown, query, min_score)

    def slice(
        self,
        query: str,
        budget_tokens: int,
        audience: str,
        session: str | None,
        fmt: SliceFormat,
        limit: int | None,
        exclude: Collection[str],
        mode: Mode,
        scope: GuestScope | None = None,
        asked_at: datetime | None = None,
    ) -> Slice:
        check_query(query, "slice", required=True)
        if not 1 <= budget_tokens <= MAX_SLICE_TOKENS:
            raise InvalidInput(
                f"slice: budget_tokens must be between 1 and {MAX_SLICE_TOKENS}, "
                f"not {budget_tokens}"
            )
        if fmt not in ("markdown", "yaml"):
            raise InvalidInput(f"slice: format {fmt!r} is not markdown or yaml")
        within = scoping.Within(scope, session)
        budget_tokens = within.budget(budget_tokens)
        # Enough hits to fill the budget with room for those that do not fit.
        pool = limit or min(MAX_SEARCH_LIMIT, max(20, budget_tokens // 40))
        found = self.search(
            query,
            limit=within.pool(pool),
            exclude=exclude,
            mode=mode,
            asked_at=asked_at,
            **within.filters(),
        )
        hits = [hit for hit in found if within.admits(hit.moment)][:pool]
        sessions: dict[str, Session] = {}

        def session_of(session_id: str) -> Session:
            if session_id not in sessions:
                sessions[session_id] = self.sessions.get(session_id)
            return sessions[session_id]

        around = self.turns_around([hit.moment for hit in hits])
        return build_slice(
            query,
            hits,
            budget_tokens=budget_tokens,
            audience=audience,
            counter=self.context.tokens,
            session_of=session_of,
            neighbours_of=lambda m: [n for n in around.get(m.id, []) if within.admits(n)],
            fmt=fmt,
            admit=within.admits_item,
        )

    def turns_around(self, moments: Sequence[Moment]) -> dict[str, list[Moment]]:
        wanted = sorted({i for moment in moments for i in neighbour_ids(moment.number)})
        found = {m.id: m for m in self.backend.get_moments(wanted)} if wanted else {}
        return {
            moment.id: [
                near
                for i in neighbour_ids(moment.number)
                if (near := found.get(i)) is not None
                and near.session == moment.session
                and near.redacted is None
            ]
            for moment in moments
        }

    def _with_tiers(
        self, hits: list[SearchHit], request: SearchRequest, include_archive: bool
    ) -> list[SearchHit]:
        """Tag rollups; with ``include_archive``, rank archived hits among the others by
        reciprocal rank (each list counts alike) and tag them."""
        tagged = [
            h.model_copy(update={"tier": "rollup", "explain": h.explain.with_mark(Mark.ROLLUP)})
            if h.moment.rollup is not None
            else h
            for h in hits
        ]
        if not include_archive:
            return tagged
        archive = self.archive.cold_archive()
        found = archive.search(self.backend, request.query, request.where, request.limit)
        allowed = (
            None
            if request.concept is None
            else set(self.backend.archived_with_concept(normalize_concept(request.concept)))
        )
        k = self.context.config.search.fusion.rrf_k
        merged: list[tuple[float, int, SearchHit]] = []
        for rank, hit in enumerate(tagged, 1):
            merged.append(
                (
                    1 / (k + rank),
                    hit.moment.number,
                    hit.model_copy(update={"score": 1 / (k + rank)}),
                )
            )
        rank = 0
        for moment, raw in found:
            if moment.id in request.exclude or (allowed is not None and moment.id not in allowed):
                continue
            if request.min_score > 0 and not matches_words(moment.content.text, request.query):
                continue  # matched by stopwords only
            rank += 1
            explain = Explanation(
                signals={Signal.LEXICAL: SignalPart(rank, raw)}, marks=(Mark.ARCHIVED,)
            )
            hit = SearchHit(moment=moment, score=1 / (k + rank), explain=explain, tier="archived")
            merged.append((hit.score, moment.number, hit))
        merged.sort(key=lambda item: (-item[0], item[1]))
        return [hit for _, _, hit in merged[: request.limit]]

    def _concept_with_archive(self, concept: str) -> ConceptEntry | None:
        """The concept's active moments and rollups, and the archived moments it had."""
        entry = self.backend.get_concept(concept)
        archived = self.backend.archived_with_concept(concept)
        if entry is None and not archived:
            return None
        return (entry or ConceptEntry(concept=concept)).model_copy(update={"archived": archived})


def _example(image: Path | str | None, audio: Path | str | None) -> str | None:
    """The signature of the example to search by (InvalidInput for a bad file)."""
    if image is not None and audio is not None:
        raise InvalidInput("search: give an example image or an example audio, not both")
    if image is None and audio is None:
        return None
    from ..media.store import attachment_of

    return attachment_of(image or audio or "", "image" if image is not None else "audio").signature
