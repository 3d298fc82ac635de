"""Text embedders: the offline default (all-MiniLM-L6-v2, int8 ONNX) and LangChain models.

:func:`default_embedder` is what a notebook uses unless told otherwise. It is best effort:
when the model's packages are missing or its file is not the expected one, it returns
None (search stays lexical), logs why once, and :func:`default_embedder_status` tells
``agent-notebook doctor`` the same. One model is loaded per process, whatever the number
of notebooks.
"""

from __future__ import annotations

import logging
import threading

from ..errors import NotebookError
from .base import Embedder, EmbedderStatus, LangChainEmbedder
from .minilm import MiniLmEmbedder, missing_packages

__all__ = [
    "Embedder",
    "EmbedderStatus",
    "LangChainEmbedder",
    "MiniLmEmbedder",
    "default_embedder",
    "default_embedder_status",
]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_default: tuple[MiniLmEmbedder | None, EmbedderStatus] | None = None


def _load_default() -> tuple[MiniLmEmbedder | None, EmbedderStatus]:
    global _default
    with _lock:
        if _default is None:
            _default = _try_load()
        return _default


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
                f"all-MiniLM-L6-v2 (int8 ONNX) on {embedder.runtime}, {embedder.dim} dimensions"
            )
            return embedder, EmbedderStatus(True, embedder.model_id, detail)
    log.warning("no embedder: %s; search is lexical only", reason)
    return None, EmbedderStatus(False, None, f"no embedder: {reason}; search is lexical only")


def default_embedder() -> Embedder | None:
    """The MiniLM embedder, or None where it cannot run (never raises for that)."""
    return _load_default()[0]


def default_embedder_status() -> EmbedderStatus:
    """Whether :func:`default_embedder` has a model, and which, or why not."""
    return _load_default()[1]
