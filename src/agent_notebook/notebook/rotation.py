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

from dataclasses import dataclass
from pathlib import Path

from .. import config as cfg
from ..compaction import ARCHIVE_DIR
from ..core.crypto import Cipher, load_key, sealed_key_id
from ..core.files import write_atomic
from ..errors import InvalidInput
from ..langgraph.tables import tables_of
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
    stored, checkpoints = tables_of(backend).reseal(home, conf, backend, cipher)
    records += stored
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
