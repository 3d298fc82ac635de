"""What a server is started with."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from .. import config as cfg

#: The most bytes JSON spends on one byte of a text: a control character (one byte of
#: UTF-8) is sent as ``\u0001``; other characters cost at most 3x (``\uXXXX`` for 2-4
#: bytes of UTF-8, a pair of them for 4), ASCII 1x.
JSON_BYTES_PER_TEXT_BYTE = len(json.dumps("\x01")) - len(json.dumps(""))
#: Room for what a request carries besides one moment's text: its other fields (speaker,
#: concepts, actions...) and the JSON around them.
ENVELOPE_BYTES = 64 * 1024


def body_limit_for(max_text_bytes: int) -> int:
    """The body limit that lets one moment of ``max_text_bytes`` through however JSON
    escapes it, so that a text over the limit gets the facade's clear 422, not a 413."""
    return JSON_BYTES_PER_TEXT_BYTE * max_text_bytes + ENVELOPE_BYTES


DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
#: How long the server waits for the next part of a request's body (then a 408).
READ_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ServerSettings:
    """``home``/``backend`` as for every command (None: ``AGENT_NOTEBOOK_HOME`` or the
    default); ``model`` the default chat model ("provider:model"; None: ``chat.model`` of
    ``config.yaml``, else ``AGENT_NOTEBOOK_MODEL``); ``models`` extra chat model instances a
    request's ``model_override`` may name (the offline ``offline:notes`` and ``fake:echo`` are always there).
    ``homes``: serve several owners' notebooks at once (``home``, when given too, is the
    first); each request's bearer token selects its notebook."""

    home: Path | None = None
    homes: tuple[Path, ...] = ()
    backend: str | None = None
    model: str | None = None
    models: Mapping[str, BaseChatModel] = field(default_factory=dict)
    #: Requests with a larger body get 413; None: :func:`body_limit_for` the largest
    #: ``moments.max_text_bytes`` of the notebooks served (``--max-body`` sets it).
    max_body_bytes: int | None = None
    host: str = DEFAULT_HOST
    mcp: bool = True
    #: The longest wait for the next part of a request's body before a 408 (None: no limit).
    read_timeout_s: float | None = READ_TIMEOUT_S

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
