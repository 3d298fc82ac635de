"""A matrix-vector product computed on the calling thread: the scores of every stored
vector against a query (exact vector search, LangGraph's store).

OpenBLAS splits a product of more than 460,800 elements (115,200 x its
``GEMM_MULTITHREAD_THRESHOLD`` of 4) over its threads; waking them, on a loaded machine and
with the calls some milliseconds apart (one a chat turn), costs far more than the product:
1,398 x 384 float32 rows took 7.9 ms p50 (3.9 ms of the caller's CPU) at load 4.6 on 2
cores, against 0.19 ms in blocks that stay under the threshold. A chat thread crosses it
at about 1,200 moments, so the hybrid turn's cost jumped along the thread.
"""

from __future__ import annotations

from typing import Final

import numpy as np
from numpy.typing import NDArray

__all__ = ["SINGLE_THREAD_ELEMENTS", "row_dots"]

#: Elements of one block: below OpenBLAS's threshold for threading a product.
SINGLE_THREAD_ELEMENTS: Final = 400_000


def row_dots(matrix: NDArray[np.floating], vector: NDArray[np.floating]) -> NDArray[np.floating]:
    """``matrix @ vector`` (the dot product of each row with ``vector``), computed in blocks
    of rows that BLAS keeps on the calling thread."""
    rows, width = matrix.shape
    step = max(1, SINGLE_THREAD_ELEMENTS // max(1, width))
    if rows <= step:
        return matrix @ vector
    out = np.empty(rows, dtype=np.result_type(matrix, vector))
    for start in range(0, rows, step):
        np.matmul(matrix[start : start + step], vector, out=out[start : start + step])
    return out
