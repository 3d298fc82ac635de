"""Checkpoints stored compressed (issue 17: bytes on disk per chat turn).

:class:`CompressedSerializer` wraps a LangGraph serde: what it serialises is deflated with a
preset dictionary of the names every checkpoint repeats (LangGraph's channel and field
names, LangChain's message classes, the zero-padded versions) and tagged ``<type>.z1``; a
value that would not shrink is stored as it was. Reading takes both, so checkpoints written
before (plain ``msgpack``) read as ever. Under encryption it sits inside LangGraph's
``EncryptedSerializer`` (compress, then encrypt: ciphertext does not compress).

The dictionary is part of the stored format: never edit :data:`DICTIONARY_V1`; a better
one is a new tag (``.z2``) with the old kept for reading.
"""

from __future__ import annotations

import zlib
from typing import Any, Final

from langgraph.checkpoint.serde.base import SerializerProtocol

__all__ = ["CompressedSerializer"]

#: Tokens the serialised checkpoints and writes of LangGraph graphs repeat. Deflate finds
#: matches anywhere in the dictionary, cheapest near its end, so the most common come last.
_TOKENS_V1: Final = (
    "langchain_core.messages.tool",
    "ToolMessage",
    "tool_call_id",
    "artifact",
    "status",
    "success",
    "langchain_core.messages.system",
    "SystemMessage",
    "langchain_core.messages.modifier",
    "RemoveMessage",
    "__interrupt__",
    "__resume__",
    "__input__",
    "notebook",
    "context_config",
    "context",
    "condensed_history",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "example",
    "langchain_core.messages.human",
    "HumanMessage",
    "human",
    "langchain_core.messages.ai",
    "AIMessage",
    "additional_kwargs",
    "response_metadata",
    "type",
    "name",
    "tool_calls",
    "invalid_tool_calls",
    "usage_metadata",
    "model_validate_json",
    "content",
    "lc_run--",
    "channel_values",
    "channel_versions",
    "versions_seen",
    "updated_channels",
    "branch:to:agent",
    "__start__",
    "messages",
    "recorded_through",
    "model_override",
    "+00:00",
    "0000000000000000000000000000000",
)
DICTIONARY_V1: Final = "\x00".join(_TOKENS_V1).encode()
TAG_V1: Final = ".z1"
_LEVEL: Final = 6
_WBITS: Final = -15  # raw deflate: no zlib header or checksum (the row is the unit)


def compress_v1(data: bytes) -> bytes:
    packer = zlib.compressobj(_LEVEL, zlib.DEFLATED, _WBITS, zdict=DICTIONARY_V1)
    return packer.compress(data) + packer.flush()


def decompress_v1(data: bytes) -> bytes:
    unpacker = zlib.decompressobj(_WBITS, zdict=DICTIONARY_V1)
    out = unpacker.decompress(data) + unpacker.flush()
    if not unpacker.eof:
        raise ValueError("a compressed checkpoint value is truncated")
    return out


class CompressedSerializer(SerializerProtocol):
    """``serde`` with its bytes deflated (see the module)."""

    def __init__(self, serde: SerializerProtocol) -> None:
        self.serde = serde

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        type_, data = self.serde.dumps_typed(obj)
        if len(data) < 16:  # None, small numbers: nothing to gain
            return type_, data
        packed = compress_v1(data)
        if len(packed) >= len(data):
            return type_, data
        return type_ + TAG_V1, packed

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_, blob = data
        if type_.endswith(TAG_V1):
            return self.serde.loads_typed((type_[: -len(TAG_V1)], decompress_v1(blob)))
        return self.serde.loads_typed(data)
