"""The SQLite backend (the embedded default)."""

from .backend import SqliteBackend

__all__ = ["SqliteBackend"]
