"""LangGraph's pools of a PostgreSQL notebook (storage/postgres/pool.py): a database away or
too slow is a StorageError at the storage boundary, whichever statement met it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_notebook.errors import StorageError
from agent_notebook.langgraph.store.postgres import open_postgres_saver, open_postgres_store
from agent_notebook.storage import open_backend
from tests.support import pg


def _kill_connections(url: str, pids: list[int]) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_a_killed_connection_under_the_store_is_a_storage_error(tmp_path: Path) -> None:
    url = pg.url_with_schema(tmp_path)
    backend = open_backend(url)
    try:
        store = open_postgres_store(backend, None)
        try:
            store.put(("app",), "k", {"v": 1})
            with store.pool.connection() as conn:
                pid = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
            _kill_connections(url, [pid])
            with pytest.raises(StorageError, match="cannot be reached or did not answer"):
                store.get(("app",), "k")
        finally:
            store.pool.close()
    finally:
        backend.close()


def test_no_free_connection_in_time_is_a_storage_error(tmp_path: Path) -> None:
    from psycopg_pool import PoolTimeout

    backend = open_backend(pg.url_with_schema(tmp_path))
    try:
        saver = open_postgres_saver(backend, None)
        try:
            held = [saver.pool.getconn() for _ in range(saver.pool.max_size)]
            try:
                with pytest.raises(StorageError) as caught, saver.pool.connection(timeout=0.1):
                    pass
                assert isinstance(caught.value.__cause__, PoolTimeout)
            finally:
                for conn in held:
                    saver.pool.putconn(conn)
        finally:
            saver.pool.close()
    finally:
        backend.close()
