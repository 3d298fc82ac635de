"""``NotebookRetriever``: the notebook's hybrid search as a LangChain ``BaseRetriever``."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from ..core.validation import validate_record
from ..notebook.facade import Notebook
from ..search.hits import SearchHit
from ..search.request import Mode

__all__ = ["NotebookRetriever", "SearchFilters", "document_of"]


class SearchFilters(BaseModel):
    """The filters of :meth:`Notebook.search`, as a retriever takes them."""

    model_config = ConfigDict(extra="forbid")

    k: int = 4
    """How many documents (1 to 1000)."""
    session: str | None = None
    """Only this session (an id like s_2026-06-07_001)."""
    speaker: str | None = None
    """Only moments of this speaker, or of this role (``assistant``), ignoring case."""
    since: datetime | None = None
    """Only moments at or after this aware time."""
    until: datetime | None = None
    """Only moments before this aware time."""
    concept: str | None = None
    """Only moments indexed under this concept."""
    mode: Mode = "hybrid"
    """``lexical`` or ``vector`` use one signal; ``hybrid`` fuses them with concepts."""
    exclude: frozenset[str] = frozenset()
    """Moment ids to pass over (say, those already in the conversation)."""
    include_archive: bool = False
    """Search the cold archive too (by words)."""
    min_score: float | None = None
    """Leave out hits less relevant than this (0 keeps every match; None: the notebook's
    ``search.min_score``)."""
    asked_at: datetime | None = None
    """When the question is asked (an aware time): its time words ("yesterday", "last
    week") are read against it; None: now."""


class NotebookRetriever(BaseRetriever, SearchFilters):
    """Moments relevant to a query, best first, as ``Document``\\ s, by
    :meth:`Notebook.search` (lexical, vector and concept matches fused) within the filters
    of :class:`SearchFilters`. Any filter can also be given for one call:
    ``retriever.invoke("Lyon", k=3, speaker="ana")``. ``ainvoke`` runs the search in a
    worker thread, off the event loop. The notebook checks the filters (InvalidInput, which
    names the wrong one).

    Each document's ``id`` is the moment's id and its ``metadata`` says where it comes from:
    ``moment_id``, ``session_id``, ``speaker``, ``role``, ``timestamp`` (ISO 8601, UTC),
    ``score``, ``source_id`` (the id the source gave it, or None), ``tier`` (``active``,
    ``rollup`` or ``archived``) and ``citation`` (``[moment:m_12]``, as the notebook's
    slices and prompts cite it).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    notebook: SkipValidation[Notebook] = Field(exclude=True)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **overrides: Any
    ) -> list[Document]:
        return self._search(query, overrides)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **overrides: Any
    ) -> list[Document]:
        # The facade blocks (SQLite, the embedding model): never on the event loop.
        return await asyncio.to_thread(self._search, query, overrides)

    def filters(self, **overrides: Any) -> SearchFilters:
        """This retriever's filters with ``overrides``; InvalidInput for an unknown or
        ill-typed one."""
        mine = {name: getattr(self, name) for name in SearchFilters.model_fields}
        return validate_record(SearchFilters, {**mine, **overrides}, "NotebookRetriever")

    def _search(self, query: str, overrides: dict[str, Any]) -> list[Document]:
        where = self.filters(**overrides)
        hits = self.notebook.search(
            query,
            session=where.session,
            since=where.since,
            until=where.until,
            speaker=where.speaker,
            concept=where.concept,
            limit=where.k,
            exclude=where.exclude,
            mode=where.mode,
            include_archive=where.include_archive,
            min_score=where.min_score,
            asked_at=where.asked_at,
        )
        return [document_of(hit) for hit in hits]


def document_of(hit: SearchHit) -> Document:
    """A search hit as a ``Document``: the moment's text, its id, its provenance."""
    moment = hit.moment
    return Document(
        id=moment.id,
        page_content=moment.content.text,
        metadata={
            "moment_id": moment.id,
            "session_id": moment.session,
            "speaker": moment.speaker,
            "role": moment.role,
            "timestamp": moment.timestamp.isoformat(),
            "score": hit.score,
            "source_id": moment.source_id,
            "tier": hit.tier,
            "citation": f"[moment:{moment.id}]",
        },
    )
