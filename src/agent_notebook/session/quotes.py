"""Text cut from a session notebook, kept as references where it quotes the conversation.

The deterministic updater's lines quote the thread's messages, which are already moments; a
cut of them stored verbatim would store the conversation twice (and keep a redacted moment's
words alive). :func:`compress` replaces each long verbatim quote by ``⟦m_N@offset+length⟧``
and :func:`expand` puts the exact text back, so a cut is still recovered byte for byte,
except where the quoted moment was redacted since: that quote stays redacted.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Mapping

__all__ = ["MIN_QUOTE", "compress", "expand"]

OPEN, CLOSE = "⟦", "⟧"
#: Shorter quotes stay literal: a reference is about 20 characters.
MIN_QUOTE = 48
_PROBE = 24
_REFERENCE = re.compile(r"⟦m_(\d+)@(\d+)\+(\d+)⟧")
_SEPARATOR = "\x00"


class _Sources:
    """The quoted moments' texts joined into one string, so each probe is one ``find``."""

    def __init__(self, texts: Mapping[int, str]) -> None:
        self.numbers = list(texts)
        self.starts: list[int] = []
        parts, at = [], 0
        for number in self.numbers:
            self.starts.append(at)
            parts.append(texts[number])
            at += len(texts[number]) + 1
        self.joined = _SEPARATOR.join(parts)

    def quote_at(self, line: str, start: int) -> tuple[int, int, int] | None:
        """The longest verbatim quote of a source beginning at ``line[start]``, if long
        enough: (moment number, offset in its text, length)."""
        probe = line[start : start + _PROBE]
        best: tuple[int, int, int] | None = None
        at = self.joined.find(probe)
        while at >= 0:
            length = _common_prefix(line, start, self.joined, at)
            if length >= MIN_QUOTE and (best is None or length > best[2]):
                which = bisect.bisect_right(self.starts, at) - 1
                best = (self.numbers[which], at - self.starts[which], length)
            at = self.joined.find(probe, at + 1)
        return best


def _common_prefix(a: str, i: int, b: str, j: int) -> int:
    n = 0
    limit = min(len(a) - i, len(b) - j)
    while n < limit and a[i + n] == b[j + n] and b[j + n] != _SEPARATOR:
        n += 1
    return n


def compress(text: str, sources: Mapping[int, str]) -> str:
    """``text`` with its long verbatim quotes of ``sources`` (moment number -> text)
    replaced by references. Text that already holds the reference brackets is kept as is."""
    if not sources or OPEN in text or CLOSE in text:
        return text
    index = _Sources({n: t for n, t in sources.items() if _SEPARATOR not in t})
    return "\n".join(_compress_line(line, index) for line in text.split("\n"))


def _compress_line(line: str, index: _Sources) -> str:
    out: list[str] = []
    literal_from = start = 0
    while start <= len(line) - MIN_QUOTE:
        found = index.quote_at(line, start) if start == 0 or line[start - 1] == " " else None
        if found is None:
            start += 1
            continue
        number, offset, length = found
        out += [line[literal_from:start], f"{OPEN}m_{number}@{offset}+{length}{CLOSE}"]
        start = literal_from = start + length
    out.append(line[literal_from:])
    return "".join(out)


def expand(text: str, moment_text: Callable[[int], str | None]) -> str:
    """``text`` with each reference replaced by the quoted characters of its moment
    (``moment_text(number)``; None or too short: the moment is gone or redacted)."""

    def quote(match: re.Match[str]) -> str:
        number, offset, length = (int(g) for g in match.groups())
        source = moment_text(number)
        if source is None or len(source) < offset + length:
            return f"[quote of m_{number}: redacted or deleted]"
        return source[offset : offset + length]

    return _REFERENCE.sub(quote, text)
