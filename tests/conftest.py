"""Fixtures shared by the test suite: every backend on a real engine."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from agent_notebook import Notebook
from agent_notebook.privacy.crypto import Cipher, generate_key
from agent_notebook.storage import MemoryBackend, SqliteBackend, StorageBackend, YamlDirBackend

# No example fails for taking long (Hypothesis' default deadline is 200 ms): a loaded machine
# is slow, not wrong, and no test asserts on elapsed time.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

#: ``*-sealed``: encryption at rest on, under one key for the session.
BACKENDS = ["memory", "sqlite-memory", "sqlite-file", "yaml", "sqlite-sealed", "yaml-sealed"]
SEALED_KEY = generate_key()


def make_backend(kind: str, root: Path) -> StorageBackend:
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``--dist loadgroup``), the tests sharing a module-scoped fixture of
    their own module run on one worker, so its expensive setup is made once, not per worker."""
    for item in items:
        module = item.nodeid.split("::")[0]
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info is not None else []
        if any(d[-1].scope == "module" and d[-1].baseid == module for d in defs):
            item.add_marker(pytest.mark.xdist_group(module))


@pytest.fixture(params=BACKENDS)
def backend_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def backend(backend_kind: str, tmp_path: Path) -> Iterator[StorageBackend]:
    instance = make_backend(backend_kind, tmp_path)
    yield instance
    instance.close()


@pytest.fixture
def reopen(backend_kind: str, tmp_path: Path) -> Callable[[], StorageBackend]:
    return lambda: make_backend(backend_kind, tmp_path)


@pytest.fixture
def notebook(backend: StorageBackend) -> Notebook:
    return Notebook(backend)
