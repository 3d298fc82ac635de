"""Token counting. The seed's estimate (4 characters a token) is the fallback."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

CHARS_PER_TOKEN = 4


@runtime_checkable
class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...


class CharEstimate:
    """``ceil(len(text) / 4)``: the seed's rough estimate, needing no tokenizer."""

    def count(self, text: str) -> int:
        return -(-len(text) // CHARS_PER_TOKEN)


DEFAULT_COUNTER: TokenCounter = CharEstimate()
