"""The notebook's embedders as a LangChain ``Embeddings``: the other direction of
:class:`~agent_notebook.embed.base.LangChainEmbedder`.

A LangChain app (a vector store, LangGraph's store ``index``, a retriever of its own) gets
the same vectors the notebook searches with, as plain lists of floats. It lives with the
embedders rather than with the LangChain front end so that the facade may use it too.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.embeddings import Embeddings

from ..errors import NotebookError
from .base import Embedder

__all__ = ["NotebookEmbeddings"]


class NotebookEmbeddings(Embeddings):
    """Any :class:`Embedder` (by default the offline MiniLM model) as LangChain
    ``Embeddings``: ``embed_documents`` gives one ``list[float]`` per text, ``embed_query``
    one ``list[float]``, unit length, ``dim`` numbers each. ``aembed_documents`` and
    ``aembed_query`` are LangChain's: the blocking model runs in an executor, off the
    event loop.

    >>> NotebookEmbeddings().embed_query("train to Lyon")[:2]  # doctest: +SKIP
    [0.0213..., -0.0871...]
    """

    def __init__(self, embedder: Embedder | None = None) -> None:
        """``embedder``: None for the offline default (NotebookError, saying why, where it
        cannot run), or any :class:`Embedder`, such as ``notebook.semantic.embedder``."""
        if embedder is None:
            from . import default_embedder, default_embedder_status

            embedder = default_embedder()
            if embedder is None:
                detail = default_embedder_status().detail
                raise NotebookError(f"NotebookEmbeddings: {detail}; or pass an embedder")
        self.embedder = embedder

    @property
    def model_id(self) -> str:
        """The model's name, as stored next to the notebook's vectors."""
        return self.embedder.model_id

    @property
    def dim(self) -> int:
        return self.embedder.dim

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        # Sequence rather than list: the Embedder takes any; InvalidInput for one string.
        rows: list[list[float]] = self.embedder.embed_documents(texts).tolist()
        return rows

    def embed_query(self, text: str) -> list[float]:
        vector: list[float] = self.embedder.embed_query(text).tolist()
        return vector

    def __repr__(self) -> str:
        return f"NotebookEmbeddings({self.model_id!r}, dim={self.dim})"
