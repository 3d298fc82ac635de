"""``NotebookVectorStore`` on a real SQLite notebook embedding with the suite's own fake
embeddings: LangChain's standard ``VectorStore`` suite, then what it does not cover (the
moments behind the documents, tombstones, bad input)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
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
    with pytest.raises(InvalidInput, match=r"unknown argument\(s\) filters"):
        store.similarity_search("kept", filters={"page": 1})
    with pytest.raises(InvalidInput, match="filter must be"):
        store.similarity_search("kept", filter=["page"])  # type: ignore[arg-type]
    with pytest.raises(NotFound):
        NotebookVectorStore(nb, session="s_2026-01-01_009")
    with pytest.raises(InvalidInput, match="needs notebook="):
        NotebookVectorStore.from_texts(["x"], VectorStoreIntegrationTests.get_embeddings())


def test_from_texts_and_an_existing_session(tmp_path: Path) -> None:
    nb = fake_notebook(tmp_path)
    try:
        embedding = VectorStoreIntegrationTests.get_embeddings()  # equal to the notebook's
        first = NotebookVectorStore.from_texts(["one", "two"], embedding, notebook=nb)
        assert first.session is not None
        again = NotebookVectorStore(nb, session=first.session, mode="lexical")
        assert [d.page_content for d in again.similarity_search("two", k=5)] == ["two"]
        assert again.embeddings is not None and again.embeddings.embed_query("x")
    finally:
        nb.close()


def test_a_notebook_opened_with_a_langchain_embedder_searches_with_it(tmp_path: Path) -> None:
    """docs/langchain.md: ``Notebook.open(home, embedder=LangChainEmbedder(...))``; the
    store's ``embedding`` is checked to be that model; a bare ``Embeddings`` is refused."""
    embeddings = VectorStoreIntegrationTests.get_embeddings()
    home = tmp_path / "home"
    with pytest.raises(InvalidInput, match=r"wrap it: embedder=LangChainEmbedder"):
        Notebook.open(home, embedder=embeddings)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="embedder must be"):
        Notebook.open(home, embedder="minilm")  # type: ignore[arg-type]
    embedder = LangChainEmbedder(embeddings, "fake")
    with Notebook.open(home, embedder=embedder, background_embedding=False) as nb:
        assert nb.semantic is not None and nb.semantic.model_id == "fake"
        store = NotebookVectorStore.from_texts(
            ["Seat 42", "Hotel by Part-Dieu"], embeddings, notebook=nb, ids=["a", "b"]
        )
        assert store.embeddings is embeddings
        assert [
            d.id for d in store.similarity_search_by_vector(embeddings.embed_query("Seat 42"), k=1)
        ] == ["a"]
        other = DeterministicFakeEmbedding(size=7)
        with pytest.raises(InvalidInput, match=r"Notebook\.open"):
            NotebookVectorStore(nb, embedding=other)
        with pytest.raises(InvalidInput, match=r"Notebook\.open"):
            NotebookVectorStore.from_texts(["x"], other, notebook=nb)
    with Notebook.open(home, embedder=None) as lexical:  # the failed opens left nothing open
        with pytest.raises(InvalidInput, match="no embedder"):
            NotebookVectorStore(lexical, embedding=embeddings)
        with pytest.raises(InvalidInput, match="no embedder"):
            NotebookVectorStore(lexical).similarity_search_by_vector([0.0] * 6)


DOCS = [
    Document(id="seat", page_content="Seat 42", metadata={"kind": "ticket", "page": 1}),
    Document(id="seat-copy", page_content="Seat 42", metadata={"kind": "ticket", "page": 2}),
    Document(id="train", page_content="The 09:04 TGV to Lyon", metadata={"kind": "ticket"}),
    Document(id="hotel", page_content="Hotel by Part-Dieu", metadata={"kind": "hotel"}),
    Document(id="gone", page_content="Seat 41", metadata={"kind": "ticket"}),
]


def _ids(docs: list[Document]) -> list[str]:
    return [str(doc.id) for doc in docs]


def test_searches_by_vector_and_by_marginal_relevance_with_a_filter(
    store: NotebookVectorStore,
) -> None:
    store.add_documents(DOCS)
    store.delete(["gone"])
    seat = store.embeddings.embed_query("Seat 42")  # type: ignore[union-attr]
    # by vector: the two copies are nearest (cosine about 1); a filter keeps only what passes
    near = store.similarity_search_with_score_by_vector(seat, k=2)
    assert sorted(_ids([doc for doc, _ in near])) == ["seat", "seat-copy"]
    assert all(score > 0.99 for _, score in near)  # 1 but for the stored vectors' rounding
    assert _ids(store.similarity_search_by_vector(seat, k=9)) != []
    assert "gone" not in _ids(store.similarity_search_by_vector(seat, k=9))  # redacted
    assert _ids(store.similarity_search_by_vector(seat, k=9, filter={"kind": "hotel"})) == ["hotel"]
    assert _ids(store.similarity_search_by_vector(seat, k=9, filter={"page": 2})) == ["seat-copy"]
    assert store.similarity_search_by_vector(seat, filter={"kind": "car"}) == []
    by_test = store.similarity_search_by_vector(
        seat, k=9, filter=lambda d: "Lyon" in d.page_content
    )
    assert _ids(by_test) == ["train"]
    # the notebook's own search, within the filter
    tickets = store.similarity_search("Seat 42", k=9, filter={"kind": "ticket"})
    assert sorted(_ids(tickets)) == ["seat", "seat-copy", "train"]
    assert _ids(store.similarity_search("Seat 42", k=9, filter={"kind": "hotel"})) == ["hotel"]
    scored = store.similarity_search_with_relevance_scores("Seat", k=9, filter={"page": 1})
    assert [doc.id for doc, _ in scored] == ["seat"]
    # maximal marginal relevance: the nearest first, then not its copy but something else
    picked = store.max_marginal_relevance_search_by_vector(seat, k=2, lambda_mult=0.25)
    assert picked[0].id in {"seat", "seat-copy"} and len(picked) == 2
    assert {"seat", "seat-copy"} - set(_ids(picked))  # the copy adds nothing: left out
    assert _ids(store.max_marginal_relevance_search("Seat 42", k=1, filter={"page": 2})) == [
        "seat-copy"
    ]
    assert _ids(
        store.max_marginal_relevance_search("Seat 42", k=3, fetch_k=9, filter={"kind": "hotel"})
    ) == ["hotel"]
    retriever = store.as_retriever(search_type="mmr", search_kwargs={"k": 1, "filter": {"page": 1}})
    assert _ids(retriever.invoke("Seat 42")) == ["seat"]
    with pytest.raises(InvalidInput, match="lambda_mult"):
        store.max_marginal_relevance_search("Seat", lambda_mult=2)
    with pytest.raises(InvalidInput, match="unknown argument"):
        store.similarity_search_by_vector(seat, speaker="ana")


async def test_the_async_searches_take_the_filter_too(store: NotebookVectorStore) -> None:
    await store.aadd_documents(DOCS)
    seat = store.embeddings.embed_query("Seat 42")  # type: ignore[union-attr]
    found = await store.asimilarity_search_by_vector(seat, k=9, filter={"kind": "hotel"})
    assert _ids(found) == ["hotel"]
    found = await store.asimilarity_search("Seat", k=9, filter={"page": 2})
    assert _ids(found) == ["seat-copy"]
    found = await store.amax_marginal_relevance_search("Seat 42", k=2, filter={"kind": "ticket"})
    assert len(found) == 2 and {doc.metadata["kind"] for doc in found} == {"ticket"}
    found = await store.amax_marginal_relevance_search_by_vector(seat, k=1, filter={"page": 1})
    assert _ids(found) == ["seat"]
