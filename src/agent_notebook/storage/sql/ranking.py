"""What the searches by words share (SQLite's, PostgreSQL's, and the staged backends' that
rank as SQLite does): the choice of a search's terms within a cost budget, and the
document frequencies a write changes.

Both rank lexical matches with FTS5's BM25 (SQLite computes it in FTS5, PostgreSQL from the
term statistics it keeps, :func:`bm25_idf`), over the same index terms
(:func:`agent_notebook.core.lexical.terms`, or their keyed tokens when the notebook is
encrypted), so the same notebook ranks the same on both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from ...core.lexical import BM25_B, BM25_K1, bm25_idf, query_term_weights, stem, tokenize
from ...model import Moment

#: How many postings (moment, term pairs) one search may score; see :func:`choose_terms`.
POSTINGS_BUDGET: Final = 1500
#: Terms one search matches by, chosen by weight (rarity, recency in the query).
MAX_QUERY_TERMS: Final = 64
#: Words of a query read at most (its newest).
MAX_QUERY_TOKENS: Final = 2000

__all__ = [
    "BM25_B",
    "BM25_K1",
    "MAX_QUERY_TERMS",
    "MAX_QUERY_TOKENS",
    "POSTINGS_BUDGET",
    "bm25_idf",
    "choose_terms",
    "frequency_change",
    "query_words",
]


def query_words(
    query: str, token: Callable[[str], str] | None = None
) -> tuple[dict[str, str], list[str]]:
    """The index terms of ``query``, each with the word it came from, and the terms in query
    order (its newest :data:`MAX_QUERY_TOKENS` words: a pasted book is not a query).
    ``token`` maps a stem to its keyed token (encrypted notebooks index tokens, which then
    stand for themselves)."""
    words: dict[str, str] = {}
    order: list[str] = []
    for word in tokenize(query):
        if token is not None:
            keyed = token(stem(word))
            words.setdefault(keyed, keyed)
        else:
            keyed = stem(word)
            words.setdefault(keyed, word)
        order.append(keyed)
    return words, order[-MAX_QUERY_TOKENS:]


def choose_terms(
    order: list[str], docs: Mapping[str, int], total: int, budget: int = POSTINGS_BUDGET
) -> tuple[list[str], int]:
    """The terms a search scores: those that say most first (rare, late in the query; see
    :func:`query_term_weights`), never by position, at most :data:`MAX_QUERY_TERMS`, while
    their postings fit ``budget`` (always the first one), so a search costs the same in a
    notebook of a thousand moments and of millions. ``docs`` holds each term's document
    count, ``total`` the documents. Returns them and their postings; over ``budget`` (the
    first alone is), only the newest moments count."""
    weights = query_term_weights(order, dict(docs), total)
    chosen: list[str] = []
    postings = 0
    for term in sorted(weights, key=lambda t: (-weights[t], docs[t], t)):
        if len(chosen) == MAX_QUERY_TERMS:
            break
        if chosen and postings + docs[term] > budget:
            break  # the terms after it say less: the budget bounds the work
        chosen.append(term)
        postings += docs[term]
    return chosen, postings


def frequency_change(
    moments: Sequence[Moment], replaced: dict[int, Moment], terms_of: Callable[[str], list[str]]
) -> Counter[str]:
    """How writing ``moments`` over ``replaced`` (their stored versions) changes each term's
    document count; a moment that is removed is written as one with no text."""
    change: Counter[str] = Counter()
    for moment in moments:
        change.update(set(terms_of(moment.content.text)))
        if (old := replaced.get(moment.number)) is not None:
            change.subtract(set(terms_of(old.content.text)))
    return change
