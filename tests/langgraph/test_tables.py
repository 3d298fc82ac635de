"""The adapters of LangGraph's tables (langgraph/tables.py): chosen by the backend's
capability, and a PostgreSQL notebook's threads in a SQLite file kept up by SQLite's code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint

from agent_notebook.langgraph.stores import open_checkpointer
from agent_notebook.langgraph.tables import PostgresTables, SqliteTables, tables_of
from agent_notebook.storage import MemoryBackend, SqliteBackend, YamlDirBackend, open_backend
from tests.support import pg


def test_the_adapter_follows_the_capability(tmp_path: Path) -> None:
    sqlite = SqliteBackend(tmp_path / "n.db")
    yaml = YamlDirBackend(tmp_path / "y")
    try:
        for backend in (sqlite, yaml, MemoryBackend()):
            assert type(tables_of(backend)) is SqliteTables
    finally:
        sqlite.close()
        yaml.close()


def test_checkpoints_to_scrub_are_in_an_existing_file(tmp_path: Path) -> None:
    backend = SqliteBackend(tmp_path / "n.db")
    try:
        tables = tables_of(backend)
        assert tables.has_checkpoints(backend, None)  # the notebook's own file
        assert not tables.has_checkpoints(backend, tmp_path / "absent.db")
        assert not tables.has_checkpoints(MemoryBackend(), None)
    finally:
        backend.close()


def test_a_postgres_notebooks_threads_in_a_file_are_scrubbed_there(tmp_path: Path) -> None:
    backend = open_backend(pg.url_with_schema(tmp_path))
    try:
        tables = tables_of(backend)
        assert isinstance(tables, PostgresTables)
        assert tables.has_checkpoints(backend, None)  # in its schema
        file = tmp_path / "threads.db"
        assert not tables.has_checkpoints(backend, file)
        saver, conn = open_checkpointer(backend, file)
        try:
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"messages": "my secret"}
            config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
            saver.put(config, checkpoint, {"note": "my secret"}, {})
            assert tables.has_checkpoints(backend, file)

            tables.scrub_checkpoints(
                saver,
                lambda v: v.replace("secret", "[x]") if isinstance(v, str) and "secret" in v else v,
            )
            found = saver.get_tuple(config)
            assert found is not None
            assert found.checkpoint["channel_values"]["messages"] == "my [x]"
            assert found.metadata["note"] == "my [x]"
            tables.vacuum(backend, None, saver)  # the file only: no database saver here
        finally:
            if conn is not None:
                conn.close()
    finally:
        backend.close()
