"""The embedding worker on the real model and real SQLite: it stops promptly at close
(what it did not reach stays queued), pauses while a search runs, embeds shortest texts
together, and a notebook whose vectors are of another model re-embeds instead of mixing."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from agent_notebook.embed import LangChainEmbedder, MiniLmEmbedder, default_embedder
from agent_notebook.notebook.facade import Notebook
from agent_notebook.search import semantic
from agent_notebook.storage import SqliteBackend

WAIT = 60  # seconds; only ever reached when the test fails


@pytest.fixture(scope="module")
def minilm() -> MiniLmEmbedder:
    embedder = default_embedder()
    assert isinstance(embedder, MiniLmEmbedder)
    return embedder


class GatedEmbedder:
    """The real model, whose document batches wait at a gate and are recorded (the test
    decides when the worker may go on), and whose queries can be held too."""

    symmetric = False

    def __init__(self, inner: MiniLmEmbedder) -> None:
        self.inner, self.model_id, self.dim = inner, inner.model_id, inner.dim
        self.events: list[str] = []
        self.batches: list[list[str]] = []
        self.in_batch = threading.Event()  # a document batch has started
        self.gate = threading.Event()  # document batches may run
        self.in_query = threading.Event()
        self.query_gate = threading.Event()
        self.query_gate.set()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.events.append("documents")
        self.batches.append(list(texts))
        self.in_batch.set()
        assert self.gate.wait(WAIT)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.events.append("query")
        self.in_query.set()
        assert self.query_gate.wait(WAIT)
        self.events.append("query done")
        return self.inner.embed_query(text)


def record(nb: Notebook, texts: list[str]) -> None:
    session = nb.start_session("worker")
    nb.record_many(session.id, [{"text": text} for text in texts])


def test_close_stops_the_worker_after_its_chunk_and_leaves_the_rest_queued(
    minilm: MiniLmEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agent_notebook.notebook.facade.CLOSE_EMBED_WAIT_S", 0.1)
    gated = GatedEmbedder(minilm)
    texts = [f"moment number {i} about the trip to Lyon" for i in range(200)]
    nb = Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=gated)
    record(nb, texts)
    assert gated.in_batch.wait(WAIT)  # the worker is inside its first chunk
    closing = threading.Thread(target=nb.close)
    closing.start()
    while not (nb.vectors.index is None or nb.vectors.index._stopping):  # close told it to stop
        closing.join(0.01)
    gated.gate.set()  # the chunk in progress finishes; no other starts
    closing.join(WAIT)
    assert not closing.is_alive()
    assert len(gated.batches) == 1 and len(gated.batches[0]) == semantic.CHUNK
    with Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=minilm) as again:
        assert again.unembedded() == 200 - semantic.CHUNK  # queued, not lost
        assert again.reindex() == 200 - semantic.CHUNK
        assert again.unembedded() == 0


def test_the_worker_waits_for_a_live_search(
    minilm: MiniLmEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search that starts while the worker embeds gets the cores: the worker's next
    chunk starts only after the search's query is embedded."""
    monkeypatch.setattr(semantic, "YIELD_S", WAIT)
    gated = GatedEmbedder(minilm)
    with Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=gated) as nb:
        gated.gate.set()
        record(nb, ["The budget for June is 4000 euros"])  # a vector for the search to find
        assert nb.semantic is not None and nb.semantic.wait_idle(WAIT)
        gated.gate.clear()
        gated.in_batch.clear()
        gated.events.clear()
        record(nb, [f"note {i} on the budget for June" for i in range(3 * semantic.CHUNK)])
        assert gated.in_batch.wait(WAIT)  # chunk 1 runs
        gated.query_gate.clear()
        searching = threading.Thread(target=nb.search, args=("the budget",), daemon=True)
        searching.start()
        assert gated.in_query.wait(WAIT)  # the search is live, its query held
        gated.in_batch.clear()
        gated.gate.set()  # chunk 1 ends; chunk 2 must wait for the search
        assert not gated.in_batch.wait(1.0)
        gated.query_gate.set()
        searching.join(WAIT)
        assert nb.semantic is not None and nb.semantic.wait_idle(WAIT)
        assert gated.events[:4] == ["documents", "query", "query done", "documents"]
        assert nb.unembedded() == 0


def test_the_worker_embeds_shortest_texts_together(minilm: MiniLmEmbedder, tmp_path: Path) -> None:
    """Texts of one model run are padded to the longest: the worker sorts what it reads
    from the queue by length, so a chunk holds texts of about the same length."""
    rng = np.random.default_rng(7)
    lengths = rng.permutation(np.arange(1, 2 * semantic.CHUNK + 1))
    texts = [" ".join(["word"] * int(n)) for n in lengths]
    gated = GatedEmbedder(minilm)
    gated.gate.set()
    with Notebook(
        SqliteBackend(tmp_path / "notebook.db"), embedder=gated, background_embedding=False
    ) as nb:
        record(nb, texts)
        assert nb.reindex() == len(texts)
    sizes = [[len(text.split()) for text in batch] for batch in gated.batches]
    assert sizes == [
        list(range(1, semantic.CHUNK + 1)),
        list(range(semantic.CHUNK + 1, 2 * semantic.CHUNK + 1)),
    ]


def test_vectors_of_another_model_are_replaced_not_mixed(
    minilm: MiniLmEmbedder, tmp_path: Path
) -> None:
    """A notebook embedded by another model (here 16-dimensional) opened with MiniLM: the
    old vectors are never searched with MiniLM's query, every moment waits for a MiniLM
    vector, and reindex replaces them."""
    old = LangChainEmbedder(DeterministicFakeEmbedding(size=16), model_id="old-model-16d")
    path = tmp_path / "notebook.db"
    texts = ["I am vegetarian", "The train to Lyon leaves at 7:40", "My sister has a puppy"]
    with Notebook(SqliteBackend(path), embedder=old, background_embedding=False) as nb:
        record(nb, texts)
        assert nb.reindex() == 3
    with Notebook(SqliteBackend(path), embedder=minilm, background_embedding=False) as nb:
        assert nb.unembedded() == 3  # none of the old vectors counts for MiniLM
        assert nb.search("somewhere to eat without meat", mode="vector") == []
        assert nb.reindex() == 3
        hits = nb.search("somewhere to eat without meat", mode="vector", limit=1)
        assert hits[0].moment.content.text == "I am vegetarian"
        assert nb.backend.get_vectors("old-model-16d") == []  # replaced, one per moment
        assert len(nb.backend.get_vectors(minilm.model_id)) == 3
