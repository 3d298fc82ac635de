"""A PostgreSQL database for the test session, on the server ``AGENT_NOTEBOOK_TEST_PG``
names (default: the local one, trust authentication).

The database is made on first use with a name unique to this process (and pytest-xdist
worker) and dropped when the session ends; each test keeps its data in a schema of its
own. Without a reachable server (or without psycopg) the tests that need it are skipped,
saying why, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

ENV = "AGENT_NOTEBOOK_TEST_PG"
DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"

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
