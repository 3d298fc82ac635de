"""What the notebook needs from a text embedding model, and an adapter for LangChain's.

Vectors are compared by inner product, so every embedder returns L2-normalised float32
rows, and names its model (``model_id``): a vector is only ever compared with vectors of
the same model. numpy is imported inside the methods so that importing this module never
fails where it is missing (search then stays lexical).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..errors import InvalidInput

if TYPE_CHECKING:
    import numpy
    import numpy.typing as npt
    from langchain_core.embeddings import Embeddings

__all__ = ["Embedder", "EmbedderStatus", "LangChainEmbedder"]


class Embedder(Protocol):
    """A text embedding model: unit-length float32 vectors of ``dim`` numbers."""

    model_id: str  # stored next to every vector
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
        """One row per text, shape ``(len(texts), dim)``; ``(0, dim)`` for no texts."""
        ...

    def embed_query(self, text: str) -> npt.NDArray[numpy.float32]:
        """Shape ``(dim,)``."""
        ...


@dataclass(frozen=True)
class EmbedderStatus:
    """Whether the default embedder can run here, in a sentence for ``doctor``."""

    available: bool
    model_id: str | None
    detail: str


def check_texts(texts: Sequence[str]) -> None:
    """Reject what would embed silently wrong: one string (a sequence of characters) or
    non-strings."""
    if isinstance(texts, str):
        raise InvalidInput("embed_documents takes a list of texts, not one string")
    for text in texts:
        if not isinstance(text, str):
            raise InvalidInput(f"can only embed strings, not {type(text).__name__}")


class LangChainEmbedder:
    """Any ``langchain_core.embeddings.Embeddings`` as an :class:`Embedder`.

    Hosted and third-party models are not trusted to return what they promise: every
    answer is checked (one vector per text, all of ``dim`` finite numbers) and normalised,
    so a broken model fails loudly instead of filling the index with garbage.
    """

    def __init__(self, embeddings: Embeddings, model_id: str, dim: int | None = None) -> None:
        """``dim`` is probed with one ``embed_query`` call when not given."""
        if not model_id or not isinstance(model_id, str):
            raise InvalidInput("LangChainEmbedder needs a model_id (stored with every vector)")
        if dim is not None and dim < 1:
            raise InvalidInput(f"{model_id}: dim must be positive, not {dim}")
        self.embeddings = embeddings
        self.model_id = model_id
        if dim is None:
            dim = self._rows([embeddings.embed_query("probe")], 1, None).shape[1]
        self.dim = dim

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
        check_texts(texts)
        if not texts:
            import numpy as np

            return np.zeros((0, self.dim), dtype=np.float32)
        return self._rows(self.embeddings.embed_documents(list(texts)), len(texts), self.dim)

    def embed_query(self, text: str) -> npt.NDArray[numpy.float32]:
        check_texts([text])
        vector: npt.NDArray[numpy.float32] = self._rows(
            [self.embeddings.embed_query(text)], 1, self.dim
        )[0]
        return vector

    def _rows(
        self, vectors: Sequence[Sequence[float]], count: int, dim: int | None
    ) -> npt.NDArray[numpy.float32]:
        """The vectors as normalised rows; InvalidInput if they are not ``count`` vectors of
        ``dim`` (any positive length while probing) finite numbers."""
        import numpy as np

        where = f"embedding model {self.model_id!r}"
        if len(vectors) != count:
            raise InvalidInput(f"{where} returned {len(vectors)} vectors for {count} texts")
        lengths = sorted({len(vector) for vector in vectors})
        if len(lengths) > 1:
            raise InvalidInput(f"{where} returned vectors of different lengths {lengths}")
        if lengths[0] < 1 or (dim is not None and lengths[0] != dim):
            expected = dim if dim is not None else "at least 1"
            raise InvalidInput(f"{where} returned {lengths[0]} numbers per vector, not {expected}")
        try:
            rows = np.asarray(vectors, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise InvalidInput(f"{where} returned something other than numbers: {err}") from err
        if not np.isfinite(rows).all():
            raise InvalidInput(f"{where} returned NaN or infinite numbers")
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        if not norms.all():
            raise InvalidInput(f"{where} returned a zero vector, which has no direction")
        unit: npt.NDArray[numpy.float32] = (rows / norms).astype(np.float32)
        return unit
