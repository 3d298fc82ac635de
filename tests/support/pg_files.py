"""The files of a PostgreSQL test database on the server's disk (tables, TOAST, indexes;
the write-ahead log), for the checks that a text has left them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def database_files(url: str) -> tuple[list[Path], list[Path]]:
    """Every file of ``url``'s database after a ``CHECKPOINT`` (which writes what the
    buffers hold), and those of the schema's tables, their TOAST tables and indexes."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        data_dir = Path(str(conn.execute("SHOW data_directory").fetchone()[0]))  # type: ignore[index]
        relations = conn.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c "
            "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'i') "
            "UNION SELECT pg_relation_filepath(t.oid) FROM pg_class c "
            "JOIN pg_class t ON t.oid = c.reltoastrelid "
            "WHERE c.relnamespace = current_schema()::regnamespace "
            "UNION SELECT pg_relation_filepath(i.indexrelid) FROM pg_class c "
            "JOIN pg_index i ON i.indrelid = c.reltoastrelid "
            "WHERE c.relnamespace = current_schema()::regnamespace"
        ).fetchall()
        database = conn.execute(
            "SELECT oid FROM pg_database WHERE datname = current_database()"
        ).fetchone()
    assert database is not None
    folder = data_dir / "base" / str(database[0])
    if not os.access(folder, os.R_OK | os.X_OK):
        pytest.skip(f"cannot read the database's files in {folder}: run as root or postgres")
    every = sorted(p for p in folder.iterdir() if p.is_file())
    tables = [data_dir / path for (path,) in relations if path is not None]
    assert {p.name for p in tables} <= {p.name for p in every}, "a table's file is elsewhere"
    return every, tables
