"""Media made for the tests, seeded: no download, no file checked in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def make_image(path: Path, seed: int, size: int = 128) -> Path:
    """A smooth picture: random 8x8 colours scaled up (photo-like, unlike pixel noise)."""
    rng = np.random.default_rng(seed)
    small = Image.fromarray((rng.random((8, 8, 3)) * 255).astype(np.uint8))
    small.resize((size, size), Image.Resampling.BICUBIC).save(path)
    return path
