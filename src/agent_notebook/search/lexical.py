"""Lexical matching shared by the backends: one tokenizer, and BM25 in Python.

The Python tokenizer mirrors FTS5's ``unicode61 remove_diacritics 2`` closely enough that the
in-memory and YAML backends rank like SQLite on ordinary text: case-folded, accents removed,
split on anything that is not a letter or digit.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

FTS5_TOKENIZER = "unicode61 remove_diacritics 2"

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

BM25_K1 = 1.2
BM25_B = 0.75


def tokenize(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text.casefold())
    stripped = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return _WORD.findall(stripped)


class Bm25Index:
    """A tiny in-process BM25 index over documents keyed by an integer (the moment number)."""

    def __init__(self) -> None:
        self._docs: dict[int, Counter[str]] = {}
        self._lengths: dict[int, int] = {}
        self._df: Counter[str] = Counter()
        self._total_length = 0

    def __len__(self) -> int:
        return len(self._docs)

    def put(self, key: int, text: str) -> None:
        self.remove(key)
        terms = Counter(tokenize(text))
        self._docs[key] = terms
        length = sum(terms.values())
        self._lengths[key] = length
        self._total_length += length
        self._df.update(terms.keys())

    def remove(self, key: int) -> None:
        terms = self._docs.pop(key, None)
        if terms is None:
            return
        self._total_length -= self._lengths.pop(key)
        self._df.subtract(terms.keys())

    def score(self, query: str, keys: Iterable[int] | None = None) -> list[tuple[int, float]]:
        """(key, score) for documents matching any query token, best first."""
        tokens = list(dict.fromkeys(tokenize(query)))
        n = len(self._docs)
        if not tokens or not n:
            return []
        avg = self._total_length / n or 1.0
        idf = {
            t: math.log(1 + (n - self._df[t] + 0.5) / (self._df[t] + 0.5))
            for t in tokens
            if self._df[t] > 0
        }
        if not idf:
            return []
        results = []
        for key in self._docs if keys is None else keys:
            terms = self._docs.get(key)
            if terms is None:
                continue
            norm = BM25_K1 * (1 - BM25_B + BM25_B * self._lengths[key] / avg)
            s = 0.0
            for t, w in idf.items():
                f = terms.get(t)
                if f:
                    s += w * f * (BM25_K1 + 1) / (f + norm)
            if s > 0:
                results.append((key, s))
        results.sort(key=lambda kv: (-kv[1], kv[0]))
        return results
