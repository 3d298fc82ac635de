"""Stripping a model's ``<think>…</think>`` reasoning from its answer before it is stored."""

from __future__ import annotations

from typing import Any

from ..compaction.summarize import strip_think

_REASONING_BLOCKS = frozenset({"thinking", "reasoning", "redacted_thinking"})


def strip_think_blocks(content: str | list[Any]) -> str | list[Any]:
    """``content`` without ``<think>`` blocks: in a string, and in the text blocks of a list
    of content blocks, whose reasoning blocks are dropped."""
    if isinstance(content, str):
        return strip_think(content)
    cleaned: list[Any] = []
    for block in content:
        if isinstance(block, str):
            cleaned.append(strip_think(block))
        elif isinstance(block, dict) and block.get("type") in _REASONING_BLOCKS:
            continue
        elif isinstance(block, dict) and block.get("type") == "text":
            cleaned.append({**block, "text": strip_think(str(block.get("text", "")))})
        else:
            cleaned.append(block)
    return cleaned
