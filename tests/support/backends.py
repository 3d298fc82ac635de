"""Every storage backend the suite runs on, each on a real engine (``conftest.backend``
parametrizes over :data:`BACKENDS`)."""

from __future__ import annotations

from pathlib import Path

from agent_notebook.core.crypto import Cipher, generate_key
from agent_notebook.storage import MemoryBackend, SqliteBackend, StorageBackend, YamlDirBackend
from tests.support import pg

#: ``*-sealed``: encryption at rest on, under one key for the session. ``postgres*`` run on
#: a real server (see ``pg``), each test in a schema of its own.
BACKENDS = [
    "memory",
    "sqlite-memory",
    "sqlite-file",
    "yaml",
    "sqlite-sealed",
    "yaml-sealed",
    "postgres",
    "postgres-sealed",
]


SEALED_KEY = generate_key()


def make_backend(kind: str, root: Path) -> StorageBackend:
    if kind.startswith("postgres"):
        from agent_notebook.storage.postgres import PostgresBackend

        cipher = Cipher(SEALED_KEY) if kind == "postgres-sealed" else None
        return PostgresBackend(pg.database_url(), schema_name=pg.schema_for(root), cipher=cipher)
    if kind == "memory":
        return MemoryBackend()
    if kind == "sqlite-memory":
        return SqliteBackend(":memory:")
    if kind == "sqlite-file":
        return SqliteBackend(root / "notebook.db")
    if kind == "yaml":
        return YamlDirBackend(root / "yaml")
    if kind == "sqlite-sealed":
        return SqliteBackend(root / "notebook.db", cipher=Cipher(SEALED_KEY))
    if kind == "yaml-sealed":
        return YamlDirBackend(root / "yaml", cipher=Cipher(SEALED_KEY))
    raise ValueError(kind)
