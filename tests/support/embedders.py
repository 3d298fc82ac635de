"""Embedders for tests: the real model noting its queries (:class:`QueryLog`), a deterministic
fake that gives every process the same vector for a text, and a bag of words for LangGraph's
store index."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from agent_notebook.embed import LangChainEmbedder, MiniLmEmbedder


class QueryLog:
    """The real model, noting which thread embeds each query."""

    symmetric = True

    def __init__(self, inner: MiniLmEmbedder) -> None:
        self.inner, self.model_id, self.dim = inner, inner.model_id, inner.dim
        self.queries: list[tuple[str, str]] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append((text, threading.current_thread().name))
        return self.inner.embed_query(text)

    @property
    def texts(self) -> list[str]:
        """The query texts embedded, in order."""
        return [text for text, _ in self.queries]


#: The dimension of :func:`fake_embedder`'s vectors.
FAKE_DIM = 32


def fake_embedder() -> LangChainEmbedder:
    """The same vector for the same text in every process: a moment's own text finds it."""
    return LangChainEmbedder(DeterministicFakeEmbedding(size=FAKE_DIM), "fake-32", dim=FAKE_DIM)


WORDS = ["cat", "rent", "train", "food", "music"]


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


class AsymmetricBag(BagOfWords):
    """A bag of words that embeds a query apart from a document, as e5 does (its own
    constant), noting which method embedded each text."""

    def __init__(self, extra: float = 0.1, query_extra: float = 3.0) -> None:
        super().__init__(extra)
        self.query_extra = query_extra
        self.calls: list[tuple[str, str]] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += [("documents", t) for t in texts]
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls.append(("query", text))
        return [*self._embed(text)[:-1], self.query_extra]
