"""Fixtures shared by the test suite: every backend on a real engine."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from agent_notebook import Notebook
from agent_notebook.config import PG_POOL_SIZE_ENV
from agent_notebook.storage import StorageBackend
from tests.support import pg
from tests.support.backends import BACKENDS, make_backend
from tests.support.prerequisites import missing_lines

#: The most connections each pool of a test's PostgreSQL notebook opens.
TEST_POOL_SIZE = 3

#: The ``server`` and ``api`` fixtures (a real ``agent-notebook serve``) and ``browser``
#: (headless Chromium) for any test module.
pytest_plugins = ["tests.support.server", "tests.support.web_browser"]

# No example fails for taking long (Hypothesis' default deadline is 200 ms): a loaded machine
# is slow, not wrong, and no test asserts on elapsed time.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first, so that on a few cores they overlap the many quick ones rather
    than run alone at the end, and of those the ``longest`` (minutes) first of all: with
    ``--dist worksteal`` a worker that runs out of tests takes half of another's queue from
    its end, so a long test queued last could not be taken and would run alone. First of
    everything, those of a module that has the PostgreSQL server alone (``PG_EXCLUSIVE``:
    it restarts it), which then finds no other PostgreSQL test to wait for."""

    def order(item: pytest.Item) -> tuple[bool, bool, bool]:
        exclusive = getattr(getattr(item, "module", None), "PG_EXCLUSIVE", False)
        longest = item.get_closest_marker("longest") is not None
        return not exclusive, not longest, item.get_closest_marker("slow") is None

    items.sort(key=order)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line at the end per missing prerequisite that skipped tests (Chromium, Redocly
    CLI...), with what to install: the skips are not silent."""
    reasons = []
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            reasons.append(str(longrepr[2]).removeprefix("Skipped: "))
    for line in missing_lines(reasons):
        terminalreporter.write_line(line, yellow=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if pg._created is not None:
        with pg.sharing_the_server():
            pg.drop_database()


def _uses_pg_module(module: object) -> bool:
    return getattr(module, "pg", None) is pg


@pytest.fixture(autouse=True, scope="module")
def _postgres_module_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module that imports ``pg`` shares the PostgreSQL server for its whole length (its
    module-scoped servers and pools too); one with ``PG_EXCLUSIVE = True`` (it restarts
    the server) has it alone: see :func:`pg.sharing_the_server`."""
    if not _uses_pg_module(request.module):
        yield
        return
    with pg.sharing_the_server(exclusive=getattr(request.module, "PG_EXCLUSIVE", False)):
        yield


@pytest.fixture(autouse=True)
def _postgres_test_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test run on a postgres backend (a parameter) in a module that does not import
    ``pg`` shares the server for its length."""
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    on_pg = any(isinstance(v, str) and v.startswith("postgres") for v in params.values())
    if not on_pg or _uses_pg_module(request.module):
        yield
        return
    with pg.sharing_the_server():
        yield


@pytest.fixture(autouse=True, scope="session")
def private_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Each worker gets its own empty HOME (so the default notebook, ~/.agent-notebook, is
    never the developer's nor another worker's) and none of the AGENT_NOTEBOOK_* settings of
    the shell that started the suite."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(tmp_path_factory.mktemp("user-home")))
        # AGENT_NOTEBOOK_TEST_* are the suite's own settings (pg.ENV, pg.RESTART_ENV)
        settings = [n for n in os.environ if n.startswith("AGENT_NOTEBOOK_")]
        for name in [n for n in settings if not n.startswith("AGENT_NOTEBOOK_TEST_")]:
            patch.delenv(name)
        # Several workers (and the servers they start) share one PostgreSQL server: each
        # of a notebook's pools opens at most 3 connections, not 8.
        patch.setenv(PG_POOL_SIZE_ENV, str(TEST_POOL_SIZE))
        yield


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
