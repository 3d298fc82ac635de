"""A store search's ``filter`` and namespace prefix mean the same on a SQLite and a
PostgreSQL notebook (docs/storage.md): one suite, run on both, with and without a query.

The semantics are LangGraph's ``SqliteStore``'s (the SQLite notebook's store): a dotted key
is a path into nested objects; a list is equal as JSON; ``None`` matches a missing field as well as a null one;
``$ne`` matches only a field that is there and not null; a number is compared as a number
(a string by its leading number, 0 without one, as SQLite's ``CAST``), a string by code
point, and a number sorts before every string. A prefix may be a list, as LangGraph's stores
take it, with ``refresh_ttl`` too."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_notebook.core.crypto import Cipher, generate_key
from agent_notebook.langgraph.store.sqlite import StoreIndex
from agent_notebook.langgraph.stores import open_store
from agent_notebook.storage import SqliteBackend, StorageBackend
from agent_notebook.storage.postgres import PostgresBackend
from tests.support import pg
from tests.support.embedders import WORDS, BagOfWords

APP = ("app", "items")
ITEMS: dict[str, dict[str, Any]] = {
    "seven": {
        "n": 7,
        "s": "apple",
        "meta": {"rank": 2, "tag": "x"},
        "flag": True,
        "nul": None,
        "tags": ["a", 1],
    },
    "thirty": {"n": 30, "s": "banana", "meta": {"rank": 10}},
    "text30": {"n": "30", "s": "Cherry"},  # a number as text
    "word": {"n": "abc", "s": 5},  # a string where others have numbers, and the reverse
    "none": {"n": None},
    "bare": {},
}
EVERY = set(ITEMS)

CASES: list[tuple[dict[str, Any], set[str]]] = [
    # numbers: compared as numbers (7 < 25 < 30), a string by its leading number ("abc": 0)
    ({"n": {"$gt": 25}}, {"thirty", "text30"}),
    ({"n": {"$gte": 30}}, {"thirty", "text30"}),
    ({"n": {"$lt": 25}}, {"seven", "word"}),
    ({"n": {"$lte": 7}}, {"seven", "word"}),
    ({"n": {"$gt": 7, "$lt": 31}}, {"thirty", "text30"}),
    ({"n": {"$eq": 7}}, {"seven"}),
    ({"n": 30}, {"thirty"}),  # the number, not the text "30"
    ({"n": "30"}, {"text30"}),  # and the reverse
    ({"n": {"$ne": 7}}, {"thirty", "text30", "word"}),  # a missing or null n: no match
    ({"n": {"$ne": "30"}}, {"seven", "thirty", "word"}),
    # strings: by code point ("C" < "a" < "b"); a number sorts before any string
    ({"s": {"$gt": "b"}}, {"thirty"}),
    ({"s": {"$gte": "apple"}}, {"seven", "thirty"}),
    ({"s": {"$lt": "b"}}, {"seven", "text30", "word"}),
    ({"s": {"$lte": "Cherry"}}, {"text30", "word"}),
    ({"s": "apple"}, {"seven"}),
    ({"s": {"$eq": 5}}, {"word"}),
    # None: a missing field as well as a null one; $ne None: there and not null
    ({"n": None}, {"none", "bare"}),
    ({"n": {"$eq": None}}, {"none", "bare"}),
    ({"n": {"$ne": None}}, {"seven", "thirty", "text30", "word"}),
    ({"nul": None}, EVERY),
    ({"nul": {"$ne": None}}, set()),
    # a dotted key is a path into nested objects
    ({"meta.rank": {"$gt": 5}}, {"thirty"}),
    ({"meta.rank": 2}, {"seven"}),
    ({"meta.tag": "x"}, {"seven"}),
    ({"meta.rank": None}, EVERY - {"seven", "thirty"}),
    ({"meta.tag": {"$ne": "y"}}, {"seven"}),
    ({"meta.rank.deeper": None}, EVERY),
    # a list: equal as JSON, plain or under $eq
    ({"tags": ["a", 1]}, {"seven"}),
    ({"tags": {"$eq": ["a", 1]}}, {"seven"}),
    ({"tags": {"$ne": ["a", 1]}}, set()),
    ({"tags": {"$ne": ["a"]}}, {"seven"}),
    # booleans, and several keys at once
    ({"flag": True}, {"seven"}),
    ({"flag": {"$ne": False}}, {"seven"}),
    ({"n": {"$gt": 1}, "s": {"$lt": "b"}}, {"seven", "text30"}),
]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StorageBackend]:
    made: StorageBackend = (
        SqliteBackend(tmp_path / "notebook.db")
        if request.param == "sqlite"
        else PostgresBackend(pg.database_url(), schema_name=pg.schema_for(tmp_path))
    )
    yield made
    made.close()


@pytest.fixture
def store(backend: StorageBackend) -> Iterator[Any]:
    """The notebook's store for ``backend``, semantic, with :data:`ITEMS` under :data:`APP`
    (each with a text, so that a query ranks every one of them)."""
    index = StoreIndex({"dims": len(WORDS) + 1, "embed": BagOfWords(0.1), "fields": ["text"]})
    made, conn = open_store(backend, index=index)
    for key, value in ITEMS.items():
        made.put(APP, key, {**value, "text": "cat food"})
    made.put(("other",), "seven", ITEMS["seven"])  # outside the prefix searched
    yield made
    if conn is not None:
        conn.close()


def _keys(found: list[Any]) -> set[str]:
    return {item.key for item in found}


@pytest.mark.parametrize(("where", "expected"), CASES, ids=[str(f) for f, _ in CASES])
def test_a_filter_means_the_same_on_both_backends(
    store: Any, where: dict[str, Any], expected: set[str]
) -> None:
    assert _keys(store.search(APP, filter=where, limit=50)) == expected
    assert _keys(store.search(("app",), filter=where, query="cat", limit=50)) == expected
    assert _keys(asyncio.run(store.asearch(["app"], filter=where, limit=50))) == expected


def test_a_filter_key_that_is_no_path_is_refused_alike(store: Any) -> None:
    for key in ("n; DROP TABLE store", "a b", "n'"):
        with pytest.raises(ValueError, match="Invalid filter key"):
            store.search(APP, filter={key: 1})


def _stores(backend: StorageBackend) -> Iterator[tuple[Any, Any]]:
    """Every store the notebook opens on ``backend``: plain, semantic and sealed."""
    index = StoreIndex({"dims": len(WORDS) + 1, "embed": BagOfWords(0.1), "fields": ["text"]})
    yield open_store(backend)
    yield open_store(backend, index=index)
    yield open_store(backend, Cipher(generate_key()))


def test_a_list_prefix_refreshes_ttls_like_a_tuple(backend: StorageBackend) -> None:
    for store, conn in _stores(backend):
        try:
            store.put(APP, "k", {"text": "cat"}, ttl=60)
            for prefix in (["app"], ["app", "items"], APP):
                found = store.search(prefix, refresh_ttl=True)
                assert [item.key for item in found] == ["k"], (type(store), prefix)
                found = asyncio.run(store.asearch(prefix, refresh_ttl=True))
                assert [item.key for item in found] == ["k"], (type(store), prefix)
            if getattr(store, "has_index", False):
                found = store.search(["app"], query="cat", refresh_ttl=True)
                assert [item.key for item in found] == ["k"]
            assert store.search(["session"], refresh_ttl=True) == []
            store.delete(APP, "k")
        finally:
            if conn is not None:
                conn.close()
