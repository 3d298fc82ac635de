"""The PostgreSQL backend (``postgresql://…``): many processes over one database."""

from .backend import PostgresBackend

__all__ = ["PostgresBackend"]
