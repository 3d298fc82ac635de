"""The LangGraph store's TTL on real SQLite and PostgreSQL notebooks: ``store:`` settings,
the sweep, the sweeper of long-lived processes, and the notebook's own items, which never
expire."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.store.base import PutOp

from agent_notebook import InvalidInput, Notebook
from agent_notebook.config import NotebookConfig, StoreSettings, load_config
from agent_notebook.langgraph.stores import store_items, write_lock
from agent_notebook.model import THREADS_NAMESPACE
from agent_notebook.server.app import open_tenant
from agent_notebook.server.settings import ServerSettings
from agent_notebook.storage import SqliteBackend, StorageBackend
from agent_notebook.storage.postgres import PostgresBackend
from tests.support import pg

# The async test is plain ``async def``: anyio's plugin runs it.
pytestmark = pytest.mark.anyio

#: 60 ms: every item put without a ttl is expired by the next second; reads of the
#: notebook's own items refresh no TTL (no write), an app's do.
SHORT = StoreSettings(default_ttl_minutes=0.001, refresh_on_read=True)
SWEEPER = "ttl-sweeper"  # the name of LangGraph's sweeper thread


def _backend(kind: str, root: Path) -> StorageBackend:
    if kind == "sqlite":
        return SqliteBackend(root / "notebook.db")
    return PostgresBackend(pg.database_url(), schema_name=pg.schema_for(root))


@pytest.fixture(params=["sqlite", "postgres"])
def nb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Notebook]:
    notebook = Notebook(
        _backend(request.param, tmp_path),
        embedder=None,
        config=NotebookConfig(store=SHORT),
        store_index=None,
    )
    yield notebook
    notebook.close()


def test_expired_items_are_gone_after_a_sweep_and_the_notebooks_own_stay(nb: Notebook) -> None:
    store = nb.store
    store.put(("app", "memories"), "short", {"text": "expires by default"})
    store.put(("app", "memories"), "kept", {"text": "for ever"}, ttl=None)
    store.put(("app", "memories"), "long", {"text": "a day"}, ttl=24 * 60)
    session = nb.thread_session("t-1")  # the thread map, ("threads",): the notebook's own
    with write_lock(store):  # as the notebook writes its own items: a ttl there is dropped
        store.put(("session", "t-1"), "note", {"text": "own"}, ttl=0.001)
    time.sleep(1.1)  # SQLite's CURRENT_TIMESTAMP counts whole seconds
    assert nb.sweep_store() == 1
    assert store.get(("app", "memories"), "short") is None
    assert {i.key for i in store.search(("app", "memories"))} == {"kept", "long"}
    assert store.get(THREADS_NAMESPACE, "t-1").value == {"session_id": session}  # type: ignore[union-attr]
    assert store.get(("session", "t-1"), "note") is not None
    assert nb.thread_session("t-1") == session
    assert nb.sweep_store() == 0


def test_the_sweeper_runs_until_close(tmp_path: Path) -> None:
    nb = Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=None, store_index=None)
    try:
        assert nb.start_store_sweeper() is True
        assert nb.start_store_sweeper() is False  # one is enough
        assert SWEEPER in {t.name for t in threading.enumerate()}
        assert nb.store.ttl_config == {  # type: ignore[attr-defined]
            "default_ttl": None,
            "refresh_on_read": False,
            "sweep_interval_minutes": 60,
        }
    finally:
        nb.close()
    assert SWEEPER not in {t.name for t in threading.enumerate()}


def test_serve_starts_the_sweeper(tmp_path: Path) -> None:
    tenant = open_tenant(tmp_path / "home", ServerSettings(home=tmp_path / "home"))
    try:
        assert SWEEPER in {t.name for t in threading.enumerate()}
    finally:
        tenant.notebook.close()
    assert SWEEPER not in {t.name for t in threading.enumerate()}


def test_store_settings_are_checked(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("store:\n  default_ttl_minutes: 0\n")
    with pytest.raises(InvalidInput, match=r"store\.default_ttl_minutes"):
        load_config(tmp_path)
    (tmp_path / "config.yaml").write_text("store:\n  default_ttl_minutes: 90\n")
    assert load_config(tmp_path).store.default_ttl_minutes == 90


@pytest.mark.parametrize(
    "namespace", [("threads",), ("session", "t-1"), ("session", "t-1", "cuts")]
)
async def test_an_apps_write_into_the_notebooks_namespaces_is_refused(
    tmp_path: Path, namespace: tuple[str, ...]
) -> None:
    nb = Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=None, store_index=None)
    try:
        session = nb.thread_session("t-1")
        await nb.session_notebook("t-1").update_section("Task Specification", "Plan the Lyon trip")
        before = sorted((i.namespace, i.key, repr(i.value)) for i in store_items(nb.store))
        for write in (
            lambda: nb.store.put(namespace, "t-1", {"session_id": "mine"}),
            lambda: nb.store.delete(namespace, "t-1"),
            lambda: nb.store.batch([PutOp(namespace, "notebook", None)]),
        ):
            with pytest.raises(InvalidInput, match="reserved for the notebook's own items"):
                write()
        with pytest.raises(InvalidInput, match=r"such as \('app', \.\.\.\)"):
            await nb.store.aput(namespace, "x", {"a": 1})
        after = sorted((i.namespace, i.key, repr(i.value)) for i in store_items(nb.store))
        assert after == before and nb.thread_session("t-1") == session
        # reads are an app's to make, and every other namespace its to write
        assert nb.store.get(THREADS_NAMESPACE, "t-1") is not None
        nb.store.put(("app", "threads"), "t-1", {"mine": True})
        nb.store.put(("sessions",), "t-1", {"mine": True})
    finally:
        nb.close()
