"""A semantic search of the notebook's LangGraph store: p50 and p95 latency of
``store.search(ns, query=..., limit=10)`` over N items, on the SQLite store (LangGraph's
SQL with the distance registered as a Python function) and on the PostgreSQL store
(LangGraph's SQL selects, numpy scores), interleaved query by query so the machine's load
falls on both alike. Vectors are 384 random float32 (a MiniLM's size) from a seeded
generator, so the embedder costs nothing and both stores hold the same ones.

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
from agent_notebook.storage import SqliteBackend
from agent_notebook.storage.langgraph_store import StoreIndex
from agent_notebook.stores import open_store

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
            samples: dict[str, list[float]] = {name: [] for name in stores}
            agree = 0
            for q in range(args.queries):
                tops = []
                for name, store in stores.items():
                    started = time.perf_counter()
                    hits = store.search(NS, query=f"question {q}", limit=10)
                    samples[name].append(time.perf_counter() - started)
                    tops.append([h.key for h in hits])
                agree += tops[0] == tops[1]
            for name, taken in samples.items():
                print(f"{name:9s} {items:6d} items: search {summary_ms(taken)}")
            p50 = {n: float(np.median(t)) for n, t in samples.items()}
            print(
                f"postgres/sqlite p50 ratio {p50['postgres'] / p50['sqlite']:.2f}; "
                f"same top 10 in {agree} of {args.queries} queries"
            )
            for conn in conns:
                conn.close()
            sqlite_backend.close()
            pg_backend.close()
            with psycopg.connect(args.pg, autocommit=True) as admin:
                admin.execute(f"DROP SCHEMA {schema} CASCADE")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
