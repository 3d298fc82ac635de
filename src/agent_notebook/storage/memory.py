"""The in-memory reference backend: the contract at its simplest, passed first by the suite."""

from __future__ import annotations

from .base import Capabilities
from .staged import StagedBackend


class MemoryBackend(StagedBackend):
    """Everything in process memory; gone when the process ends. ``MemoryBackend(shared=
    True)`` copies no record in or out (see :class:`StagedBackend`): a scratch copy."""

    capabilities = Capabilities(
        name="memory",
        crash_atomic=True,  # nothing survives a crash, so nothing half-written does either
        multi_process=False,
        persistent=False,
        native_full_text=False,
    )

    @property
    def location(self) -> str:
        return ":memory:"

    def purge(self) -> None:
        """Nothing is kept but the current records: a rewritten text is gone already."""
