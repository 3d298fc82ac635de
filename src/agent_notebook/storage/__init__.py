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

import os
from pathlib import Path
from typing import TYPE_CHECKING

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
) -> StorageBackend:
    """``cipher`` (encryption at rest) seals what the SQLite, YAML and PostgreSQL backends
    store."""
    text = str(location)
    kind = kind_of(text)
    if kind is None:
        raise InvalidInput(unknown_location(text))
    return kind.open(text, OpenOptions(sqlite_synchronous=sqlite_synchronous, cipher=cipher))


def is_postgres_url(location: str | Path) -> bool:
    """Whether ``location`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return str(location).startswith(("postgresql://", "postgres://"))


#: How long a PostgreSQL notebook waits for a pooled connection, a lock or a statement
#: before it answers with a StorageError (a 503 from the server): seconds, default 60.
#: While the database is away, each request waits this long for its 503.
PG_TIMEOUT_ENV = "AGENT_NOTEBOOK_PG_TIMEOUT_S"


def postgres_timeout_s() -> float:
    text = os.environ.get(PG_TIMEOUT_ENV, "60")
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise InvalidInput(
            f"{PG_TIMEOUT_ENV}={text!r}: give a number of seconds above 0, for example 60"
        )
    return seconds
