"""``NotebookVectorStore`` on a real SQLite notebook embedding with the suite's own fake
embeddings: LangChain's standard ``VectorStore`` suite, then what it does not cover (the
moments behind the documents, tombstones, bad input)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from agent_notebook import InvalidInput, Notebook
from agent_notebook.embed import LangChainEmbedder
from agent_notebook.errors import NotFound
from agent_notebook.langchain import NotebookVectorStore
from agent_notebook.langchain.vectorstore import DOCUMENT_TOOL, STORE_WHO
from agent_notebook.storage import SqliteBackend, StorageBackend
from agent_notebook.storage.postgres import PostgresBackend
from tests.support import pg

# The standard suite's async tests are plain ``async def``: anyio's plugin runs them.
pytestmark = pytest.mark.anyio


def fake_notebook(root: Path, backend: StorageBackend | None = None) -> Notebook:
    """A notebook (SQLite unless ``backend``) whose vectors come from the standard suite's
    fake embeddings."""
    embedder = LangChainEmbedder(VectorStoreIntegrationTests.get_embeddings(), "fake")
    backend = backend or SqliteBackend(root / "notebook.db")
    return Notebook(backend, embedder=embedder, background_embedding=False)


class TestVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, tmp_path: Path) -> Iterator[NotebookVectorStore]:  # type: ignore[override]
        nb = fake_notebook(tmp_path)
        yield NotebookVectorStore(nb)
        nb.close()


class TestVectorStoreStandardPostgres(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, tmp_path: Path) -> Iterator[NotebookVectorStore]:  # type: ignore[override]
        backend = PostgresBackend(pg.database_url(), schema_name=pg.schema_for(tmp_path))
        nb = fake_notebook(tmp_path, backend)
        yield NotebookVectorStore(nb)
        nb.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[NotebookVectorStore]:
    nb = fake_notebook(tmp_path)
    yield NotebookVectorStore(nb)
    nb.close()


def test_documents_are_moments_of_the_stores_session(store: NotebookVectorStore) -> None:
    nb = store.notebook
    ids = store.add_documents(
        [Document(page_content="The TGV to Lyon leaves at 09:04", metadata={"page": 3})],
        ids=["trip-1"],
    )
    assert ids == ["trip-1"] and store.session is not None
    (moment,) = nb.moments(store.session)
    assert moment.source_id == "trip-1" and moment.role == "document"
    assert moment.content.text == "The TGV to Lyon leaves at 09:04"
    assert [(a.tool, a.arguments) for a in moment.actions] == [(DOCUMENT_TOOL, {"page": 3})]
    assert nb.get_session(store.session).task == "LangChain documents"
    assert nb.unembedded() == 0  # embedded before add_documents returned
    # the notebook's own search finds it too, and the retriever of the store
    assert [h.moment.id for h in nb.search("TGV Lyon")] == [moment.id]
    found = store.as_retriever(search_kwargs={"k": 1}).invoke("TGV")
    assert found == [Document(id="trip-1", page_content=moment.content.text, metadata={"page": 3})]


def test_replace_and_delete_leave_tombstones(store: NotebookVectorStore) -> None:
    nb = store.notebook
    store.add_texts(["Seat 42", "Hotel by Part-Dieu"], [{"v": 1}, {}], ids=["a", "b"])
    store.add_texts(["Seat 42"], [{"v": 1}], ids=["a"])  # unchanged: nothing recorded
    assert len(nb.moments(store.session)) == 2
    store.add_texts(["Seat 43"], [{"v": 2}], ids=["a"])
    store.delete(["b", "never-added"])
    moments = nb.moments(store.session)
    assert len(moments) == 3
    gone = [m for m in moments if m.redacted is not None]
    assert {m.source_id for m in gone} == {"a", "b"}
    for m in gone:  # the text and metadata are gone; who, when and why are left
        assert m.content.text == "" and m.actions == [] and m.redacted is not None
        assert m.redacted.who == STORE_WHO and "LangChain vector store" in m.redacted.why
    assert store.get_by_ids(["b", "a"]) == [
        Document(id="a", page_content="Seat 43", metadata={"v": 2})
    ]
    store.delete()  # all of them
    assert store.get_by_ids(["a"]) == [] and store.similarity_search("Seat", k=5) == []


def test_bad_input_changes_nothing(store: NotebookVectorStore) -> None:
    nb = store.notebook
    with pytest.raises(InvalidInput, match="document"):
        store.add_texts(["x"], [{"when": object()}])
    assert store.session is None and nb.sessions() == []  # no session started for it
    store.add_texts(["kept"], ids=["k"])
    before = [m.model_dump() for m in nb.moments()]
    with pytest.raises(InvalidInput, match="document"):
        store.add_texts(["x", "kept changed"], [{"when": object()}, {}], ids=["x", "k"])
    with pytest.raises(InvalidInput, match="given twice"):
        store.add_texts(["x", "y"], ids=["same", "same"])
    with pytest.raises(InvalidInput, match="2 texts, 1 metadatas"):
        store.add_texts(["x", "y"], [{}])
    with pytest.raises(InvalidInput, match="non-empty strings"):
        nb.moments_by_source(store.session or "", [""])
    assert [m.model_dump() for m in nb.moments()] == before
    with pytest.raises(InvalidInput, match=r"unknown argument\(s\) filter"):
        store.similarity_search("kept", filter={"page": 1})
    with pytest.raises(NotFound):
        NotebookVectorStore(nb, session="s_2026-01-01_009")
    with pytest.raises(InvalidInput, match="needs notebook="):
        NotebookVectorStore.from_texts(["x"], VectorStoreIntegrationTests.get_embeddings())


def test_from_texts_and_an_existing_session(tmp_path: Path) -> None:
    nb = fake_notebook(tmp_path)
    try:
        first = NotebookVectorStore.from_texts(["one", "two"], nb.semantic, notebook=nb)  # type: ignore[arg-type]
        assert first.session is not None
        again = NotebookVectorStore(nb, session=first.session, mode="lexical")
        assert [d.page_content for d in again.similarity_search("two", k=5)] == ["two"]
        assert again.embeddings is not None and again.embeddings.embed_query("x")
    finally:
        nb.close()
