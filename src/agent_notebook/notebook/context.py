"""What every part of one notebook reads: its backend, settings, home, token counter and
multimodal embedder. The facade makes one :class:`NotebookContext` and hands it, with the
sibling parts each one needs, to its parts (:mod:`.sessions`, :mod:`.recording`…); no part
holds the :class:`~.facade.Notebook` itself, so the parts import nothing above them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import config as cfg
from ..compaction import ARCHIVE_DIR
from ..core.tokens import TokenCounter
from ..errors import InvalidInput
from ..storage import StorageBackend

if TYPE_CHECKING:
    from ..embed.multimodal import MultimodalEmbedder
    from ..media.store import MediaStore


@dataclass
class NotebookContext:
    """Shared by the parts of one notebook; ``config`` may be replaced while it is open
    (``nb.config = …``): every part reads it from here, so all see the new settings."""

    backend: StorageBackend
    config: cfg.NotebookConfig
    home: Path | None
    tokens: TokenCounter
    multimodal_embedder: MultimodalEmbedder | None = None

    @property
    def archive_dir(self) -> Path | None:
        """``<home>/archive``, the cold archive's folder (None without a home)."""
        return None if self.home is None else self.home / ARCHIVE_DIR

    def media_store(self) -> MediaStore:
        """``<home>/media/``, where attached images and audio are kept."""
        from ..media.store import MediaStore

        if self.home is None:
            raise InvalidInput(
                "attaching media needs a notebook with a home (Notebook.open(home)): the "
                "files are kept in <home>/media/"
            )
        return MediaStore(self.home)
