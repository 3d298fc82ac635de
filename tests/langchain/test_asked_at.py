"""When a question is asked (issue 42), with LangChain: the retriever's ``asked_at`` (a
field, or one call's) and the vector store's ``similarity_search(..., asked_at=)`` read
"yesterday" from it; a bad one is an InvalidInput naming it. A real notebook (lexical)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_notebook import InvalidInput, Notebook
from agent_notebook.langchain import NotebookRetriever
from agent_notebook.langchain.vectorstore import NotebookVectorStore
from agent_notebook.storage import SqliteBackend

QUESTION = "what did we decide yesterday"
LAKE = "We decided to book the lake house."
CITY = "We decided on the city flat."


@pytest.fixture
def decided(tmp_path: Path) -> Iterator[tuple[Notebook, str]]:
    """A notebook with the two decisions, 25 November of 2026 and 2027, among filler days,
    in one session (the vector store's)."""
    nb = Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=None)
    drafts = [
        {
            "text": decision if day == 5 else f"Filler about groceries, day {day}.",
            "timestamp": datetime(year, 11, 20, 10, tzinfo=UTC) + timedelta(days=day),
        }
        for year, decision in ((2026, LAKE), (2027, CITY))
        for day in range(10)
    ]
    session, _ = nb.record_in_new_session("Holidays", drafts)
    yield nb, session.id
    nb.close()


def test_the_retriever_asks_at_a_time(decided: tuple[Notebook, str]) -> None:
    nb, _ = decided
    then = NotebookRetriever(notebook=nb, asked_at=datetime(2026, 11, 26, tzinfo=UTC))
    assert then.invoke(QUESTION)[0].page_content == LAKE
    assert then.invoke(QUESTION, asked_at="2027-11-26T09:00:00Z")[0].page_content == CITY
    with pytest.raises(InvalidInput, match="asked_at"):
        then.invoke(QUESTION, asked_at="yesterday")


def test_the_vector_store_asks_at_a_time(decided: tuple[Notebook, str]) -> None:
    nb, session = decided
    store = NotebookVectorStore(nb, session=session, mode="lexical")
    for asked_at, decision in ((datetime(2026, 11, 26, tzinfo=UTC), LAKE), (None, CITY)):
        extra = {} if asked_at is None else {"asked_at": asked_at}
        found = store.similarity_search(QUESTION, k=3, **extra)
        assert found[0].page_content == decision
    with pytest.raises(InvalidInput, match="asked_at"):
        store.similarity_search(QUESTION, asked_at=datetime(2026, 11, 26))  # no zone
