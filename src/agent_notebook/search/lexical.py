"""Lexical matching shared by the backends: one tokenizer, and BM25 in Python.

The Python tokenizer mirrors FTS5's ``porter unicode61 remove_diacritics 2`` closely enough
that the in-memory and YAML backends rank like SQLite on ordinary text: case-folded, accents
removed, split on anything that is not a letter or digit, and each word reduced to its Porter
stem ("painted" and "painting" are both "paint"), the same algorithm as FTS5's.
"""

from __future__ import annotations

import functools
import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable
from typing import Any

FTS5_TOKENIZER = "porter unicode61 remove_diacritics 2"

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

BM25_K1 = 1.2
BM25_B = 0.75


def tokenize(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text.casefold())
    if not folded.isascii():  # no ASCII character is a combining mark
        folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return _WORD.findall(folded)


_PORTER_LOCK = threading.Lock()  # a stemmer object keeps its word in itself


@functools.cache
def _porter() -> Any:
    # Loaded on the first word stemmed: snowballstemmer loads every language it has.
    import snowballstemmer

    return snowballstemmer.stemmer("porter")


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """The Porter stem of a tokenized word (as FTS5's ``porter`` tokenizer stems it: words
    shorter than 3 or longer than 64 characters pass through)."""
    if not 3 <= len(word) <= 64 or word.isdigit():  # no rule of Porter's changes a number
        return word
    with _PORTER_LOCK:
        return str(_porter().stemWord(word))


def terms(text: str) -> list[str]:
    """The index terms of ``text``: its words, stemmed."""
    return [stem(word) for word in tokenize(text)]


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
        counts = Counter(terms(text))
        self._docs[key] = counts
        length = sum(counts.values())
        self._lengths[key] = length
        self._total_length += length
        self._df.update(counts.keys())

    def remove(self, key: int) -> None:
        counts = self._docs.pop(key, None)
        if counts is None:
            return
        self._total_length -= self._lengths.pop(key)
        self._df.subtract(counts.keys())

    def score(self, query: str, keys: Iterable[int] | None = None) -> list[tuple[int, float]]:
        """(key, score) for documents matching any query token, best first."""
        tokens = list(dict.fromkeys(terms(query)))
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
            counts = self._docs.get(key)
            if counts is None:
                continue
            norm = BM25_K1 * (1 - BM25_B + BM25_B * self._lengths[key] / avg)
            s = 0.0
            for t, w in idf.items():
                f = counts.get(t)
                if f:
                    s += w * f * (BM25_K1 + 1) / (f + norm)
            if s > 0:
                results.append((key, s))
        results.sort(key=lambda kv: (-kv[1], kv[0]))
        return results


def query_term_weights(
    query_terms: list[str], docs: dict[str, int], total: int
) -> dict[str, float]:
    """How much each distinct term of a query says, for choosing which to search by: its
    rarity (BM25's idf over ``total`` documents, ``docs`` holding each term's count) times
    its recency in the query, from 0.5 for the first word to 1 for the last (a long query
    is a dialogue so far, and its latest words are what it is about). Terms in no document
    are left out."""
    last: dict[str, int] = {}
    for position, term in enumerate(query_terms):
        last[term] = position
    span = max(1, len(query_terms) - 1)
    total = max(total, 1)
    return {
        term: math.log(1 + (total - df + 0.5) / (df + 0.5)) * (0.5 + 0.5 * last[term] / span)
        for term in last
        if (df := docs.get(term, 0)) > 0
    }
