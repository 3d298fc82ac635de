"""The matrix-vector product in blocks gives what one product gives, at every size."""

from __future__ import annotations

import numpy as np
import pytest

from agent_notebook.core.products import SINGLE_THREAD_ELEMENTS, row_dots


@pytest.mark.parametrize("width", [1, 3, 384])
@pytest.mark.parametrize("extra", [-1, 0, 1, 2])
def test_blocks_give_the_whole_product(width: int, extra: int) -> None:
    step = SINGLE_THREAD_ELEMENTS // width
    rows = max(0, min(3 * step + extra, 2_000_000 // width))  # past one block, or just at it
    rng = np.random.default_rng(rows + width)
    matrix = rng.standard_normal((rows, width)).astype(np.float32)
    vector = rng.standard_normal(width).astype(np.float32)
    found = row_dots(matrix, vector)
    assert found.shape == (rows,) and found.dtype == np.float32
    np.testing.assert_allclose(found, matrix @ vector, rtol=1e-5, atol=1e-5)


def test_an_empty_matrix_and_mixed_types() -> None:
    assert row_dots(np.empty((0, 4), dtype=np.float32), np.ones(4)).shape == (0,)
    wide = np.ones((SINGLE_THREAD_ELEMENTS, 2), dtype=np.float16)
    found = row_dots(wide, np.ones(2, dtype=np.float64))
    assert found.dtype == np.float64 and np.all(found == 2.0)
