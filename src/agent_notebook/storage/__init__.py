"""Storage backends behind one contract (:class:`StorageBackend`).

``open_backend`` turns a location into a backend (the kinds are in :mod:`.registry`):

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
from .registry import BackendKind, OpenOptions, is_server_url, kind_of, unknown_location
from .sqlite import SqliteBackend
from .sqlite.connection import Synchronous
from .yamldir import YamlDirBackend

if TYPE_CHECKING:
    from ..core.crypto import Cipher

__all__ = [
    "BackendKind",
    "Capabilities",
    "MemoryBackend",
    "MomentBrief",
    "MomentFilter",
    "SqliteBackend",
    "StorageBackend",
    "YamlDirBackend",
    "is_postgres_url",
    "is_server_url",
    "kind_of",
    "open_backend",
]


def open_backend(
    location: str | Path,
    *,
    sqlite_synchronous: Synchronous = "FULL",
    cipher: Cipher | None = None,
    read_only: bool = False,
) -> StorageBackend:
    """``cipher`` (encryption at rest) seals what the SQLite, YAML and PostgreSQL backends
    store; ``read_only`` (an import's source) keeps a YAML folder free of lock files and
    writes."""
    text = str(location)
    kind = kind_of(text)
    if kind is None:
        raise InvalidInput(unknown_location(text))
    options = OpenOptions(sqlite_synchronous=sqlite_synchronous, cipher=cipher, read_only=read_only)
    return kind.open(text, options)


def is_postgres_url(location: str | Path) -> bool:
    """Whether ``location`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return str(location).startswith(("postgresql://", "postgres://"))
