"""A semantic search of the notebook's LangGraph store: p50 and p95 latency of
``store.search(ns, query=..., limit=10)`` over N items, on the SQLite and the PostgreSQL
store, interleaved query by query so the machine's load falls on every variant alike:
each store as it is (its in-process copy of the vectors, brought up to date with the
store's change log) and "uncached" (that copy thrown away before each search, so every
vector is read and decoded from the database, as before the copy existed). Vectors are 384
random float32 (a MiniLM's size) from a seeded generator, so the store's embedder costs
nothing and both stores hold the same ones; the notebook's own query embedding (MiniLM) is
timed beside the searches, on the same queries, and added to their p50.

    python bench/store_search.py [--items 1000 10000] [--queries 50] [--pg postgresql://...]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

sys.path.insert(0, str(Path(__file__).parent))
from _common import summary_ms
from agent_notebook.embed import MiniLmEmbedder
from agent_notebook.langgraph.store.sqlite import StoreIndex
from agent_notebook.langgraph.stores import open_store
from agent_notebook.storage import SqliteBackend

DIM = 384
NS = ("notes",)


class SeededVectors(Embeddings):
    """A random unit vector per text, the same for the same text."""

    def _one(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


def fill(store: Any, items: int) -> None:
    for start in range(0, items, 500):
        store.batch(
            [
                PutOp(NS, f"k{i}", {"text": f"note number {i}"})
                for i in range(start, min(items, start + 500))
            ]
        )


def _name(store: str, cached: bool) -> str:
    return store if cached else f"{store} uncached"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--queries", type=int, default=50)
    default_pg = os.environ.get(
        "AGENT_NOTEBOOK_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres"
    )
    parser.add_argument("--pg", default=default_pg)
    args = parser.parse_args()
    import psycopg

    from agent_notebook.storage.postgres import PostgresBackend

    index = StoreIndex({"dims": DIM, "embed": SeededVectors(), "fields": ["text"]}, "seeded")
    print(f"load average at start: {os.getloadavg()}")
    embedder = MiniLmEmbedder()
    embedder.embed_query("warm up")
    for items in args.items:
        with tempfile.TemporaryDirectory() as tmp:
            schema = f"bench_{uuid.uuid4().hex[:10]}"
            sqlite_backend = SqliteBackend(Path(tmp) / "notebook.db")
            pg_backend = PostgresBackend(args.pg, schema_name=schema)
            stores = {}
            conns = []
            for name, backend in (("sqlite", sqlite_backend), ("postgres", pg_backend)):
                store, conn = open_store(backend, index=index)
                started = time.perf_counter()
                fill(store, items)
                took = time.perf_counter() - started
                print(f"{name}: {items} items put in {took:.1f} s")
                stores[name] = store
                conns.append(conn)
            for store in stores.values():  # the first search loads the copy
                store.search(NS, query="warm up", limit=10)
            variants = [(n, cached) for n in stores for cached in (True, False)]
            samples: dict[str, list[float]] = {_name(*v): [] for v in variants}
            embedding: list[float] = []
            agree = 0
            for q in range(args.queries):
                query = f"question {q} about the notes"
                started = time.perf_counter()
                embedder.embed_query(query)
                embedding.append(time.perf_counter() - started)
                tops = {}
                for name, cached in variants:
                    store = stores[name]
                    if not cached:
                        store._vector_cache = None
                    started = time.perf_counter()
                    hits = store.search(NS, query=query, limit=10)
                    samples[_name(name, cached)].append(time.perf_counter() - started)
                    tops[name, cached] = [h.key for h in hits]
                agree += len({tuple(top) for top in tops.values()}) == 1
            query_p50 = float(np.median(embedding))
            print(f"{'minilm query embedding':26s}: {summary_ms(embedding)}")
            for name, taken in samples.items():
                with_query = float(np.median(taken)) + query_p50
                print(
                    f"{name:17s} {items:6d} items: search {summary_ms(taken)}   "
                    f"p50 with the query embedding {1000 * with_query:7.1f} ms"
                )
            p50 = {n: float(np.median(t)) for n, t in samples.items()}
            for name in stores:
                ratio = p50[_name(name, False)] / p50[_name(name, True)]
                print(f"{name}: uncached/cached p50 ratio {ratio:.1f}")
            print(f"same top 10 in all four in {agree} of {args.queries} queries")
            for conn in conns:
                conn.close()
            sqlite_backend.close()
            pg_backend.close()
            with psycopg.connect(args.pg, autocommit=True) as admin:
                admin.execute(f"DROP SCHEMA {schema} CASCADE")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
