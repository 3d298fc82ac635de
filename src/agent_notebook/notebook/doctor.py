"""What ``agent-notebook doctor`` checks, for every front end (the CLI, the web page):
where the data is, which backend, whether search finds by meaning (the embedder: which
model, from which provider, and whether it answers), the backlog of moments waiting for a
vector, the chat models (the chat's, the facts judge's, the compaction summarizer's) and
whether each answers, media support, for a database server its version, this process's pool
and how far this process's vector index lags the database, and whether every file and
directory of the home is owner-only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import config as cfg
from ..config import NotebookConfig
from ..privacy import permissions
from ..storage import StorageBackend

if TYPE_CHECKING:
    from ..embed.multimodal import MultimodalEmbedder
    from ..media.store import MediaStore
    from ..search.semantic import SemanticIndex
    from .vectors import Vectors

#: A chat model's description for ``doctor``, given its name and the setting naming it:
#: which provider and model, and whether it answers one tiny message (the front end's: the
#: chat models are made above the notebook).
ModelProbe = Callable[[str, str], str]


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
    def vectors(self) -> Vectors: ...
    def media_store(self) -> MediaStore: ...


@dataclass
class DoctorReport:
    #: Each check's name and what was found, in the order shown.
    checks: dict[str, Any]
    loosened: list[permissions.Loosened] = field(default_factory=list)
    fixed: list[permissions.Fixed] = field(default_factory=list)


def doctor(
    nb: Examined, *, fix: bool = False, chat_models: ModelProbe | None = None
) -> DoctorReport:
    """Check ``nb`` (opened with a home) and this installation; ``fix`` makes what is open
    to other users owner-only again first. ``chat_models`` calls each chat model named in
    the settings once (without it, they are named only)."""
    embedder, semantic, unembedded = _embedder(nb)
    assert nb.home is not None
    fixed = permissions.fix_home(nb.home) if fix else []
    loosened = permissions.check_home(nb.home)
    search = "hybrid (lexical, vector, concept)" if semantic else "lexical only"
    if semantic is None and embedder.startswith("fails"):
        search = "fails until the embedder answers (see embedder)"
    checks: dict[str, Any] = {
        "home": str(nb.home),
        "backend": f"{nb.backend.capabilities.name} at {nb.backend.location}",
        "moments": nb.backend.count_moments(),
        "embedder": embedder,
        "search": search,
        "unembedded": unembedded,
        **_chat_models(nb.config, chat_models),
        **nb.backend.server_status(),
        **_vector_lag(nb, semantic),
        "multimodal embedder": _multimodal(nb),
        "media decoders": _decoders(),
        "media files": _media_files(nb),
        "permissions": _permissions_summary(loosened, fixed, fix),
    }
    return DoctorReport(checks, loosened, fixed)


def _embedder(nb: Examined) -> tuple[str, SemanticIndex | None, int]:
    """The embedder's line, the semantic index (None: no vectors) and how many moments
    wait for a vector. A provider's model is called once (it may not answer); the offline
    ones load here, with no call to anyone."""
    from ..embed import default_embedder_status, provider_status

    vectors = nb.vectors
    chosen = vectors.embedder_name
    if not nb.config.privacy.modalities.embeddings:
        return "none: turned off by privacy.modalities.embeddings in config.yaml", None, 0
    provider = vectors.embedder_choice == "default" and chosen not in cfg.BUILTIN_EMBEDDERS
    if provider:
        status = provider_status(chosen, vectors.embedder_setting)
        if not status.available:
            waiting = len(nb.backend.unembedded(chosen))
            return f"fails: {status.detail} ({vectors.embedder_setting})", None, waiting
    else:
        status = default_embedder_status("default" if chosen == "none" else chosen)
    semantic = vectors.semantic
    if semantic is None:
        line = "none: " + (status.detail if not status.available else "turned off")
    elif semantic.model_id == status.model_id:
        offline = "" if provider else "; offline, built in (no call made)"
        line = status.detail + offline
    else:
        line = semantic.model_id
    return line, semantic, vectors.unembedded()


def _chat_models(config: NotebookConfig, probe: ModelProbe | None) -> dict[str, str]:
    """Which chat model each setting names, and (with ``probe``) whether it answers: the
    chat's (``chat.model``), the facts judge's and the compaction summarizer's."""
    said: dict[str, str] = {}  # each model is called once

    def line(name: str | None, setting: str) -> str:
        if name is None:
            return f"none configured (set {setting})"
        if probe is None:
            return f"{name} (not called here: 'agent-notebook doctor' calls it)"
        if name not in said:
            said[name] = probe(name, setting)
        return said[name]

    chat_setting = (
        "chat.model"
        if config.chat.model
        else cfg.MODEL_ENV
        if cfg.model_from_env()
        else f"chat.model or {cfg.MODEL_ENV}"
    )
    rows = {"chat model": line(cfg.chat_model_name(config), chat_setting)}
    facts = config.facts
    if facts.enabled and facts.judge:
        setting = "facts.judge_model" if facts.judge_model else chat_setting
        rows["facts judge"] = line(cfg.judge_model_name(config), setting)
    else:
        rows["facts judge"] = "off (facts.enabled and facts.judge: the rules decide alone)"
    if config.compaction.summarizer == "llm":
        setting = "compaction.model" if config.compaction.model else chat_setting
        rows["compaction summarizer"] = "llm: " + line(cfg.summarizer_model_name(config), setting)
    else:
        rows["compaction summarizer"] = "extractive (no model)"
    return rows


def _vector_lag(nb: Examined, semantic: SemanticIndex | None) -> dict[str, str]:
    """Where servers share the vectors: this process's index against the database's
    change log (each server's index catches up before its next search)."""
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
