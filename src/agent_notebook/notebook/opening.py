"""Opening a notebook (see :meth:`Notebook.open`): its home made private, the use lock a key
rotation waits for, its config, its cipher (with encryption on) and its backend."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import config as cfg
from ..core import files
from ..core.crypto import load_cipher
from ..errors import InvalidInput, NotFound
from ..privacy import permissions
from ..storage import StorageBackend, is_server_url, open_backend


def check_backend_choice(backend: str) -> None:
    """``init --backend``: :class:`InvalidInput` unless ``backend`` names a backend a new
    notebook can be made on."""
    from ..storage.registry import init_choices

    names, servers, said = init_choices()
    if backend not in names and not any(kind.names(backend) for kind in servers):
        raise InvalidInput(f"--backend must be {said}, not {backend!r}")


def open_storage(
    home: Path | str | None, backend: str | None, create: bool
) -> tuple[Path, cfg.NotebookConfig, StorageBackend, files.UseLock]:
    """The home, its config, its opened backend and the use lock held on it (the caller
    releases it); see :meth:`Notebook.open`."""
    if home is not None and is_server_url(home) and backend is None:
        home, backend = None, str(home)
    root = cfg.resolve_home(home)
    if not root.exists() and not create:
        raise NotFound(f"no notebook at {root}: run 'agent-notebook init --home {root}'")
    files.ensure_private_dir(root)
    permissions.report_on_open(root)  # logs what is open to others, and the fix
    in_use = cfg.use_lock(root, exclusive=False)  # a key rotation waits for it, and it for one
    try:
        conf = cfg.load_config(root)
        location = cfg.backend_location(root, conf, backend)
        cipher = load_cipher(conf.privacy.encryption, root)  # None unless encryption is on
        storage = open_backend(location, sqlite_synchronous=conf.sqlite_synchronous, cipher=cipher)
        storage.local_dir = root  # the files beside the records (a database's notebook too)
    except BaseException:
        in_use.release()
        raise
    return root, conf, storage, in_use


@contextmanager
def closed_on_error(storage: StorageBackend, in_use: files.UseLock) -> Iterator[None]:
    """Close ``storage`` and release ``in_use`` (from :func:`open_storage`) when the block,
    which makes the notebook on them, raises: nothing of a failed open stays open."""
    try:
        yield
    except BaseException:
        storage.close()
        in_use.release()
        raise
