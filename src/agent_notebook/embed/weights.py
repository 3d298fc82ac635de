"""The check every offline model's weights pass before they run: their sha256.

Vectors of any other file would be silently incomparable with the stored ones (a damaged
download, another version of the package), so a file that is not the expected one is
refused with what was found, what was expected and how to reinstall it. A file is hashed
once per process (keyed by path, size and modification time).
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from ..errors import StorageError

__all__ = ["verify_weights"]

_verified: set[tuple[str, int, int, str]] = set()
_verified_lock = threading.Lock()


def verify_weights(path: Path, sha256: str, *, what: str, dist: str) -> None:
    """Raise StorageError unless the file at ``path`` has this ``sha256``. ``what`` names
    the model in the message; ``dist`` is the pinned distribution that ships it."""
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, sha256)
        with _verified_lock:
            if key in _verified:
                return
        digest = hashlib.sha256()
        with path.open("rb") as file:
            while chunk := file.read(1 << 20):
                digest.update(chunk)
    except OSError as err:
        raise StorageError(f"cannot read the embedding model {path}: {err}") from err
    if digest.hexdigest() != sha256:
        raise StorageError(
            f"the embedding model {path} has sha256 {digest.hexdigest()}, expected "
            f"{sha256} ({what} of {dist}); reinstall it: pip install --force-reinstall '{dist}'"
        )
    with _verified_lock:
        _verified.add(key)
