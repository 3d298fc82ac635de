"""Key rotation: seal everything a notebook stores under a new key.

Everything is rewritten in small atomic steps (a batch of rows in one transaction, one file
at a time), and every sealed blob names the key that sealed it, so a rotation killed half
way leaves each blob readable with the old key or the new one: run it again (with both
keys still at hand) and it finishes. It refuses to start while another process has the
notebook open (see :func:`agent_notebook.config.use_lock`), and opens wait while it runs.
Plain data left from before encryption was turned on is sealed too, so rotating to the same
key encrypts a notebook that was started without encryption.

A PostgreSQL notebook is sealed again in its database: the backend's tables, then
LangGraph's checkpoint and store tables in its schema (unless ``chat.checkpoints`` keeps the
threads in a file), and the rewritten tables are ``VACUUM FULL``-ed so that no dead row
sealed under the old key stays in the data files.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from .. import config as cfg
from ..compaction import ARCHIVE_DIR
from ..core.crypto import Cipher, load_key, sealed_key_id
from ..core.files import write_atomic
from ..errors import InvalidInput, StorageError
from ..langgraph.checkpoint.base import reseal_typed
from ..langgraph.store.sealed import resealed_value
from ..langgraph.store.sqlite import VECTOR_TABLE as SQLITE_STORE_VECTORS
from ..langgraph.stores import CHECKPOINT_FILE, in_database, store_path
from ..storage import StorageBackend, open_backend

__all__ = ["RotationReport", "rotate_key"]


@dataclass(frozen=True)
class RotationReport:
    old_key_id: str
    new_key_id: str
    records: int  # rows or record files sealed again
    archive_files: int
    checkpoints: int


def rotate_key(home: Path, new_key: bytes) -> RotationReport:
    """Seal the notebook in ``home`` under ``new_key``; its configured key must open it."""
    conf = cfg.load_config(home)
    settings = conf.privacy.encryption
    if not settings.enabled:
        raise InvalidInput(
            f"{home}: encryption is off; set privacy.encryption.enabled: true in "
            f"{home / cfg.CONFIG_FILE} and give the current key first"
        )
    old_key, source = load_key(settings, home)
    cipher = Cipher(new_key, also=[old_key], source=f"{source} (or the new key)")
    # A process with the notebook open would go on writing under the old key, which the
    # rotation is about to retire: the home is had alone (servers on other machines of a
    # PostgreSQL notebook are not seen here: stop them first).
    alone = cfg.use_lock(home, exclusive=True)
    try:
        backend = open_backend(cfg.backend_location(home, conf), cipher=cipher)
        try:
            with backend.maintenance_lock("key-rotation"):  # one rotation, whatever the servers
                return _rotate(home, conf, backend, cipher, old_key)
        finally:
            backend.close()
    finally:
        alone.release()


def _rotate(
    home: Path, conf: cfg.NotebookConfig, backend: StorageBackend, cipher: Cipher, old_key: bytes
) -> RotationReport:
    records = backend.reseal()  # InvalidInput unless the backend encrypts at rest
    checkpoints = 0
    if in_database(backend):
        checkpoints_there = conf.chat.checkpoints is None
        stored, checkpoints = _reseal_postgres_langgraph(backend, cipher, checkpoints_there)
        records += stored
    if not in_database(backend) or conf.chat.checkpoints is not None:
        checkpoints = _reseal_checkpoints(_checkpoint_file(home, conf, backend), cipher)
    if (store := store_path(backend)) is not None:
        records += _reseal_store(store, cipher)
    return RotationReport(
        old_key_id=Cipher(old_key).key_id.hex(),
        new_key_id=cipher.key_id.hex(),
        records=records,
        archive_files=_reseal_archive(home / ARCHIVE_DIR, cipher),
        checkpoints=checkpoints,
    )


def _reseal_archive(root: Path, cipher: Cipher) -> int:
    done = 0
    for path in sorted(root.rglob("*.jsonl.gz")) if root.is_dir() else []:
        data = path.read_bytes()
        if sealed_key_id(data) == cipher.key_id:
            continue
        name = path.relative_to(root).as_posix()  # what the archive binds a file to
        if sealed_key_id(data) is not None:
            data = cipher.decrypt(data, name.encode(), str(path))
        write_atomic(path, cipher.encrypt(data, name.encode()))
        done += 1
    return done


def _checkpoint_file(home: Path, conf: cfg.NotebookConfig, backend: StorageBackend) -> Path:
    if conf.chat.checkpoints is not None:
        return Path(conf.chat.checkpoints).expanduser()
    if backend.capabilities.langgraph_tables == "own_file":  # in the notebook's own file
        return Path(backend.location)
    return home / CHECKPOINT_FILE


def _reseal_postgres_langgraph(
    backend: StorageBackend, cipher: Cipher, checkpoints: bool
) -> tuple[int, int]:
    """Seal again LangGraph's store (and, with ``checkpoints``, its checkpoint tables) in the
    notebook's schema, then rewrite every table that held old blobs (``VACUUM FULL``, after
    the transactions that may still see them: ``backend.purge``). Returns the store values
    and the checkpoint rows sealed again."""
    from ..langgraph.checkpoint.postgres import reseal_checkpoints
    from ..langgraph.store.postgres import (
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


def _reseal_checkpoints(path: Path, cipher: Cipher) -> int:
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


def _reseal_store(path: Path, cipher: Cipher) -> int:
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
