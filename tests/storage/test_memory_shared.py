"""The conformance suite on the in-memory backend that shares its records
(``MemoryBackend(shared=True)``: a dry run's scratch copy): no copy in or out, the words
indexed on the first search, and every answer the same."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agent_notebook.storage import MemoryBackend, StorageBackend
from agent_notebook.storage.conformance import *  # noqa: F403


@pytest.fixture
def backend() -> StorageBackend:
    return MemoryBackend(shared=True)


@pytest.fixture
def reopen() -> Callable[[], StorageBackend]:
    return lambda: MemoryBackend(shared=True)  # not persistent: a new, empty one
