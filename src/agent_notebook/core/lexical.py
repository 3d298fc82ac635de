"""Lexical matching shared by the backends: one tokenizer, and BM25 in Python.

The Python tokenizer mirrors FTS5's ``porter unicode61 remove_diacritics 2`` so that the
in-memory, YAML and PostgreSQL backends rank like SQLite: case-folded, accents removed,
split on anything that is not a letter or digit, and each word reduced to its Porter stem
("painted" and "painting" are both "paint") by FTS5's own stemmer.
"""

from __future__ import annotations

import functools
import math
import re
import sqlite3
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable

FTS5_TOKENIZER = "porter unicode61 remove_diacritics 2"

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

BM25_K1 = 1.2
BM25_B = 0.75


def tokenize(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text.casefold())
    if not folded.isascii():  # no ASCII character is a combining mark
        folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return _WORD.findall(folded)


class _Fts5Porter:
    """FTS5's own ``porter`` tokenizer, asked for the stems of words: the stems the SQLite
    index holds, exactly (snowball's Porter, used before, differs on a few words, e.g.
    "trekked", "possibly", "psychology", so the other backends missed what SQLite found).
    One in-memory table, one lock; each word is asked once."""

    #: Words remembered at most (past it, new words are stemmed each time they come).
    REMEMBERED = 1 << 17

    def __init__(self) -> None:
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        conn.execute(f"CREATE VIRTUAL TABLE words USING fts5 (word, tokenize = '{FTS5_TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE stems USING fts5vocab (words, 'instance')")
        self._conn = conn
        self._lock = threading.Lock()
        self._known: dict[str, str] = {}

    def stems(self, words: list[str]) -> list[str]:
        known = self._known
        missing = [w for w in dict.fromkeys(words) if w not in known]
        fresh = self._ask(missing) if missing else {}
        return [fresh[w] if w in fresh else known[w] for w in words]

    def _ask(self, words: list[str]) -> dict[str, str]:
        with self._lock:
            self._conn.executemany(
                "INSERT INTO words (rowid, word) VALUES (?, ?)", list(enumerate(words, 1))
            )
            found: dict[int, list[str]] = {}
            for doc, term in self._conn.execute("SELECT doc, term FROM stems ORDER BY doc, offset"):
                found.setdefault(doc, []).append(term)
            self._conn.execute("DELETE FROM words")
        # A word is one token of FTS5's too (the tokenizers split alike); if one ever were
        # not, it stays as it is.
        fresh = {w: t[0] if len(t := found.get(i, [])) == 1 else w for i, w in enumerate(words, 1)}
        if len(self._known) < self.REMEMBERED:
            self._known.update(fresh)
        return fresh


@functools.cache
def _porter() -> _Fts5Porter:
    # Made on the first word stemmed: a command that never searches nor records pays nothing.
    return _Fts5Porter()


def stem(word: str) -> str:
    """The Porter stem of a tokenized word, as FTS5's ``porter`` tokenizer stems it (words
    shorter than 3 or longer than 64 characters pass through)."""
    return _porter().stems([word])[0]


def terms(text: str) -> list[str]:
    """The index terms of ``text``: its words, stemmed."""
    return _porter().stems(tokenize(text))


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

    def document_counts(self, wanted: Iterable[str]) -> dict[str, int]:
        """How many documents hold each of the ``wanted`` terms that any holds."""
        return {t: n for t in wanted if (n := self._df[t]) > 0}

    def score(self, query: str, keys: Iterable[int] | None = None) -> list[tuple[int, float]]:
        """(key, score) for documents matching any term of ``query``, best first."""
        return self.score_terms(list(dict.fromkeys(terms(query))), keys)

    def score_terms(
        self, chosen: list[str], keys: Iterable[int] | None = None, above: int = 0
    ) -> list[tuple[int, float]]:
        """(key, score) of the documents (among ``keys``, numbered above ``above``) that
        have any of the ``chosen`` terms, best first and by key on a tie: FTS5's
        ``bm25()`` (``fts5_aux.c``) as SQLite ranks the same terms, negated (higher is
        better), so the in-process backends rank like SQLite."""
        n = len(self._docs)
        if not chosen or not n:
            return []
        avg = self._total_length / n or 1.0
        idf = {t: bm25_idf(n, self._df[t]) for t in dict.fromkeys(chosen) if self._df[t] > 0}
        if not idf:
            return []
        results = []
        for key in self._docs if keys is None else keys:
            counts = self._docs.get(key)
            if counts is None or key <= above:
                continue
            norm = BM25_K1 * (1 - BM25_B + BM25_B * self._lengths[key] / avg)
            s = 0.0
            matched = False
            for t, w in idf.items():
                f = counts.get(t)
                if f:
                    s += w * f * (BM25_K1 + 1) / (f + norm)
                    matched = True
            if matched:
                results.append((key, s))
        results.sort(key=lambda kv: (-kv[1], kv[0]))
        return results


def bm25_idf(documents: int, with_term: int) -> float:
    """FTS5's BM25 inverse document frequency (``fts5_aux.c``): ``log((N - n + 0.5) /
    (n + 0.5))``, never below 1e-6 (a term in most documents says almost nothing; the
    ``log(1 + ...)`` of other BM25s would still weigh it)."""
    idf = math.log((documents - with_term + 0.5) / (with_term + 0.5))
    return idf if idf > 0.0 else 1e-6


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
