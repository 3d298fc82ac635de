"""What a server is started with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from .. import config as cfg

#: Requests with a larger body get 413 (1 MiB; ``--max-body`` changes it).
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


@dataclass(frozen=True)
class ServerSettings:
    """``home``/``backend`` as for every command (None: ``AGENT_NOTEBOOK_HOME`` or the
    default); ``model`` the default chat model ("provider:model"; None: ``chat.model`` of
    ``config.yaml``, else ``AGENT_NOTEBOOK_MODEL``); ``models`` extra chat model instances a
    request's ``model_override`` may name (the offline ``fake:echo`` is always there).
    ``homes``: serve several owners' notebooks at once (``home``, when given too, is the
    first); each request's bearer token selects its notebook."""

    home: Path | None = None
    homes: tuple[Path, ...] = ()
    backend: str | None = None
    model: str | None = None
    models: Mapping[str, BaseChatModel] = field(default_factory=dict)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    host: str = DEFAULT_HOST
    mcp: bool = True

    def all_homes(self) -> list[Path]:
        """The notebooks to serve, resolved, each once, in order."""
        chosen = [self.home, *self.homes] if self.homes else [self.home]
        found: list[Path] = []
        for home in chosen:
            if home is None and self.homes:
                continue
            root = cfg.resolve_home(home)
            if root not in found:
                found.append(root)
        return found
