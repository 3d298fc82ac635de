"""The vector index's files: a real faiss file (``IndexIDMap2`` over ``IndexFlatIP`` or
``IndexHNSWFlat``, readable with ``faiss.read_index``; stale entries carry the id -1, faiss's
"no result") and a JSON sidecar with the model, dimension and checksum, so a file made for
another model is refused and a damaged one detected. See :mod:`.vectors`."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from ..core.files import write_atomic
from ..errors import CorruptFile
from .hnsw import FloatMatrix, Graph, Keys, import_faiss, new_hnsw

__all__ = ["FORMAT", "SavedIndex", "read_index_files", "serialized", "write_index_files"]

FORMAT: Final = 1


def serialized(dim: int, graph: Graph | None, matrix: FloatMatrix, keys: Keys) -> NDArray[Any]:
    """The faiss bytes of the index: its live graph (stale entries as id -1) when it has
    one, else the flat ``matrix`` with its ``keys``."""
    faiss = import_faiss()
    if graph is not None:
        index = faiss.IndexIDMap2(new_hnsw(faiss, dim))
        index.index = graph.hnsw  # wrap the live graph; -1 ids are its stale entries
        index.ntotal = graph.ntotal
        faiss.copy_array_to_vector(graph.labels[: graph.ntotal], index.id_map)
    else:
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        index.add_with_ids(matrix, keys)
    return faiss.serialize_index(index)  # type: ignore[no-any-return]


def write_index_files(path: Path, data: bytes, *, model_id: str, dim: int, count: int) -> None:
    """Write ``data`` to ``path`` and its sidecar ``<path>.json``, each atomically and
    owner-only.

    The sidecar goes first and comes back last: a crash in between leaves an index file
    without a sidecar, which :func:`read_index_files` treats as absent (rebuild), never as
    a pair that does not belong together.
    """
    sidecar = {
        "format": FORMAT,
        "model_id": model_id,
        "dim": dim,
        "count": count,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_sidecar(path))
    write_atomic(path, data)
    write_atomic(_sidecar(path), (json.dumps(sidecar, indent=2) + "\n").encode())


@dataclass(frozen=True, slots=True)
class SavedIndex:
    """What an index file holds: every entry's key (-1: stale), which are ``live``, their
    vectors (None: no entry), and the HNSW graph with the faiss object that owns it (None:
    a flat file)."""

    ids: Keys
    live: NDArray[np.bool_]
    count: int
    vectors: FloatMatrix | None
    hnsw: Any
    owner: Any


def read_index_files(path: Path, *, model_id: str, dim: int) -> SavedIndex | None:
    """The index saved at ``path``, or None when there is none for this model and
    dimension (the caller rebuilds it from the stored vectors).

    Raises :class:`CorruptFile` when the file is damaged.
    """
    faiss = import_faiss()
    meta_path = _sidecar(path)
    try:
        data = path.read_bytes()
        meta_text = meta_path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise CorruptFile(path, f"cannot be read ({err.strerror}){_REBUILD}") from err
    try:
        meta = json.loads(meta_text)
        if not isinstance(meta, dict):
            raise ValueError("not a JSON object")
        saved_model, saved_dim, count = meta["model_id"], meta["dim"], meta["count"]
        size, digest = meta["bytes"], meta["sha256"]
    except (ValueError, KeyError, TypeError) as err:
        raise CorruptFile(meta_path, f"is not a vector index description{_REBUILD}") from err
    if meta.get("format") != FORMAT or saved_model != model_id or saved_dim != dim:
        return None
    if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        raise CorruptFile(path, f"does not match its checksum in {meta_path.name}{_REBUILD}")
    try:
        # deserialize_index returns the concrete class; the object owns ``inner``
        index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
        del data
        if not isinstance(index, faiss.IndexIDMap2):
            raise ValueError(f"an {type(index).__name__}, not an IndexIDMap2")
        inner = faiss.downcast_index(index.index)
        hnsw = isinstance(inner, faiss.IndexHNSWFlat)
        if not (hnsw or isinstance(inner, faiss.IndexFlatIP)):
            raise ValueError(f"an IndexIDMap2 over {type(inner).__name__}")
        ids = faiss.vector_to_array(index.id_map).astype(np.int64)
        live = ids >= 0
        if (
            index.d != dim
            or index.ntotal != ids.size
            or inner.metric_type != faiss.METRIC_INNER_PRODUCT
            or ids.size != inner.ntotal
            or int(live.sum()) != count
            or np.unique(ids[live]).size != count
            or (count and int(ids[live].min()) < 1)
            or (not hnsw and not live.all())
        ):
            raise ValueError("inconsistent contents")
        vectors = inner.reconstruct_n(0, inner.ntotal) if inner.ntotal else None
    except (RuntimeError, ValueError, AttributeError) as err:
        raise CorruptFile(path, f"is not a valid vector index ({err}){_REBUILD}") from err
    return SavedIndex(ids, live, count, vectors, inner if hnsw else None, index)


_REBUILD = (
    "; it is derived from the stored vectors, so it can be deleted and rebuilt with "
    "`agent-notebook reindex`"
)


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")
