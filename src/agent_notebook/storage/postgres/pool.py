"""The pool LangGraph's PostgreSQL store and checkpointer run on, with the storage
boundary's mapping: a database that cannot be reached or does not answer in time
(psycopg's ``OperationalError``, the pool's ``PoolTimeout``) is a
:class:`~agent_notebook.errors.StorageError` (a 503 with ``Retry-After`` from the server),
whichever statement of LangGraph's met it. Imported only with the driver, by the modules
that open those pools (:mod:`agent_notebook.langgraph.store.postgres`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from psycopg import OperationalError
from psycopg_pool import ConnectionPool

from ...errors import StorageError
from .connection import no_connection_left

__all__ = ["MappedPool", "unreachable"]


class MappedPool(ConnectionPool[Any]):
    """A ``ConnectionPool`` whose connections raise :func:`unreachable` errors for a
    database away or too slow, from getting the connection to giving it back."""

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Any]:
        try:
            with super().connection(timeout) as conn:
                yield conn
        except OperationalError as err:  # PoolTimeout is one
            raise unreachable(err) from err


def unreachable(err: Exception) -> StorageError:
    """The error for a database that cannot be reached or did not answer in time."""
    first = (str(err).strip().splitlines() or [type(err).__name__])[0]
    if (full := no_connection_left(str(err), "the notebook's database", 0)) is not None:
        return full
    return StorageError(
        f"the notebook's database cannot be reached or did not answer in time ({first}): "
        "retry shortly (a write cut off so may or may not have been stored)"
    )
