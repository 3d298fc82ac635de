r"""What a search is asked: :class:`SearchRequest`, and the search :data:`Mode`\ s.

The facade (:meth:`agent_notebook.Notebook.search`) checks its arguments and builds one
request; :meth:`.engine.SearchEngine.search` answers it. A benchmark or a tool that runs the
engine itself builds the same request.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal, get_args

from ..storage import MomentFilter

__all__ = ["MODES", "Mode", "SearchRequest"]

#: How a search finds moments: ``hybrid`` fuses every signal (words, meaning, concepts,
#: dates); ``lexical`` the words alone (no model loaded); ``vector`` the meaning alone. The
#: one list of modes: the CLI's ``--mode``, the HTTP API's, MCP's, the web form's and the
#: LangChain retriever's are this one.
Mode = Literal["hybrid", "lexical", "vector"]
#: Every mode, the default first.
MODES: Final[tuple[Mode, ...]] = get_args(Mode)


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search, as the engine takes it (the facade has checked every field)."""

    #: What to look for, in words ("" with an ``example`` alone).
    query: str
    #: The filters: session, time span, speaker.
    where: MomentFilter
    #: How many hits.
    limit: int
    #: Only moments indexed under this concept.
    concept: str | None = None
    #: Moment ids passed over.
    exclude: Collection[str] = ()
    mode: Mode = "hybrid"
    #: The time the priors (recency, importance's decay) read: now when None.
    now: datetime | None = None
    #: The signature of an example image or audio clip: search by example.
    example: str | None = None
    #: Hits less relevant than this (see :func:`.hybrid.relevance`, 0 to 1) are left out.
    min_score: float = 0.0
    #: Who asks (a speaker's name), when the front end knows: a question's "I", "my", "me"
    #: name them (see :func:`.asked.named_people`).
    asker: str | None = None
