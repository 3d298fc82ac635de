"""LangChain building blocks over the notebook.

- :class:`NotebookEmbeddings`: the notebook's embedder (by default the offline MiniLM
  model) as a LangChain ``Embeddings``;
- :class:`NotebookRetriever`: hybrid search as a ``BaseRetriever``, its filters as fields;
- :class:`NotebookVectorStore`: a ``VectorStore`` over one session, documents as moments;
- :func:`notebook_tools`: ``search``, ``slice``, ``read_session``, ``record`` and
  ``write_back`` as LangChain tools, without MCP.

``from agent_notebook.langchain import NotebookRetriever, notebook_tools``
"""

from __future__ import annotations

from ..embed.as_langchain import NotebookEmbeddings
from .retriever import NotebookRetriever, SearchFilters, document_of
from .tools import notebook_tools
from .vectorstore import NotebookVectorStore

__all__ = [
    "NotebookEmbeddings",
    "NotebookRetriever",
    "NotebookVectorStore",
    "SearchFilters",
    "document_of",
    "notebook_tools",
]
