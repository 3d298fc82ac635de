"""A PostgreSQL database for the test session, on the server ``AGENT_NOTEBOOK_TEST_PG``
names (default: the local one, trust authentication).

The database is made on first use with a name unique to this process (and pytest-xdist
worker) and dropped when the session ends; each test keeps its data in a schema of its
own. Without a reachable server (or without psycopg) the tests that need it are skipped,
saying why, except under ``CI=true``, where they fail.

:func:`sharing_the_server` keeps a test that restarts the server (``PG_EXCLUSIVE = True`` in
its module) from running beside any other test that uses it, in any pytest-xdist worker:
every other PostgreSQL test holds a shared ``flock`` on one file of the system's temporary
directory for its length (its module's, when the module imports this one: module-scoped
servers and pools live that long), the restarting one an exclusive lock. A turnstile lock
taken first keeps a stream of shared holders from starving the exclusive one.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

ENV = "AGENT_NOTEBOOK_TEST_PG"
DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"
#: The command that restarts the server of :data:`ENV` (the default: the local cluster).
RESTART_ENV = "AGENT_NOTEBOOK_TEST_PG_RESTART"
RESTART = "pg_ctlcluster --skip-systemctl-redirect {version} main restart -m immediate"
LOCK_FILE = Path(tempfile.gettempdir()) / "agent-notebook-tests-postgres.lock"

_created: str | None = None  # the database this session made
_unavailable: str | None = None  # why there is none


def admin_url() -> str:
    return os.environ.get(ENV) or DEFAULT


def _with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/" + name))


def _unreachable(reason: str) -> None:
    global _unavailable
    _unavailable = reason
    message = f"PostgreSQL is not available ({reason}); set {ENV} to a server"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def database_url() -> str:
    """The URL of this session's database (made on first call)."""
    global _created
    if _unavailable is not None:
        _unreachable(_unavailable)
    if _created is not None:
        return _with_database(admin_url(), _created)
    try:
        import psycopg
    except ImportError:
        _unreachable("psycopg is not installed: pip install 'agent-notebook[postgres]'")
        raise
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"an_test_{worker}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    try:
        with psycopg.connect(admin_url(), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as err:
        from agent_notebook.storage.postgres.connection import no_connection_left

        full = no_connection_left(str(err).strip(), admin_url(), 0)
        if full is not None:  # a server that is there but full: a failure, not a skip
            pytest.fail(str(full))
        _unreachable(f"{admin_url()}: {str(err).strip()}")
    _created = name
    return _with_database(admin_url(), name)


def schema_for(root: Path) -> str:
    """The schema of the test whose temporary directory is ``root`` (the same on reopen)."""
    return "t_" + hashlib.sha1(str(root).encode()).hexdigest()[:24]


def url_with_schema(root: Path) -> str:
    """The database's URL with libpq's ``options`` setting the test's schema (made here)."""
    import psycopg

    url = database_url()
    name = schema_for(root)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {name}")
    return f"{url}?options=-csearch_path%3D{name}"


def drop_database() -> None:
    global _created
    if _created is None:
        return
    import psycopg

    with psycopg.connect(admin_url(), autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{_created}" WITH (FORCE)')
    _created = None


@contextmanager
def sharing_the_server(exclusive: bool = False) -> Iterator[None]:
    """Hold the server shared (a test that uses it) or exclusively (one that restarts it)."""
    from tests.support.waiting import wait_until

    def take(fd: int, kind: int) -> bool:
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    turnstile = os.open(f"{LOCK_FILE}.turnstile", os.O_RDWR | os.O_CREAT, 0o666)
    main = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        wait_until(lambda: take(turnstile, fcntl.LOCK_EX), "the PostgreSQL tests' turnstile")
        kind = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        wait_until(lambda: take(main, kind), "the PostgreSQL tests' lock")
        if not exclusive:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield
    finally:
        os.close(main)  # closing lets go of the locks
        os.close(turnstile)


def restart_server() -> None:
    """Restart the PostgreSQL server (abruptly: ``-m immediate``), as :data:`RESTART_ENV`
    or the local cluster's ``pg_ctlcluster`` does it; only with :func:`sharing_the_server`
    held exclusively."""
    command = os.environ.get(RESTART_ENV)
    if command is None:
        versions = sorted(os.listdir("/etc/postgresql"))
        command = RESTART.format(version=versions[-1])
    done = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command}: {done.stderr}"
    # the server takes connections again (the restart's crash recovery is over)
    import psycopg

    def up() -> bool:
        try:
            psycopg.connect(admin_url(), connect_timeout=2).close()
        except psycopg.Error:
            time.sleep(0.1)
            return False
        return True

    from tests.support.waiting import wait_until

    wait_until(up, "PostgreSQL's restart")
