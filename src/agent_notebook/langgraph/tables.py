"""LangGraph's tables (its store's and its checkpointer's), one adapter per kind, as the
notebook keeps them up: sealing them again under a new key (a key rotation), scrubbing a
redacted text out of the checkpoints, and vacuuming what a redaction left in the files.

:func:`tables_of` picks the adapter by the backend's capability
(:attr:`~agent_notebook.storage.Capabilities.langgraph_tables`), never by its class or URL:
:class:`SqliteTables` for tables in SQLite files (the notebook's own file, files in its
directory; none for a notebook in memory), :class:`PostgresTables` for tables in the
notebook's database schema. Either kind may also have its threads in the SQLite file
``chat.checkpoints`` names. Copying the chat state between notebooks (export, import,
migration) goes through LangGraph's own API, whatever the kind (:mod:`.stores`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from .. import config as cfg
from ..core.crypto import Cipher
from ..errors import StorageError
from ..storage import StorageBackend
from ..storage.base import LangGraphTables
from ..storage.sqlite.maintenance import database_file, vacuum
from .checkpoint.base import reseal_typed, scrub_channel, scrub_checkpoint, scrub_metadata
from .store.sealed import resealed_value
from .store.sqlite import VECTOR_TABLE as SQLITE_STORE_VECTORS
from .stores import CHECKPOINT_FILE, checkpoint_path, store_path

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.store.base import BaseStore

__all__ = [
    "PostgresTables",
    "SqliteTables",
    "Tables",
    "checkpoint_file",
    "reseal_postgres_tables",
    "reseal_sqlite_checkpoints",
    "reseal_sqlite_store",
    "scrub_sqlite_checkpoints",
    "sqlite_connections",
    "tables_of",
]


class Tables(Protocol):
    """What the notebook does to LangGraph's tables of one kind."""

    def has_checkpoints(self, backend: StorageBackend, configured: Path | None) -> bool:
        """Whether there are checkpoints to scrub (``configured``: ``chat.checkpoints``)."""
        ...

    def scrub_checkpoints(
        self, saver: BaseCheckpointSaver[Any], scrub: Callable[[Any], Any]
    ) -> None:
        """Rewrite every checkpoint value and pending write ``scrub`` changes."""
        ...

    def vacuum(
        self,
        backend: StorageBackend,
        store: BaseStore | None,
        saver: BaseCheckpointSaver[Any] | None,
    ) -> None:
        """Rewrite the files (or tables) a redaction left old versions of rows in."""
        ...

    def reseal(
        self, home: Path, conf: cfg.NotebookConfig, backend: StorageBackend, cipher: Cipher
    ) -> tuple[int, int]:
        """Seal the store and the checkpoints again under ``cipher``'s key (a key rotation):
        the store values and the checkpoint rows sealed again."""
        ...


class SqliteTables:
    """LangGraph's tables in SQLite files (see the module's docstring)."""

    def has_checkpoints(self, backend: StorageBackend, configured: Path | None) -> bool:
        path = configured if configured is not None else checkpoint_path(backend)
        return path is not None and Path(path).expanduser().exists()

    def scrub_checkpoints(
        self, saver: BaseCheckpointSaver[Any], scrub: Callable[[Any], Any]
    ) -> None:
        scrub_sqlite_checkpoints(cast("SqliteSaver", saver), scrub)

    def vacuum(
        self,
        backend: StorageBackend,
        store: BaseStore | None,
        saver: BaseCheckpointSaver[Any] | None,
    ) -> None:
        own_file = backend.capabilities.langgraph_tables == "own_file"
        main = Path(backend.location) if own_file else None  # purged with the records
        for conn in sqlite_connections(store, saver):
            if database_file(conn) != main:
                vacuum(conn)

    def reseal(
        self, home: Path, conf: cfg.NotebookConfig, backend: StorageBackend, cipher: Cipher
    ) -> tuple[int, int]:
        checkpoints = reseal_sqlite_checkpoints(checkpoint_file(home, conf, backend), cipher)
        values = 0
        if (store := store_path(backend)) is not None:
            values = reseal_sqlite_store(store, cipher)
        return values, checkpoints


class PostgresTables(SqliteTables):
    """LangGraph's tables in the notebook's PostgreSQL schema; its threads may be in a SQLite
    file instead (``chat.checkpoints``), which the SQLite adapter's code keeps up."""

    def has_checkpoints(self, backend: StorageBackend, configured: Path | None) -> bool:
        return configured is None or super().has_checkpoints(backend, configured)

    def scrub_checkpoints(
        self, saver: BaseCheckpointSaver[Any], scrub: Callable[[Any], Any]
    ) -> None:
        from .checkpoint.postgres import NotebookPostgresSaver

        if isinstance(saver, NotebookPostgresSaver):  # its own statements
            saver.scrub(scrub)
        else:
            super().scrub_checkpoints(saver, scrub)

    def vacuum(
        self,
        backend: StorageBackend,
        store: BaseStore | None,
        saver: BaseCheckpointSaver[Any] | None,
    ) -> None:
        super().vacuum(backend, store, saver)  # a checkpoint file
        from .checkpoint.postgres import NotebookPostgresSaver

        if isinstance(saver, NotebookPostgresSaver):
            from .store.postgres import vacuum_full

            vacuum_full(saver.pool)

    def reseal(
        self, home: Path, conf: cfg.NotebookConfig, backend: StorageBackend, cipher: Cipher
    ) -> tuple[int, int]:
        checkpoints_there = conf.chat.checkpoints is None
        values, checkpoints = reseal_postgres_tables(backend, cipher, checkpoints_there)
        if not checkpoints_there:
            checkpoints = reseal_sqlite_checkpoints(checkpoint_file(home, conf, backend), cipher)
        return values, checkpoints


#: The adapter of each place LangGraph's tables may be in (the backend's capability).
_BY_PLACE: dict[LangGraphTables, Tables] = {
    "own_file": SqliteTables(),
    "directory": SqliteTables(),
    "database": PostgresTables(),
}


def tables_of(backend: StorageBackend) -> Tables:
    """The adapter of ``backend``'s LangGraph tables, by its capability."""
    return _BY_PLACE[backend.capabilities.langgraph_tables]


# -- key rotation ------------------------------------------------------------------------------


def checkpoint_file(home: Path, conf: cfg.NotebookConfig, backend: StorageBackend) -> Path:
    if conf.chat.checkpoints is not None:
        return Path(conf.chat.checkpoints).expanduser()
    if backend.capabilities.langgraph_tables == "own_file":  # in the notebook's own file
        return Path(backend.location)
    return home / CHECKPOINT_FILE


def reseal_postgres_tables(
    backend: StorageBackend, cipher: Cipher, checkpoints: bool
) -> tuple[int, int]:
    """Seal again LangGraph's store (and, with ``checkpoints``, its checkpoint tables) in the
    notebook's schema, then rewrite every table that held old blobs (``VACUUM FULL``, after
    the transactions that may still see them: ``backend.purge``). Returns the store values
    and the checkpoint rows sealed again."""
    from .checkpoint.postgres import reseal_checkpoints
    from .store.postgres import (
        TEXT_TABLES,
        open_postgres_saver,
        open_postgres_store,
        reseal_store,
        vacuum_full,
    )

    # Opening them runs LangGraph's migrations: the tables exist, even if nothing is in them.
    store = open_postgres_store(backend, None)
    try:
        values = reseal_store(store.pool, cipher)
        sealed = 0
        if checkpoints:
            saver = open_postgres_saver(backend, None)
            try:
                sealed = reseal_checkpoints(saver.pool, cipher)
            finally:
                saver.pool.close()
        backend.purge()  # the backend's own tables
        vacuum_full(store.pool, TEXT_TABLES)
    finally:
        store.pool.close()
    return values, sealed


def reseal_sqlite_checkpoints(path: Path, cipher: Cipher) -> int:
    """Seal again the LangGraph checkpoints (and pending writes) sealed by
    ``EncryptedSerializer``: their ``type`` column ends in ``+anb-aesgcm``."""
    if not path.is_file():
        return 0
    done = 0
    try:
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            for table, column in (("checkpoints", "checkpoint"), ("writes", "value")):
                if table not in tables:
                    continue
                rows = conn.execute(
                    f"SELECT rowid, type, {column} FROM {table} WHERE type IS NOT NULL "
                    f"AND {column} IS NOT NULL"
                ).fetchall()
                conn.execute("BEGIN IMMEDIATE")
                for rowid, kind, blob in rows:
                    new = reseal_typed(cipher, kind, blob, f"{path}: a checkpoint")
                    if new is not None:
                        conn.execute(
                            f"UPDATE {table} SET type = ?, {column} = ? WHERE rowid = ?",
                            (*new, rowid),
                        )
                        done += 1
                conn.execute("COMMIT")
        finally:
            conn.close()
    except sqlite3.Error as err:
        raise StorageError(f"{path}: cannot seal the checkpoints again: {err}") from err
    return done


def reseal_sqlite_store(path: Path, cipher: Cipher) -> int:
    """Seal again the LangGraph store's values (the session notebooks); plain ones too."""
    if not path.is_file():
        return 0
    try:
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            if "store" not in tables:
                return 0
            rows = conn.execute("SELECT rowid, prefix, key, value FROM store").fetchall()
            conn.execute("BEGIN IMMEDIATE")
            done = 0
            for rowid, prefix, key, stored in rows:
                text = stored.decode() if isinstance(stored, bytes) else str(stored)
                resealed = resealed_value(cipher, tuple(prefix.split(".")), key, json.loads(text))
                if resealed is None:
                    continue
                new = json.dumps(resealed)
                written = new.encode() if isinstance(stored, bytes) else new  # as the store does
                conn.execute("UPDATE store SET value = ? WHERE rowid = ?", (written, rowid))
                done += 1
            if SQLITE_STORE_VECTORS in tables:  # a sealed store has no semantic index
                conn.execute(f"DELETE FROM {SQLITE_STORE_VECTORS}")
            conn.execute("COMMIT")
        finally:
            conn.close()
    except sqlite3.Error as err:
        raise StorageError(f"{path}: cannot seal the store again: {err}") from err
    return done


# -- redaction ---------------------------------------------------------------------------------


def scrub_sqlite_checkpoints(saver: SqliteSaver, scrub: Callable[[Any], Any]) -> None:
    """Scrub every checkpoint and pending write of ``saver``, loaded and dumped with its
    own ``serde``."""
    serde = saver.serde
    with saver.cursor() as cur:
        rows = cur.execute("SELECT rowid, type, checkpoint, metadata FROM checkpoints").fetchall()
        for rowid, kind, blob, metadata in rows:
            value = serde.loads_typed((kind, blob))
            scrubbed = scrub_checkpoint(scrub, value)
            meta = json.loads(metadata) if metadata is not None else None
            new_meta = scrub_metadata(scrub, meta)
            if scrubbed is value and new_meta is meta:
                continue
            new_kind, new_blob = serde.dumps_typed(scrubbed)
            cur.execute(
                "UPDATE checkpoints SET type = ?, checkpoint = ?, metadata = ? WHERE rowid = ?",
                (
                    new_kind,
                    new_blob,
                    None if new_meta is None else json.dumps(new_meta, ensure_ascii=False),
                    rowid,
                ),
            )
        rows = cur.execute("SELECT rowid, channel, type, value FROM writes").fetchall()
        for rowid, channel, kind, blob in rows:
            value = serde.loads_typed((kind, blob))
            scrubbed = scrub_channel(scrub, channel, value)
            if scrubbed is not value:
                new_kind, new_blob = serde.dumps_typed(scrubbed)
                cur.execute(
                    "UPDATE writes SET type = ?, value = ? WHERE rowid = ?",
                    (new_kind, new_blob, rowid),
                )


def sqlite_connections(
    store: BaseStore | None, saver: BaseCheckpointSaver[Any] | None
) -> list[sqlite3.Connection]:
    """The SQLite connections of ``store`` and ``saver``, one per database file."""
    conns = []
    if store is not None and isinstance(conn := getattr(store, "conn", None), sqlite3.Connection):
        conns.append(conn)
    if saver is not None and isinstance(conn := getattr(saver, "conn", None), sqlite3.Connection):
        conns.append(conn)
    unique: dict[Path | None, sqlite3.Connection] = {}
    for conn in conns:
        unique.setdefault(database_file(conn), conn)
    return list(unique.values())
