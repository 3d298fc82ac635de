"""What ``agent-notebook doctor`` checks, for every front end (the CLI, the web page):
where the data is, which backend, whether search finds by meaning (the embedder), the
backlog of moments waiting for a vector, media support, for a database server its
version, this process's pool and how far this process's vector index lags the database, and whether every file and
directory of the home is owner-only."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..config import NotebookConfig
from ..privacy import permissions
from ..storage import StorageBackend

if TYPE_CHECKING:
    from ..embed.multimodal import MultimodalEmbedder
    from ..media.store import MediaStore
    from ..search.semantic import SemanticIndex


class Examined(Protocol):
    """What the checks read of a notebook (a :class:`~agent_notebook.Notebook`)."""

    @property
    def backend(self) -> StorageBackend: ...
    @property
    def home(self) -> Path | None: ...
    @property
    def config(self) -> NotebookConfig: ...
    @property
    def multimodal_embedder(self) -> MultimodalEmbedder | None: ...
    @property
    def semantic(self) -> SemanticIndex | None: ...
    @property
    def embedder_name(self) -> str: ...
    def unembedded(self) -> int: ...
    def media_store(self) -> MediaStore: ...


@dataclass
class DoctorReport:
    #: Each check's name and what was found, in the order shown.
    checks: dict[str, Any]
    loosened: list[permissions.Loosened] = field(default_factory=list)
    fixed: list[permissions.Fixed] = field(default_factory=list)


def doctor(nb: Examined, *, fix: bool = False) -> DoctorReport:
    """Check ``nb`` (opened with a home) and this installation; ``fix`` makes what is open
    to other users owner-only again first."""
    from ..embed import default_embedder_status

    semantic = nb.semantic
    chosen = nb.embedder_name
    status = default_embedder_status("default" if chosen == "none" else chosen)
    if not nb.config.privacy.modalities.embeddings:
        embedder = "none: turned off by privacy.modalities.embeddings in config.yaml"
    elif semantic is None:
        embedder = "none: " + (status.detail if not status.available else "turned off")
    elif semantic.model_id == status.model_id:
        embedder = status.detail
    else:
        embedder = semantic.model_id
    assert nb.home is not None
    fixed = permissions.fix_home(nb.home) if fix else []
    loosened = permissions.check_home(nb.home)
    checks: dict[str, Any] = {
        "home": str(nb.home),
        "backend": f"{nb.backend.capabilities.name} at {nb.backend.location}",
        "moments": nb.backend.count_moments(),
        "embedder": embedder,
        "search": "hybrid (lexical, vector, concept)" if semantic else "lexical only",
        "unembedded": nb.unembedded(),
        **nb.backend.server_status(),
        **_vector_lag(nb),
        "multimodal embedder": _multimodal(nb),
        "media decoders": _decoders(),
        "media files": _media_files(nb),
        "permissions": _permissions_summary(loosened, fixed, fix),
    }
    return DoctorReport(checks, loosened, fixed)


def _vector_lag(nb: Examined) -> dict[str, str]:
    """Where servers share the vectors: this process's index against the database's
    change log (each server's index catches up before its next search)."""
    semantic = nb.semantic
    if semantic is None or not nb.backend.capabilities.shared_embedding:
        return {}
    newest = nb.backend.last_vector_change()
    local = semantic.position
    if local is None:
        held = "not loaded in this process (it loads at the first search)"
    else:
        held = f"at change {local}, {max(newest - local, 0)} behind"
    return {"vector index": f"database at change {newest}; this process's index {held}"}


def _multimodal(nb: Examined) -> str:
    from ..embed.multimodal import NO_MULTIMODAL_EMBEDDER

    embedder = nb.multimodal_embedder
    return NO_MULTIMODAL_EMBEDDER if embedder is None else embedder.model_id


def _media_files(nb: Examined) -> str:

    count = len(nb.media_store().names())
    unsealed = nb.backend.cipher is not None and count
    return f"{count} in media/" + (" (not covered by encryption at rest)" if unsealed else "")


def _decoders() -> str:
    """Which media formats this installation can decode (and so attach and sign)."""
    from ..media.decode import decoders_available

    found = decoders_available()
    have = [name for name, ok in found.items() if ok]
    missing = [name for name, ok in found.items() if not ok]
    return ", ".join(have) + (f" (missing: {', '.join(missing)})" if missing else "")


def _permissions_summary(
    loosened: list[permissions.Loosened], fixed: list[permissions.Fixed], fix: bool
) -> str:
    done = sum(1 for change in fixed if change.after is not None)
    if not loosened:
        return f"owner-only (fixed {done} path(s))" if done else "owner-only"
    left = f"{len(loosened)} path(s) open to other users"
    return f"{left} (fixed {done}, see below)" if fix else f"{left}: run doctor --fix"
