"""The vector side of the notebook: which embedder it uses, the semantic index loaded on
first use, the embedding worker that gives new moments their vectors, and ``reindex``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, cast

from .. import config as cfg
from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..embed import Embedder
    from ..search.semantic import SemanticIndex
    from .context import NotebookContext


def checked_embedder(embedder: object) -> Embedder | Literal["default"] | None:
    """``embedder`` when it is ``"default"``, None or an :class:`Embedder` (a ``model_id``,
    a ``dim``, ``embed_documents`` and ``embed_query``), else InvalidInput: the facade's
    check, for ``Notebook(...)`` and ``Notebook.open``. A LangChain ``Embeddings`` (one
    with ``aembed_query``) is refused too: it is to be wrapped in a ``LangChainEmbedder``,
    which checks its vectors and names its model, stored with every vector."""
    if embedder is None or embedder == "default":
        return embedder
    kind = type(embedder).__name__
    if callable(getattr(embedder, "aembed_query", None)):
        raise InvalidInput(
            f"embedder: a {kind} is LangChain's; wrap it: embedder=LangChainEmbedder(embeddings, "
            "'model-name') (from agent_notebook.embed import LangChainEmbedder)"
        )
    model_id, dim = getattr(embedder, "model_id", None), getattr(embedder, "dim", None)
    methods = [getattr(embedder, name, None) for name in ("embed_documents", "embed_query")]
    if not (
        isinstance(model_id, str)
        and model_id
        and isinstance(dim, int)
        and dim > 0
        and all(map(callable, methods))
    ):
        raise InvalidInput(
            f"embedder must be 'default', None or an Embedder (model_id, dim, "
            f"embed_documents, embed_query), not a {kind}"
        )
    return cast("Embedder", embedder)


class Vectors:
    """One notebook's embedder and semantic index (``nb.semantic``)."""

    def __init__(
        self,
        context: NotebookContext,
        embedder: Embedder | Literal["default"] | None,
        background: bool,
    ) -> None:
        self.context = context
        #: ``"default"`` (``search.embedder``), None (lexical only) or an :class:`Embedder`.
        self.embedder_choice = embedder
        #: New moments are embedded on a worker thread (else they wait for ``reindex``).
        self.background = background
        self.index: SemanticIndex | None = None  # loaded on first use
        self._ready = False
        if embedder == "default" and context.config.privacy.modalities.embeddings:
            self.check_name()

    def check_name(self) -> None:
        """InvalidInput (or MissingDependency) when the embedder's name names none: a
        built-in name, or ``provider:model`` whose provider is registered or LangChain's
        and installed. Made at open, before anything is read or written; nothing of the
        model is loaded, nothing is called (a provider that does not answer says so at its
        first use, or in ``doctor``)."""
        name, setting = self.embedder_name, self.embedder_setting
        problem = cfg.embedder_name_problem(name)
        if problem is not None:
            raise InvalidInput(f"{setting}: {problem}")
        if name not in cfg.BUILTIN_EMBEDDERS:
            from ..core import providers

            providers.check(providers.EMBEDDINGS, name, setting)

    @property
    def semantic(self) -> SemanticIndex | None:
        """The vector side of search, or None without an embedder (see ``doctor``) or with
        ``privacy.modalities.embeddings`` off (no vector is made, stored or read)."""
        if not self.context.config.privacy.modalities.embeddings:
            return None
        if not self._ready:
            embedder = self.resolve_embedder()  # a bad name raises on every use
            self._ready = True
            if embedder is not None:
                from ..search.semantic import SemanticIndex

                index_file = None
                backend = self.context.backend
                if (  # with encryption on, the faiss file (plain vectors) is not written
                    self.context.home is not None
                    and backend.capabilities.vector_index_file
                    and backend.cipher is None
                ):
                    index_file = self.context.home / "embeddings.faiss"
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
        """Whether moments are to get vectors (embeddings on, an embedder chosen), known
        without loading the model; whether the default model can run, ``doctor`` says."""
        if not self.context.config.privacy.modalities.embeddings or self.embedder_choice is None:
            return False
        if self.embedder_choice != "default":
            return True
        return self.embedder_name != "none"

    @property
    def embedder_name(self) -> str:
        """The embedder named by AGENT_NOTEBOOK_EMBEDDER or ``search.embedder``: an offline
        one (``default``, ``minilm``, ``e5-small``), ``none``, or ``provider:model``."""
        return cfg.embedder_from_env() or self.context.config.search.embedder

    @property
    def embedder_setting(self) -> str:
        """Where :attr:`embedder_name` comes from, for messages."""
        if cfg.embedder_from_env():
            return cfg.EMBEDDER_ENV
        home = self.context.home
        where = f" in {home / cfg.CONFIG_FILE}" if home is not None else ""
        return f"search.embedder{where}"

    def resolve_embedder(self) -> Embedder | None:
        if self.embedder_choice != "default":
            return self.embedder_choice
        if not self.wants_vectors:
            return None
        chosen = self.embedder_name
        if chosen == "none":
            return None
        if chosen not in cfg.BUILTIN_EMBEDDERS:
            self.check_name()
            from ..embed import provider_embedder

            return provider_embedder(chosen, self.embedder_setting)
        from ..embed import default_embedder

        return default_embedder(chosen)

    def reindex(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed every moment that has no vector yet (after a crash, a model change or
        an import); returns how many were embedded."""
        semantic = self.semantic
        if semantic is None:
            raise InvalidInput("reindex: no embedder; 'agent-notebook doctor' says why")
        return semantic.catch_up(progress)

    def unembedded(self) -> int:
        """How many moments wait for a vector (0 without an embedder)."""
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
