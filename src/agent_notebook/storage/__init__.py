"""Storage backends behind one contract (:class:`StorageBackend`).

``open_backend`` turns a location into a backend:

=====================================  =============================================
``memory`` or ``memory://``            the in-memory reference backend
``sqlite:///abs/path.db``, ``*.db``,   the SQLite backend (``:memory:`` too)
``:memory:``
``yaml:///abs/dir`` or a directory     the YAML directory backend
holding ``index.yaml``
``postgresql://user@host/db``           the PostgreSQL backend (``postgres://`` too;
                                       psycopg is imported only then)
=====================================  =============================================
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

# The PostgreSQL timeout's variable is read in config (every environment variable is).
from ..config import PG_TIMEOUT_ENV as PG_TIMEOUT_ENV
from ..config import postgres_timeout_s as postgres_timeout_s
from ..errors import InvalidInput
from .base import Capabilities, MomentBrief, MomentFilter, StorageBackend
from .memory import MemoryBackend
from .sqlite import SqliteBackend
from .sqlite.connection import Synchronous
from .yamldir import YamlDirBackend

if TYPE_CHECKING:
    from ..core.crypto import Cipher

__all__ = [
    "Capabilities",
    "MemoryBackend",
    "MomentBrief",
    "MomentFilter",
    "SqliteBackend",
    "StorageBackend",
    "YamlDirBackend",
    "is_postgres_url",
    "open_backend",
]


def open_backend(
    location: str | Path,
    *,
    sqlite_synchronous: Synchronous = "FULL",
    cipher: Cipher | None = None,
) -> StorageBackend:
    """``cipher`` (encryption at rest) seals what the SQLite, YAML and PostgreSQL backends
    store."""
    text = str(location)
    if is_postgres_url(text):
        from .postgres import PostgresBackend  # here: the driver loads only when used

        return PostgresBackend(text, cipher=cipher, timeout_s=postgres_timeout_s())
    if text in ("memory", "memory://"):
        return MemoryBackend()
    if text == ":memory:":
        return SqliteBackend(":memory:")
    if text.startswith("sqlite://"):
        return SqliteBackend(
            text.removeprefix("sqlite://") or ":memory:",
            synchronous=sqlite_synchronous,
            cipher=cipher,
        )
    if text.startswith("yaml://"):
        return YamlDirBackend(text.removeprefix("yaml://"), cipher=cipher)
    path = Path(text).expanduser()
    if path.suffix in (".db", ".sqlite", ".sqlite3"):
        return SqliteBackend(path, synchronous=sqlite_synchronous, cipher=cipher)
    if path.is_dir() and ((path / "index.yaml").exists() or (path / "sessions").is_dir()):
        return YamlDirBackend(path, cipher=cipher)
    raise InvalidInput(
        f"cannot tell which backend {text!r} is: use sqlite:///path/notebook.db, "
        "yaml:///path/dir, postgresql://user@host/database, memory://, or a path ending in .db"
    )


def is_postgres_url(location: str | Path) -> bool:
    """Whether ``location`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return str(location).startswith(("postgresql://", "postgres://"))
