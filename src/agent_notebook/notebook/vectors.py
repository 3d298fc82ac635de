"""The vector side of the notebook: which embedder it uses, the semantic index loaded on
first use, the embedding worker that gives new moments their vectors, and ``reindex``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from .. import config as cfg
from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..embed import Embedder
    from ..search.semantic import SemanticIndex
    from .facade import Notebook


class Vectors:
    """One notebook's embedder and semantic index (see :attr:`Notebook.semantic`)."""

    def __init__(
        self,
        notebook: Notebook,
        embedder: Embedder | Literal["default"] | None,
        background: bool,
    ) -> None:
        self.nb = notebook
        #: ``"default"`` (``search.embedder``), None (lexical only) or an :class:`Embedder`.
        self.embedder_choice = embedder
        #: New moments are embedded on a worker thread (else they wait for ``reindex``).
        self.background = background
        self.index: SemanticIndex | None = None  # loaded on first use
        self._ready = False

    @property
    def semantic(self) -> SemanticIndex | None:
        if not self.nb.config.privacy.modalities.embeddings:
            return None
        if not self._ready:
            embedder = self.resolve_embedder()  # a bad name raises on every use
            self._ready = True
            if embedder is not None:
                from ..search.semantic import SemanticIndex

                index_file = None
                backend = self.nb.backend
                if (  # with encryption on, the faiss file (plain vectors) is not written
                    self.nb.home is not None
                    and backend.capabilities.vector_index_file
                    and backend.cipher is None
                ):
                    index_file = self.nb.home / "embeddings.faiss"
                self.index = SemanticIndex(backend, embedder, index_file=index_file)
        return self.index

    def worker_index(self) -> SemanticIndex | None:
        """The loaded index whose worker embeds in the background (None: no such worker)."""
        return self.index if self.background else None

    def notify_new(self) -> None:
        """Tell the worker that moments wait for a vector (made off the hot path)."""
        if self.background and (semantic := self.semantic) is not None:
            semantic.notify()

    def paraphrase_vectors(self, texts: Sequence[str]) -> list[list[float]] | None:
        """Unit vectors of ``texts`` for the fact rules' paraphrase gate (None: no embedder)."""
        embedder = self.resolve_embedder()
        if embedder is None:
            return None
        return [[float(x) for x in row] for row in embedder.embed_documents(list(texts))]

    def forget(self, numbers: list[int]) -> None:
        """Drop the vectors of moments gone from the active set from the loaded index."""
        if self.index is not None and numbers:
            self.index.forget(numbers)

    @property
    def wants_vectors(self) -> bool:
        if not self.nb.config.privacy.modalities.embeddings or self.embedder_choice is None:
            return False
        if self.embedder_choice != "default":
            return True
        return self.embedder_name != "none"

    @property
    def embedder_name(self) -> str:
        return cfg.embedder_from_env() or self.nb.config.search.embedder

    def resolve_embedder(self) -> Embedder | None:
        if self.embedder_choice != "default":
            return self.embedder_choice
        if not self.wants_vectors:
            return None
        from ..embed import EMBEDDERS, default_embedder

        chosen = self.embedder_name
        if chosen == "none":
            return None
        if chosen != "default" and chosen not in EMBEDDERS:
            known = ", ".join(("default", *EMBEDDERS, "none"))
            raise InvalidInput(
                f"{cfg.EMBEDDER_ENV}={chosen!r} names no embedder: use one of {known}"
            )
        return default_embedder(chosen)

    def reindex(self, progress: Callable[[int], None] | None = None) -> int:
        semantic = self.semantic
        if semantic is None:
            raise InvalidInput("reindex: no embedder; 'agent-notebook doctor' says why")
        return semantic.catch_up(progress)

    def unembedded(self) -> int:
        semantic = self.semantic
        return 0 if semantic is None else semantic.pending()

    def close(self, wait_s: float) -> None:
        """Let the worker embed what was just recorded for up to ``wait_s`` seconds, then
        stop it: any moments left stay queued, for the next search from the command line,
        the next long-lived process or 'agent-notebook reindex'."""
        if self.index is not None:
            self.index.wait_idle(timeout=wait_s)
            self.index.close()
            self.index = None
            self._ready = False
