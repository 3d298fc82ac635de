"""Any provider's embedding model by its ``provider:model`` name (``search.embedder:
"openai:text-embedding-3-small"``): made through :mod:`agent_notebook.core.providers` (a
registered provider, else LangChain's ``init_embeddings``) and wrapped in a
:class:`LangChainEmbedder` whose ``model_id`` is that name, so the vectors are tagged with
it and naming another model re-embeds the moments.

One embedder of each name is kept per process once it answered; a failure is not kept (the
provider's server may be up at the next try). A provider failing during a call raises
:class:`~agent_notebook.errors.ModelFailed` naming the setting.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core import providers
from ..errors import InvalidInput, ModelFailed, NotebookError
from .base import EmbedderStatus, LangChainEmbedder

if TYPE_CHECKING:
    import numpy
    import numpy.typing as npt
    from langchain_core.embeddings import Embeddings

__all__ = ["ProviderEmbedder", "provider_embedder", "provider_status"]

#: How long ``doctor`` waits for a provider's embedder to answer its one tiny call.
PROBE_TIMEOUT_S = 10.0

_lock = threading.Lock()
_made: dict[str, ProviderEmbedder] = {}


class ProviderEmbedder(LangChainEmbedder):
    """A provider's embedding model named ``provider:model`` (its ``model_id``); what the
    provider raises during a call is a :class:`ModelFailed` naming ``setting``."""

    def __init__(self, embeddings: Embeddings, name: str, setting: str) -> None:
        self.setting = setting
        self.model_id = name  # for the messages of a failing probe
        try:
            super().__init__(embeddings, name)  # one embed_query call: the dimensions
        except NotebookError:
            raise
        except Exception as err:  # the provider's own error, with the setting
            raise self._failed(err) from err

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
        try:
            return super().embed_documents(texts)
        except NotebookError:
            raise
        except Exception as err:
            raise self._failed(err) from err

    def embed_query(self, text: str) -> npt.NDArray[numpy.float32]:
        try:
            return super().embed_query(text)
        except NotebookError:
            raise
        except Exception as err:
            raise self._failed(err) from err

    def _failed(self, err: Exception) -> ModelFailed:
        text = str(err).strip().splitlines()
        return ModelFailed(
            f"{self.setting}: the embedding model {self.model_id!r} did not answer: "
            f"{type(err).__name__}: {text[0] if text else '(no message)'}; check its "
            "provider (key, server, network) or name another embedder "
            "(search.embedder: default is the offline one); nothing was changed"
        )


def provider_embedder(name: str, setting: str) -> ProviderEmbedder:
    """The embedder ``name`` (``provider:model``) names, made once per process; errors
    (InvalidInput, MissingDependency, ModelFailed) name ``setting``."""
    with _lock:
        found = _made.get(name)
    if found is not None:
        return found
    embeddings = providers.make(providers.EMBEDDINGS, name, setting)
    if not callable(getattr(embeddings, "embed_documents", None)):
        raise InvalidInput(
            f"{setting}: {name!r} gave a {type(embeddings).__name__}, not LangChain "
            "Embeddings (embed_documents, embed_query)"
        )
    embedder = ProviderEmbedder(embeddings, name, setting)
    with _lock:
        return _made.setdefault(name, embedder)


def provider_status(name: str, setting: str, timeout_s: float = PROBE_TIMEOUT_S) -> EmbedderStatus:
    """Whether the provider's embedder ``name`` answers one tiny call within ``timeout_s``
    (for ``doctor``): its provider, model and dimensions, or why not."""
    provider = name.split(":", 1)[0]
    made: list[ProviderEmbedder] = []

    def call() -> None:
        embedder = provider_embedder(name, setting)
        embedder.embed_query("ok")  # a kept embedder answered once: does it now?
        made.append(embedder)

    problem = providers.answers(call, timeout_s)
    if problem is not None or not made:
        return EmbedderStatus(
            False, name, f"{name} (provider {provider}) does not answer: {problem}"
        )
    return EmbedderStatus(
        True, name, f"{name} (provider {provider}, {made[0].dim} dimensions): answers"
    )
