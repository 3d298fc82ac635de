"""The multimodal embedder hook: what fills a moment's ``content.multimodal_embedding``.

No multimodal model ships with agent-notebook and none is downloaded. A user who installs
one (a CLIP model, say) wraps it in a class with these members and passes it to
``Notebook(..., multimodal_embedder=...)``; from then on each recorded image (and audio,
when the class has ``embed_audio``) gets its vector. Without one the field stays empty and
``agent-notebook doctor`` says so. ``privacy.modalities.embeddings: false`` turns it off.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

__all__ = ["NO_MULTIMODAL_EMBEDDER", "MultimodalEmbedder"]

NO_MULTIMODAL_EMBEDDER = "no multimodal embedder installed: multimodal_embedding stays empty"


@runtime_checkable
class MultimodalEmbedder(Protocol):
    """A model that embeds images (and optionally audio) into one vector space.

    ``embed_audio`` is optional: leave it out and audio moments get no vector."""

    @property
    def model_id(self) -> str:
        """Names the model (and version), for the owner to tell vectors apart."""

    @property
    def dim(self) -> int:
        """How many numbers each vector has."""

    def embed_image(self, path: Path) -> Sequence[float]:
        """The vector of the image file at ``path``."""
