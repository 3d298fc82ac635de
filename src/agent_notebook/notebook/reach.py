"""What a redaction or a deletion reaches of one notebook: its context and the parts that
hold copies of what was said (vectors, the fact engine, the cold archive, LangGraph's
store and checkpoints). Apart from :mod:`.redaction` so that opening a notebook loads none
of the redaction's machinery (LangGraph's tables among it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .archive import Archive
    from .context import NotebookContext
    from .facts import FactKeeper
    from .langgraph_state import LangGraphState
    from .vectors import Vectors


@dataclass(frozen=True)
class Reach:
    """The parts of a notebook a redaction reaches. ``vectors`` drops the vectors of
    redacted moments from the index only when it is already loaded."""

    context: NotebookContext
    vectors: Vectors
    facts: FactKeeper
    archive: Archive
    langgraph: LangGraphState
