"""The semantic index of :attr:`Notebook.store`: LangGraph's ``index`` config, by default
over the notebook's own embedder, so ``store.search(ns, query=...)`` ranks items by meaning.

The default embeds each item's whole value (``fields: ["$"]``, LangGraph's default) with the
embedder the notebook's search uses (:class:`~agent_notebook.embed.Embedder`), compared by
cosine similarity; ``put(..., index=[paths])`` embeds those paths instead and
``index=False`` none. The embedder is only loaded when a put or a search first needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from ...errors import InvalidInput
from .sqlite import IndexFactory, StoreIndex

if TYPE_CHECKING:
    from langgraph.store.base import IndexConfig

    from ...embed import Embedder

__all__ = ["EmbedderEmbeddings", "default_store_index", "lazy_index_config"]


class EmbedderEmbeddings(Embeddings):
    """A notebook :class:`Embedder` (numpy rows) as LangChain ``Embeddings`` (lists of
    floats), which is what LangGraph's stores call."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self.embedder.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self.embedder.embed_query(text)]


def default_store_index(embedder: Embedder | None) -> StoreIndex | None:
    """The index over ``embedder`` (None without one: the store is not semantic)."""
    if embedder is None:
        return None
    config: IndexConfig = {
        "dims": embedder.dim,
        "embed": EmbedderEmbeddings(embedder),
        "fields": ["$"],
    }
    return StoreIndex(config, embedder.model_id)


class _LazyEmbeddings(Embeddings):
    """Embeddings made by ``factory`` on first use, for stores (LangGraph's in-memory one)
    that take their index config up front."""

    def __init__(self, factory: IndexFactory) -> None:
        self._factory = factory
        self._made: Embeddings | None = None

    def _embeddings(self) -> Embeddings:
        if self._made is None:
            index = self._factory()
            if index is None:
                raise InvalidInput(
                    "this notebook has no embedder ('agent-notebook doctor' says why), so its "
                    "store cannot embed: put with index=False, or give Notebook a store_index"
                )
            embed: Any = index.config.get("embed")
            if not isinstance(embed, Embeddings):
                raise InvalidInput("the store's index needs an Embeddings instance as 'embed'")
            self._made = embed
        return self._made

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._embeddings().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self._embeddings().embed_query(text)


def lazy_index_config(factory: Callable[[], StoreIndex | None], dims: int = 0) -> IndexConfig:
    """An index config whose embeddings are made by ``factory`` when first needed."""
    return {"dims": dims, "embed": _LazyEmbeddings(factory), "fields": ["$"]}
