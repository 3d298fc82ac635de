"""``NotebookVectorStore``: a LangChain ``VectorStore`` over one session of a notebook.

Each document becomes a moment of the store's session: its text is the moment's text, the
id the caller gives (or a new UUID) is the moment's ``source_id``, and its metadata is kept
whole, as the arguments of the moment's one action, ``langchain.document`` (a moment has no
free-form metadata of its own; redaction removes actions with the text). Search is the
notebook's own (:meth:`Notebook.search`, hybrid by default) within the session, with the
notebook's embedder; a search by vector, and maximal marginal relevance, score the
session's vectors in the notebook's vector index. Every search takes a metadata ``filter``.
Moments are immutable and numbered by the notebook, so replacing a document
(``add_documents`` with an id it holds, other text or metadata) records a new moment and
redacts the old one, and ``delete`` redacts: what is left of each is a tombstone (who,
when, why), never the text.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from ..embed.as_langchain import NotebookEmbeddings
from ..errors import InvalidInput
from ..model import Moment
from ..notebook.facade import Notebook
from ..search.request import Mode

if TYPE_CHECKING:
    from ..search.vectors import VectorIndex

__all__ = ["DOCUMENT_TOOL", "NotebookVectorStore"]

#: The action holding a document's metadata (its ``arguments``) on the document's moment.
DOCUMENT_TOOL = "langchain.document"
#: The role of a document's moment.
DOCUMENT_ROLE = "document"
#: The keyword arguments of a search: :meth:`Notebook.search`'s filters but the session.
SEARCH_FILTERS = frozenset(
    {
        "since",
        "until",
        "speaker",
        "concept",
        "exclude",
        "mode",
        "min_score",
        "current",
        "as_of",
        "asked_at",
    }
)
#: Who redacts a replaced or deleted document's moment (the tombstone's ``who``).
STORE_WHO = "langchain-vectorstore"
#: A search's ``filter``: metadata values the documents must have (each key equal), or a
#: test of the document.
Filter = Mapping[str, Any] | Callable[[Document], bool]


class NotebookVectorStore(VectorStore):
    """LangChain's ``VectorStore`` over one session of ``notebook``.

    ``session``: the session that holds the documents (an id it has); None starts one, for
    ``task``, on the first ``add_documents``. ``mode``: the search's (``hybrid`` fuses
    words, vectors and concepts; ``vector`` or ``lexical`` use one). Vectors are the
    notebook's embedder's: open it with ``embedder=LangChainEmbedder(embeddings, name)``
    for another model; ``embedding`` (LangChain's argument) is checked to be that model
    (InvalidInput otherwise: vectors of two models are not comparable). Documents added
    are embedded before ``add_documents`` returns.

    Searches: ``similarity_search`` (and with scores, 0 to 1) is the notebook's own;
    ``similarity_search_by_vector`` and ``max_marginal_relevance_search`` (by text or
    vector) score the session's vectors by cosine similarity. Each takes ``filter``: a
    mapping of metadata values a document must have (equal, key by key) or a function
    of the ``Document``.

    Ids: a document's id (``ids=`` or ``Document.id``, else a new UUID) is its moment's
    ``source_id``; ``add_documents`` with an id the store holds replaces that document
    (unchanged ones are left as they are), ``get_by_ids`` and ``delete`` look them up.
    ``delete`` (and a replacement) redacts the moment: it leaves a tombstone saying who
    (``langchain-vectorstore``), when and why, and the text and metadata are gone for good.
    ``delete()`` with no ids deletes every document of the store's session. A moment of the
    session recorded otherwise (without a source id) is found too, under its own id.
    """

    def __init__(
        self,
        notebook: Notebook,
        *,
        embedding: Embeddings | None = None,
        session: str | None = None,
        task: str = "LangChain documents",
        mode: Mode = "hybrid",
    ) -> None:
        if session is not None:
            notebook.get_session(session)  # NotFound / InvalidId, saying which
        if embedding is not None:
            _check_embedding(notebook, embedding)
        self.notebook = notebook
        self.session = session
        self.task = task
        self.mode = mode
        self._embedding = embedding

    @property
    def embeddings(self) -> Embeddings | None:
        """The notebook's embedder as LangChain ``Embeddings`` (the ``embedding`` given, if
        one was; None: lexical search only)."""
        if self._embedding is not None:
            return self._embedding
        semantic = self.notebook.vectors.semantic
        return None if semantic is None else NotebookEmbeddings(semantic.embedder)

    # -- writing -------------------------------------------------------------------------

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Record the texts as moments (in one transaction), replacing those whose ids the
        store holds with other content; returns the documents' ids. InvalidInput (nothing
        changed) for metadata that is not JSON, mismatched lengths or a repeated id."""
        if kwargs:
            raise InvalidInput(f"add_texts: unknown argument(s) {', '.join(sorted(kwargs))}")
        texts = list(texts)
        metadatas = [{} for _ in texts] if metadatas is None else list(metadatas)
        # add_documents gives None for a document without an id: it gets a new UUID
        given: list[str | None] = [None for _ in texts] if ids is None else list(ids)
        if not len(texts) == len(metadatas) == len(given):
            raise InvalidInput(
                f"add_texts: {len(texts)} texts, {len(metadatas)} metadatas and {len(given)} "
                "ids: give one of each per document"
            )
        keys = [doc_id if doc_id else str(uuid.uuid4()) for doc_id in given]
        if len(set(keys)) != len(keys):
            raise InvalidInput("add_texts: an id is given twice; give each document its own")
        if not texts:
            return []
        held = {} if self.session is None else self.notebook.moments_by_source(self.session, keys)
        drafts: list[dict[str, Any]] = []
        replaced: list[Moment] = []
        for text, metadata, key in zip(texts, metadatas, keys, strict=True):
            old = held.get(key)
            if old is not None and old.content.text == text and _metadata(old) == metadata:
                continue  # the same document again: nothing to do
            if old is not None:
                replaced.append(old)
            drafts.append(_draft(text, metadata, key))
        checked = self.notebook.check_drafts(drafts, "document")  # before anything changes
        if checked:
            # The new moments first: should a redaction fail, the new one is what is read.
            self.notebook.record_many(self._session_to_write(), checked)
            if replaced:
                self.notebook.redact_moments(
                    [old.id for old in replaced],
                    "replaced through the LangChain vector store",
                    STORE_WHO,
                )
            if self.notebook.vectors.semantic is not None:
                self.notebook.vectors.reindex()
        return keys

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Redact the documents of ``ids`` the store holds (every one for None; unknown ids
        are passed over): each moment keeps a tombstone, its text and metadata are gone."""
        if kwargs:
            raise InvalidInput(f"delete: unknown argument(s) {', '.join(sorted(kwargs))}")
        if self.session is None:
            return True
        held = self.notebook.moments_by_source(self.session, ids)
        if held:
            self.notebook.redact_moments(
                [m.id for m in held.values()],
                "deleted through the LangChain vector store",
                STORE_WHO,
            )
        return True

    # -- reading -------------------------------------------------------------------------

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents of ``ids`` the store holds, in that order (unknown ids left out)."""
        if self.session is None:
            return []
        held = self.notebook.moments_by_source(self.session, list(ids))
        return [_document(held[key]) for key in ids if key in held]

    def similarity_search(
        self, query: str, k: int = 4, filter: Filter | None = None, **kwargs: Any
    ) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, filter, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: Filter | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` documents most relevant to ``query`` (and ``filter``), best first, with
        the notebook's score (0 to 1, higher is better); no cut-off unless ``min_score`` is
        given. Other keyword arguments are :meth:`Notebook.search`'s filters (``speaker``,
        ``since``...) and ``asked_at``, when the question is asked ("yesterday" is read
        against it)."""
        if unknown := sorted(set(kwargs) - SEARCH_FILTERS):
            raise InvalidInput(
                f"similarity_search: unknown argument(s) {', '.join(unknown)}; it takes "
                f"filter and {', '.join(sorted(SEARCH_FILTERS))} (Notebook.search's filters)"
            )
        if self.session is None:
            return []
        if filter is not None:  # the search ranks the documents that pass, and only them
            _, left_out = self._sorted(filter)
            kwargs["exclude"] = {*kwargs.get("exclude", ()), *left_out}
        kwargs.setdefault("min_score", 0.0)
        kwargs.setdefault("mode", self.mode)
        hits = self.notebook.search(query, session=self.session, limit=k, **kwargs)
        return [(_document(hit.moment), hit.score) for hit in hits]

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: Filter | None = None, **kwargs: Any
    ) -> list[Document]:
        found = self.similarity_search_with_score_by_vector(embedding, k, filter, **kwargs)
        return [doc for doc, _ in found]

    def similarity_search_with_score_by_vector(
        self, embedding: list[float], k: int = 4, filter: Filter | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` documents (that pass ``filter``) whose vectors are nearest ``embedding``
        (a vector of the notebook's model), best first, with their cosine similarity."""
        _no_more("similarity_search_by_vector", kwargs)
        index = self._vector_index("similarity_search_by_vector")
        documents = self._documents(filter)
        if not documents or k <= 0:
            return []
        found = index.search(_vector(embedding), k, allowed=set(documents))
        return [(documents[number], score) for number, score in found]

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: Filter | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """:meth:`max_marginal_relevance_search_by_vector` of ``query``'s vector."""
        _no_more("max_marginal_relevance_search", kwargs)
        semantic = self.notebook.vectors.semantic
        if semantic is None:
            raise _no_vectors("max_marginal_relevance_search")
        vector = semantic.embedder.embed_query(query)
        return self.max_marginal_relevance_search_by_vector(
            list(map(float, vector)), k, fetch_k, lambda_mult, filter
        )

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: Filter | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """``k`` of the ``fetch_k`` documents (that pass ``filter``) nearest ``embedding``,
        picked one by one for being near it and far from those picked already
        (``lambda_mult``: 1 nearness only, 0 difference only), in the order picked."""
        _no_more("max_marginal_relevance_search_by_vector", kwargs)
        if not 0 <= lambda_mult <= 1:
            raise InvalidInput(f"lambda_mult must be between 0 and 1, not {lambda_mult}")
        index = self._vector_index("max_marginal_relevance_search_by_vector")
        documents = self._documents(filter)
        if not documents or k <= 0:
            return []
        query = _vector(embedding)
        found = index.search(query, max(k, fetch_k), allowed=set(documents))
        if not found:
            return []
        numbers = [number for number, _ in found]
        picked = maximal_marginal_relevance(
            query, index.vectors(numbers).tolist(), lambda_mult=lambda_mult, k=k
        )
        return [documents[numbers[i]] for i in picked]

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        return self.similarity_search_with_score(query, k, **kwargs)  # already 0 to 1

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> Self:
        """A store over ``notebook=`` (required) holding ``texts``. The notebook embeds with
        its own embedder, which ``embedding`` must be (open the notebook with
        ``Notebook.open(home, embedder=LangChainEmbedder(embedding, name))``)."""
        notebook = kwargs.pop("notebook", None)
        if not isinstance(notebook, Notebook):
            raise InvalidInput(
                "NotebookVectorStore.from_texts needs notebook=<a Notebook> (Notebook.open(home, "
                "embedder=LangChainEmbedder(embedding, 'model-name')))"
            )
        store = cls(notebook, embedding=embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=list(ids) if ids is not None else None)
        return store

    def _session_to_write(self) -> str:
        if self.session is None:
            self.session = self.notebook.start_session(self.task).id
        return self.session

    def _documents(self, where: Filter | None) -> dict[int, Document]:
        """The session's documents (not redacted) that pass ``where``, by moment number."""
        return self._sorted(where)[0]

    def _sorted(self, where: Filter | None) -> tuple[dict[int, Document], list[str]]:
        """The session's documents that pass ``where`` (by moment number), and the ids of
        its other moments (a scan of the session)."""
        if where is not None and not (isinstance(where, Mapping) or callable(where)):
            raise InvalidInput(
                f"filter must be a mapping of metadata values or a function of the Document, "
                f"not {type(where).__name__}"
            )
        passed: dict[int, Document] = {}
        left_out: list[str] = []
        for moment in self.notebook.moments(self.session) if self.session is not None else ():
            if moment.redacted is None and _passes(doc := _document(moment), where):
                passed[moment.number] = doc
            else:
                left_out.append(moment.id)
        return passed, left_out

    def _vector_index(self, verb: str) -> VectorIndex:
        semantic = self.notebook.vectors.semantic
        if semantic is None:
            raise _no_vectors(verb)
        return semantic.index()


def _check_embedding(notebook: Notebook, embedding: Embeddings) -> None:
    """InvalidInput unless ``notebook`` embeds with ``embedding``: it, or one equal to it
    (LangChain's pydantic models compare their settings), in a ``LangChainEmbedder``, or
    ``NotebookEmbeddings`` of the notebook's model."""
    semantic = notebook.vectors.semantic
    embedder = None if semantic is None else semantic.embedder
    wrapped = getattr(embedder, "embeddings", None)
    if embedder is not None and (
        (wrapped is not None and (wrapped is embedding or wrapped == embedding))
        or (isinstance(embedding, NotebookEmbeddings) and embedding.model_id == embedder.model_id)
    ):
        return
    has = "no embedder" if embedder is None else f"the embedder {embedder.model_id!r}"
    raise InvalidInput(
        f"embedding: the notebook has {has}, not this {type(embedding).__name__}, and its "
        "documents are searched with its own vectors; open it with Notebook.open(home, "
        "embedder=LangChainEmbedder(embedding, 'model-name')) to use this one"
    )


def _passes(doc: Document, where: Filter | None) -> bool:
    if where is None:
        return True
    if isinstance(where, Mapping):
        return all(key in doc.metadata and doc.metadata[key] == want for key, want in where.items())
    return bool(where(doc))


def _vector(embedding: Sequence[float]) -> np.ndarray:
    try:
        return np.asarray(embedding, dtype=np.float32)
    except (TypeError, ValueError) as err:
        raise InvalidInput(f"embedding must be a list of numbers: {err}") from None


def _no_more(verb: str, kwargs: dict[str, Any]) -> None:
    if kwargs:
        raise InvalidInput(
            f"{verb}: unknown argument(s) {', '.join(sorted(kwargs))}; it takes filter"
        )


def _no_vectors(verb: str) -> InvalidInput:
    return InvalidInput(
        f"{verb}: the notebook has no embedder (lexical search only); open it with one, "
        "such as Notebook.open(home, embedder=LangChainEmbedder(embeddings, 'model-name'))"
    )


def _draft(text: str, metadata: dict[str, Any], key: str) -> dict[str, Any]:
    """The moment a document becomes, as :meth:`Notebook.check_drafts` checks it."""
    if not isinstance(metadata, dict):
        kind = type(metadata).__name__
        raise InvalidInput(f"document {key!r}: metadata must be a dict, not {kind}")
    action = {"tool": DOCUMENT_TOOL, "arguments": metadata}
    return {"text": text, "role": DOCUMENT_ROLE, "source_id": key, "actions": [action]}


def _metadata(moment: Moment) -> dict[str, Any]:
    for action in moment.actions:
        if action.tool == DOCUMENT_TOOL:
            return dict(action.arguments)
    return {}


def _document(moment: Moment) -> Document:
    return Document(
        id=moment.source_id or moment.id,
        page_content=moment.content.text,
        metadata=_metadata(moment),
    )
