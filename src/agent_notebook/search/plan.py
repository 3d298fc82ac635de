"""What one search will do, decided from the request and the settings alone (pure, no
I/O): which signals run on which words and with what weights, which hits are judged by
their words, which steps shape the results. :class:`.engine.SearchEngine` carries a plan
out against the backend.

A query is read three ways here: as a question (the default), as several lines (its
``latest`` turns are ranked once more on their own) and as a speaker-tagged dialogue (what
the user ``said`` lately is what the vector signal embeds; the lexical signals weigh
``dialogue.lexical_weight``, 0 by default: not ranked at all).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from ..config import SearchSettings
from ..core.lexical import stem, tokenize
from ..model import now_utc
from .asked import NO_TIME, AskedTime, asked_time, asks, gathers
from .explanation import Signal
from .hybrid import MEDIA_WEIGHT
from .query import (
    content_words,
    dialogue_context,
    dialogue_words,
    is_time_question,
    latest_turns,
    speaker_turns,
)
from .request import SearchRequest

__all__ = [
    "CONTEXT_WORDS",
    "DIALOGUE_WORDS",
    "SearchPlan",
    "VectorQuery",
    "plan_search",
]

#: What the vector signal embeds of a dialogue: its newest words, at most this many (an
#: embedder cuts a long text's end, and embedding time grows with the length: 96 words are
#: about 125 of MiniLM's word pieces; a user's last three turns are 33-51 words in the
#: dialogue dev cases, and LoCoMo's long turns reach 256).
DIALOGUE_WORDS = 96
#: ... and of the rest of the dialogue's last turns (``dialogue.context_turns``), at most this
#: many newest words (in the dialogue dev cases that rest is the other side's three replies
#: and the user's turn before: 30-60 words).
CONTEXT_WORDS = 96


@dataclass(frozen=True, slots=True)
class VectorQuery:
    """What the vector signal embeds: ``text``, and ``latest`` weighing ``latest_weight``
    beside it (a query's latest turns, a dialogue's exchange around what the user said)."""

    text: str
    latest: str | None
    latest_weight: float


@dataclass(frozen=True, slots=True)
class SearchPlan:
    """One search, decided: what :meth:`.engine.SearchEngine.search` runs, in order."""

    #: The request, its ``min_score`` lowered to ``dialogue.min_score`` for a dialogue.
    request: SearchRequest
    #: Candidates each signal returns: ``fusion.candidates``, or more for a large limit.
    pool: int
    #: The query has words: not an example alone (which is ranked by the media signal
    #: only, without priors: a near copy must not fall behind a far one that is newer).
    words: bool
    #: What the lexical signal reads: the query without speaker tags, and without its
    #: stopwords when it is dialogue-long.
    spoken: str
    #: A query of several lines: its last ``dialogue.latest_turns`` turns (else None).
    latest: str | None
    #: A speaker-tagged dialogue: what the user said lately (else None).
    said: str | None
    #: The signals that run, in the order they are fused.
    signals: tuple[Signal, ...]
    #: Each signal's weight in the fusion (every signal, running or not).
    weights: Mapping[Signal, float]
    #: The query whose lexical hits are the moments having a word of ``spoken`` other than
    #: a stopword: "" when none can (none has such a word, or a dialogue is read by its
    #: meaning), None when that list is not needed or is the lexical ranking itself.
    content_query: str | None
    #: The lexical ranking keeps only those moments (a match on stopwords alone is dropped).
    lexical_by_content: bool
    #: The same for the latest turns' lexical ranking: the query of their moments having a
    #: word other than a stopword (None: every hit counts).
    latest_content_query: str | None
    vector: VectorQuery | None
    #: Hits are scored for relevance and those under ``request.min_score`` left out.
    judge_relevance: bool
    #: The priors (importance, recency) multiply each hit's score.
    priors: bool
    #: Hits spoken by a speaker the question names get ``priors.speaker_bonus``.
    name_speakers: bool
    #: Candidates pass part of their score to their reply and neighbours (hybrid only).
    spread_to_neighbours: bool
    #: Sessions with several candidates lift them (not by example alone).
    session_evidence: bool
    #: The head of the results spans sessions (``coverage.session_decay`` < 1).
    spread_sessions: bool
    #: A question about time: the results that carry a date get ``priors.time_question_bonus``.
    time_question: bool
    #: The stems the question asks about, for the coverage step (empty: no such step).
    aspects: tuple[str, ...]
    #: The ranked hits loaded whole: ``limit``, or ``coverage.window`` for the coverage step
    #: or a time question.
    shown: int
    #: When a one-line question points (its time words, read against ``request.now``, the
    #: time it is asked); its words without them are what the lexical and vector signals read.
    asked: AskedTime = NO_TIME
    #: A question that gathers answers told in several sessions ("which countries…"): the
    #: head spreads over sessions (``coverage.gather_decay``).
    gathers: bool = False
    #: A one-line query (a question or a few words): the people it names are read, and its
    #: head is read for what it asks (:func:`.ranking.read_for_the_question`).
    one_line: bool = False
    #: A one-line question's stems (not stopwords): a recorded question having most of them
    #: is the query asked again (:func:`.asked.echoes`); empty for any other query.
    question_stems: frozenset[str] = frozenset()

    @property
    def limit(self) -> int:
        return self.request.limit


def plan_search(
    request: SearchRequest, settings: SearchSettings, semantic: bool, read_time: bool = True
) -> SearchPlan:
    """The plan for ``request`` under ``settings``; ``semantic``: an embedder is there (a
    vector signal can run); ``read_time``: a question's time words are read (else they are
    words like any other: when they point at no moment of the notebook)."""
    wanted = request.limit + len(request.exclude)
    words = request.example is None or bool(request.query.strip())
    latest = latest_turns(request.query, settings.dialogue.latest_turns) if words else None
    said, lexical_scale = _dialogue(request, settings, semantic) if words else (None, 1.0)
    # A one-line question: what it says of time, read against when it is asked.
    question = words and latest is None and said is None and "\n" not in request.query.strip()
    reads_time = read_time and question and settings.priors.time_window_bonus > 0
    asked = asked_time(request.query, (request.now or now_utc()).date()) if reads_time else NO_TIME
    query = asked.words if asked and content_words(asked.words) else request.query
    if said is not None:
        request = replace(request, min_score=min(request.min_score, settings.dialogue.min_score))
    mode = request.mode
    lexical = words and mode in ("hybrid", "lexical") and lexical_scale > 0
    # Beside a vector signal a match on stopwords alone stays in the lexical ranking, as
    # weak evidence the vector signal and min_score judge (leave-one-conversation-out
    # on LoCoMo chose that in hybrid, and dropping them in lexical mode).
    judged_by_words = mode == "lexical" or not semantic
    drop_stopword_only = lexical and settings.fusion.content_match and judged_by_words
    spoken = dialogue_words(query)
    wordiness = _wordiness(spoken, settings)
    if wordiness < 1:  # a dialogue: its stopwords say nothing; one search, not two
        spoken = " ".join(content_words(spoken))
    signals = _signals(request, settings, semantic, words, lexical, latest)
    lexical_weight = lexical_scale * (settings.fusion.lexical_weight if mode != "lexical" else 1.0)
    weights = {
        Signal.LEXICAL: lexical_weight * wordiness,
        Signal.LEXICAL_LATEST: lexical_weight * settings.dialogue.latest_turn_weight,
        Signal.VECTOR: settings.fusion.vector_weight if mode != "vector" else 1.0,
        Signal.CONCEPT: settings.fusion.concept_weight,
        Signal.DATE: settings.fusion.date_weight,
        Signal.MEDIA: MEDIA_WEIGHT,
    }
    # A dialogue read by meaning: sharing some of its many ordinary words makes no memory
    # relevant (and looking them up at 100k moments costs a lexical search).
    by_meaning = said is not None and semantic and mode != "lexical"
    wanted_content = drop_stopword_only or request.min_score > 0
    if by_meaning:
        content_query: str | None = ""
    else:
        content_query = _content_query(spoken) if words and wanted_content else None
    latest_content_query = None
    if (
        Signal.LEXICAL_LATEST in signals
        and settings.fusion.content_match
        and latest
        and content_words(latest)
    ):
        latest_content_query = _content_query(latest)  # never "": it has such a word
    aspects = _aspects(spoken, settings) if words and latest is None else ()
    time_question = (
        words and settings.priors.time_question_bonus > 0 and is_time_question(request.query)
    )
    return SearchPlan(
        request=request,
        pool=max(settings.fusion.candidates, wanted),
        words=words,
        spoken=spoken,
        latest=latest,
        said=said,
        signals=signals,
        weights=MappingProxyType(weights),
        content_query=content_query,
        # A query of stopwords only ("what is it") has nothing else to match by.
        lexical_by_content=drop_stopword_only and bool(content_words(spoken)),
        latest_content_query=latest_content_query,
        vector=_vector_query(replace(request, query=query), settings, latest, said)
        if Signal.VECTOR in signals
        else None,
        judge_relevance=words and request.min_score > 0,
        priors=words,
        # A question's named speaker; a dialogue's tags name its speakers in every turn.
        name_speakers=words
        and said is None
        and latest is None
        and settings.priors.speaker_bonus > 0,
        spread_to_neighbours=mode == "hybrid",
        # By example alone, the nearest copy comes first, whatever its session.
        session_evidence=words,
        spread_sessions=settings.coverage.session_decay < 1,
        time_question=time_question,
        aspects=aspects,
        # The best coverage_window, whatever the limit: the same head for any limit.
        shown=max(request.limit, settings.coverage.window)
        if aspects or time_question or asked or question
        else request.limit,
        asked=asked,
        gathers=question and gathers(request.query),
        one_line=question,
        question_stems=frozenset(stem(w) for w in content_words(query))
        if question and asks(request.query)
        else frozenset(),
    )


def _signals(
    request: SearchRequest,
    settings: SearchSettings,
    semantic: bool,
    words: bool,
    lexical: bool,
    latest: str | None,
) -> tuple[Signal, ...]:
    mode = request.mode
    runs = {
        Signal.LEXICAL: lexical,
        Signal.LEXICAL_LATEST: lexical
        and latest is not None
        and settings.dialogue.latest_turn_weight > 0,
        Signal.VECTOR: words and mode in ("hybrid", "vector") and semantic,
        Signal.CONCEPT: words and mode == "hybrid",
        Signal.DATE: words and mode != "vector" and settings.fusion.date_weight > 0,
        Signal.MEDIA: request.example is not None,
    }
    return tuple(signal for signal, run in runs.items() if run)


def _dialogue(
    request: SearchRequest, settings: SearchSettings, semantic: bool
) -> tuple[str | None, float]:
    """For a speaker-tagged dialogue, what the user said lately (``dialogue.turns``: the
    vector signal reads it alone) and the scale of the lexical signals' weights
    (``dialogue.lexical_weight`` beside a vector signal; 0: not ranked at all); for
    any other query, None and 1."""
    said = speaker_turns(
        request.query, settings.dialogue.speaker, settings.dialogue.turns, DIALOGUE_WORDS
    )
    if said is None or request.mode != "hybrid" or not semantic:
        return said, 1.0
    return said, settings.dialogue.lexical_weight


def _wordiness(query: str, settings: SearchSettings) -> float:
    """The whole query's lexical weight, 1 for a question: a dialogue-long query matches
    a moment by a few of its many ordinary words, which says little of what it is
    about (its latest turns are ranked on their own for their words)."""
    longest = settings.dialogue.long_query_terms
    distinct = len({stem(word) for word in content_words(query)})
    return 1.0 if not longest or distinct <= longest else longest / distinct


def _content_query(query: str) -> str | None:
    """The words of ``query`` other than stopwords ("the door code" matches many moments
    by "the"), to look up the moments having one; "" when every word is a stopword, None
    when none is (the lexical ranking itself is that list then). The lexical ranking keeps
    the stopwords (BM25 ranks better with them), so the other words are looked up once
    more for this."""
    words = content_words(query)
    if not words:
        return ""
    if words == tokenize(query):
        return None
    return " ".join(words)


def _vector_query(
    request: SearchRequest, settings: SearchSettings, latest: str | None, said: str | None
) -> VectorQuery:
    """A dialogue's vector query: what the user ``said`` lately and, weighing less, the
    exchange around it (``dialogue.context_turns``); another query of several lines: the
    whole and its ``latest`` turns."""
    if said is None:
        return VectorQuery(request.query, latest, settings.dialogue.latest_turn_weight)
    context = None
    if settings.dialogue.context_weight > 0:
        context = dialogue_context(
            request.query,
            settings.dialogue.speaker,
            settings.dialogue.turns,
            settings.dialogue.context_turns,
            CONTEXT_WORDS,
        )
    return VectorQuery(said, context, settings.dialogue.context_weight)


def _aspects(query: str, settings: SearchSettings) -> tuple[str, ...]:
    """The stems a question asks about, for :func:`.hybrid.cover_query`: its words
    that are not stopwords, when it has two to ``dialogue.long_query_terms`` of them (a long
    query, like a dialogue so far, is not a list of things asked)."""
    if settings.coverage.gain <= 0:
        return ()
    asked = tuple(dict.fromkeys(stem(word) for word in content_words(query)))
    longest = settings.dialogue.long_query_terms
    return asked if len(asked) >= 2 and (not longest or len(asked) <= longest) else ()
