"""LangGraph's own semantic-store behaviour on the notebook's stores, SQLite and PostgreSQL
(vectors as ``bytea`` in the schema, no pgvector; a real server, see ``pg``): a query
returns scores best first, with a filter and a namespace prefix too, and pages; an item put
with ``index=False`` is not indexed; a put replaces an item's vectors and a delete removes
them; ``put(index=[...])`` embeds those paths only; a model change embeds the items again;
both stores score alike. The embeddings are a small bag of words, so scores are exact."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

import pg
from agent_notebook.storage import SqliteBackend, StorageBackend
from agent_notebook.storage.langgraph_store import StoreIndex
from agent_notebook.stores import open_store

WORDS = ["cat", "rent", "train", "food", "music"]
NOTES = ("notes",)


class BagOfWords(Embeddings):
    """A vector of word counts over ``WORDS`` (plus a constant, so none is zero)."""

    def __init__(self, extra: float = 0.1) -> None:
        self.extra = extra

    def _embed(self, text: str) -> list[float]:
        words = text.lower().split()
        return [float(words.count(w)) for w in WORDS] + [self.extra]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def index(model: str = "bag-1", extra: float = 0.1, **config: Any) -> StoreIndex:
    return StoreIndex(
        {"dims": len(WORDS) + 1, "embed": BagOfWords(extra), "fields": ["text"], **config}, model
    )


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StorageBackend]:
    if request.param == "sqlite":
        made: StorageBackend = SqliteBackend(tmp_path / "notebook.db")
    else:
        from agent_notebook.storage.postgres import PostgresBackend

        made = PostgresBackend(pg.database_url(), schema_name=pg.schema_for(tmp_path))
    yield made
    made.close()


def opened(backend: StorageBackend, store_index: StoreIndex | None = None, **kwargs: Any) -> Any:
    store, conn = open_store(backend, index=store_index, **kwargs)
    return store, conn


def fill(store: Any) -> None:
    store.put(NOTES, "cat", {"text": "cat cat food", "kind": "pet"})
    store.put(NOTES, "rent", {"text": "rent", "kind": "money"})
    store.put(NOTES, "train", {"text": "train music", "kind": "trip"})
    store.put(("other",), "cat2", {"text": "cat", "kind": "pet"})


def test_a_query_ranks_by_meaning_with_scores_filters_and_pages(backend: StorageBackend) -> None:
    store, conn = opened(backend, index())
    try:
        fill(store)
        hits = store.search(NOTES, query="cat food")
        assert [h.key for h in hits] == ["cat", "rent", "train"]  # only NOTES
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True) and scores[0] > 0.9
        assert hits[0].value == {"text": "cat cat food", "kind": "pet"}
        everywhere = store.search((), query="cat")
        assert {h.key for h in everywhere[:2]} == {"cat", "cat2"}
        assert [h.key for h in store.search(NOTES, query="cat", filter={"kind": "trip"})] == [
            "train"
        ]
        paged = store.search(NOTES, query="cat food", limit=1, offset=1)
        assert [h.key for h in paged] == ["rent"] and paged[0].score == hits[1].score
        found = asyncio.run(store.asearch(NOTES, query="train"))
        assert found[0].key == "train" and found[0].score is not None
        assert all(h.score is None for h in store.search(NOTES))  # no query: no scores
    finally:
        conn.close()


def test_vectors_go_with_their_item(backend: StorageBackend) -> None:
    store, conn = opened(backend, index())
    try:
        fill(store)
        store.put(NOTES, "quiet", {"text": "cat"}, index=False)
        assert not store.is_indexed(NOTES, "quiet")
        assert "quiet" not in [h.key for h in store.search(NOTES, query="cat")]
        assert store.is_indexed(NOTES, "cat")
        store.put(NOTES, "cat", {"text": "cat"}, index=False)  # replaced, not indexed now
        assert not store.is_indexed(NOTES, "cat")
        store.put(NOTES, "rent", {"text": "music music"})  # replaced: its new text counts
        assert store.search(NOTES, query="music")[0].key == "rent"
        store.delete(NOTES, "rent")
        assert not store.is_indexed(NOTES, "rent")
        assert [h.key for h in store.search(NOTES, query="music")] == ["train"]
        store.put(NOTES, "both", {"title": "cat", "text": "rent rent"}, index=["title"])
        assert store.search(NOTES, query="cat")[0].key == "both"  # its title alone counts
    finally:
        conn.close()


def test_a_model_change_embeds_the_items_again(backend: StorageBackend) -> None:
    store, conn = opened(backend, index("bag-1", extra=0.1))
    fill(store)
    first = store.search(NOTES, query="cat food")[0].score
    conn.close()
    later, conn = opened(backend, index_factory=lambda: index("bag-2", extra=5.0))
    try:
        assert later.get(NOTES, "cat").value["kind"] == "pet"  # no index needed yet
        again = later.search(NOTES, query="cat food")  # the index is made, items embedded
        assert again[0].key == "cat" and again[0].score != first
        expected = BagOfWords(5.0).embed_query("cat cat food")
        assert again[0].score == pytest.approx(
            _cosine(expected, BagOfWords(5.0).embed_query("cat food"))
        )
    finally:
        conn.close()


def test_both_stores_score_alike(tmp_path: Path) -> None:
    from agent_notebook.storage.postgres import PostgresBackend

    results = []
    for made in (
        SqliteBackend(tmp_path / "notebook.db"),
        PostgresBackend(pg.database_url(), schema_name=pg.schema_for(tmp_path)),
    ):
        store, conn = opened(made, index())
        fill(store)
        results.append([(h.key, h.score) for h in store.search(NOTES, query="cat train")])
        conn.close()
        made.close()
    sqlite, postgres = results
    assert [k for k, _ in sqlite] == [k for k, _ in postgres]
    assert [s for _, s in sqlite] == pytest.approx([s for _, s in postgres], abs=1e-6)


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)
