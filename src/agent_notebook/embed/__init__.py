"""Text embedders: the offline ones a notebook can name (``search.embedder``) and LangChain's.

:func:`default_embedder` is what a notebook uses unless told otherwise: the model named by
``search.embedder`` (``default`` is :data:`DEFAULT_EMBEDDER`). It is best effort: when the
model's packages are missing or its file is not the expected one, it returns None (search
stays lexical), logs why once, and :func:`default_embedder_status` tells ``agent-notebook
doctor`` the same. One model of each name is loaded per process, whatever the number of
notebooks.

``minilm`` (all-MiniLM-L6-v2, int8 ONNX) is the default: it meets the speed the notebook
needs on a 2-core machine. ``e5-small`` (multilingual-e5-small, 4-bit, ``pip install
'agent-notebook[e5]'``) recalls more and embeds about 6 times slower; see
:mod:`agent_notebook.embed.e5` and bench/retrieval_locomo.py.

Any provider's model can be named too, ``provider:model`` (``openai:text-embedding-3-small``,
``ollama:nomic-embed-text``, or a provider registered in the entry point group
``agent_notebook.embeddings``): :func:`provider_embedder` (:mod:`.providers`). Unlike the
offline ones it is not best effort: a provider that fails says so, naming the setting.
"""

from __future__ import annotations

import logging
import threading

from ..errors import InvalidInput, NotebookError
from .base import Embedder, EmbedderStatus, LangChainEmbedder
from .e5 import E5SmallEmbedder
from .minilm import MiniLmEmbedder, missing_packages
from .providers import ProviderEmbedder, provider_embedder, provider_status

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "E5SmallEmbedder",
    "Embedder",
    "EmbedderStatus",
    "LangChainEmbedder",
    "MiniLmEmbedder",
    "ProviderEmbedder",
    "default_embedder",
    "default_embedder_status",
    "provider_embedder",
    "provider_status",
]

log = logging.getLogger(__name__)

#: The offline models a config can name, and what ``default`` means.
EMBEDDERS = ("minilm", "e5-small")
DEFAULT_EMBEDDER = "minilm"

_lock = threading.Lock()
_loaded: dict[str, tuple[Embedder | None, EmbedderStatus]] = {}


def _name(name: str) -> str:
    chosen = DEFAULT_EMBEDDER if name == "default" else name
    if chosen not in EMBEDDERS:
        known = ", ".join(("default", *EMBEDDERS, "none"))
        raise InvalidInput(f"unknown embedder {name!r}: use one of {known}")
    return chosen


def _load(name: str) -> tuple[Embedder | None, EmbedderStatus]:
    chosen = _name(name)
    with _lock:
        if chosen not in _loaded:
            _loaded[chosen] = _try_load(chosen)
        return _loaded[chosen]


def _try_load(name: str) -> tuple[Embedder | None, EmbedderStatus]:
    missing = missing_packages() if name == "minilm" else []
    if missing:
        names = ", ".join(missing)
        verb = "is" if len(missing) == 1 else "are"
        reason = f"{names} {verb} not installed (pip install {' '.join(missing)})"
    else:
        try:
            embedder: MiniLmEmbedder | E5SmallEmbedder = (
                MiniLmEmbedder() if name == "minilm" else E5SmallEmbedder()
            )
        except NotebookError as err:
            reason = str(err)
        else:
            model = "all-MiniLM-L6-v2 (int8 ONNX)" if name == "minilm" else "e5-small (4-bit)"
            detail = (
                f"{model} on {embedder.runtime} with {embedder.threads} threads, "
                f"{embedder.dim} dimensions"
            )
            return embedder, EmbedderStatus(True, embedder.model_id, detail)
    log.warning("no embedder: %s; search is lexical only", reason)
    return None, EmbedderStatus(False, None, f"no embedder: {reason}; search is lexical only")


def default_embedder(name: str = "default") -> Embedder | None:
    """The embedder called ``name`` (``default``: :data:`DEFAULT_EMBEDDER`), or None where
    it cannot run (never raises for that; InvalidInput for a name that is none of
    :data:`EMBEDDERS`)."""
    return _load(name)[0]


def default_embedder_status(name: str = "default") -> EmbedderStatus:
    """Whether :func:`default_embedder` has a model, and which, or why not."""
    return _load(name)[1]
