"""Owner-only files and directories, and atomic file writes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Callable, Container, Iterator
from pathlib import Path

from ..errors import InvalidInput, StorageError

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) as owner-only directories."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            d.mkdir(mode=PRIVATE_DIR_MODE)
        os.chmod(d, PRIVATE_DIR_MODE)  # mkdir's mode is filtered by the umask
    return path


def ensure_private_file(path: Path) -> Path:
    """Create ``path`` empty and owner-only if it does not exist; make it owner-only if it
    does. An existing file is never opened, only its mode set through its path.

    Why: on POSIX, closing *any* descriptor of a file drops every ``fcntl`` lock the
    process holds on it. Opening and closing a live SQLite database here would silently
    drop the locks of the process's own connections to it; the next process to close its
    connection then believes itself the last one and deletes the write-ahead log, with the
    commits in it (SQLite's "How To Corrupt", section 2.2). So a new file is made under a
    temporary name and linked into place, and the descriptor closed is the temporary's.
    """
    if not os.path.lexists(path):
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".new")
        try:
            os.close(fd)  # mkstemp makes it 0600; closed before it has the real name
            with contextlib.suppress(FileExistsError):  # another process was first: keep theirs
                os.link(tmp, path)
        finally:
            os.unlink(tmp)
    if os.stat(path).st_mode & 0o077:
        os.chmod(path, PRIVATE_FILE_MODE)
    return path


#: Every SQLite database file this process has opened, with its ``-wal`` and ``-shm``, by
#: (device, inode): files never to be opened outside SQLite here (see
#: :func:`ensure_private_file`).
_live_databases: dict[tuple[int, int], str] = {}


def register_live_database(path: Path) -> None:
    """Remember ``path`` (a SQLite database this process has a connection to) and its log
    files, so that :func:`refuse_live_database` keeps a user's path from opening them."""
    for name in (str(path), f"{path}-wal", f"{path}-shm"):
        with contextlib.suppress(OSError):
            info = os.stat(name)
            _live_databases[(info.st_dev, info.st_ino)] = name


def refuse_live_database(path: Path, what: str) -> None:
    """Raise InvalidInput when ``path`` (given by a user, about to be read as ``what``) is a
    database file this process has open: reading it would drop SQLite's locks. Only stat
    is used; a remembered file that is gone no longer counts (its inode may be reused)."""
    try:
        info = os.stat(path)
        known = _live_databases.get((info.st_dev, info.st_ino))
        still = known is not None and os.stat(known).st_ino == info.st_ino
    except OSError:
        return
    if still:
        raise InvalidInput(
            f"{path} is this notebook's own database (or its log), not a {what}; give another file"
        )


def write_atomic(path: Path, data: bytes, *, sync_dir: bool = True) -> None:
    """Replace ``path`` with ``data``: temp file (0600) + fsync + rename (+ fsync of the dir).

    A reader sees the old file or the new one, never a torn one, whatever kills the process.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if sync_dir:
        fsync_dir(path.parent)


def temp_file_target(name: str) -> str | None:
    """The name of the file a temp file of :func:`write_atomic` was for (``.m_1.yaml.x8k2
    .tmp`` -> ``m_1.yaml``), or None when ``name`` is not such a temp file."""
    if not (name.startswith(".") and name.endswith(".tmp")):
        return None
    target, dot, _ = name[1:-4].rpartition(".")
    return target if dot and target else None


def remove_temp_files(directory: Path, targets: Container[str] | None = None) -> int:
    """Delete the temp files an interrupted :func:`write_atomic` left in ``directory``
    (only those for ``targets`` when given); returns how many. Call it only where no
    other writer can be writing them (under the writers' lock)."""
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return 0
    for entry in entries:
        target = temp_file_target(entry.name)
        if target is not None and (targets is None or target in targets):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed += 1
    return removed


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def refuse_links(base: Path, name: str, what: str) -> Path:
    """``base / name`` when neither it nor a folder between ``base`` and it is a symbolic
    link (checked before anything is read); else :class:`InvalidInput`. An import reads
    only the files inside the folder it was given: a link in it could make the notebook
    read (or tell whether it holds) a file anywhere else."""
    path = base
    for part in Path(name).parts:
        path = path / part
        if path.is_symlink():
            raise InvalidInput(
                f"{what} {path} is a symbolic link: only the files inside {base} are read, "
                "never what a link points to; replace the link with the file it names "
                "(cp -L) and run this again; nothing was imported"
            )
    return path


_held = threading.local()  # the lock files this thread holds, for re-entry


@contextlib.contextmanager
def exclusive_lock(path: Path, timeout_s: float = 30.0) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created owner-only): one holder at a time,
    across processes and across threads; re-entrant within the thread that holds it."""
    held: set[str] = _held.__dict__.setdefault("paths", set())
    key = str(path)
    if key in held:
        yield
        return
    fd = os.open(ensure_private_file(path), os.O_RDWR)
    try:
        _flock(
            fd,
            fcntl.LOCK_EX,
            timeout_s,
            lambda: (
                f"{path}: another process has held "
                f"this lock for {timeout_s:.0f}s; retry when it is done"
            ),
        )
        held.add(key)
        try:
            yield
        finally:
            held.discard(key)
    finally:
        os.close(fd)  # closing releases the lock


@contextlib.contextmanager
def shared_lock_if_present(path: Path, timeout_s: float = 30.0) -> Iterator[None]:
    """Hold a shared ``flock`` on ``path`` if it exists (a reader of a folder it must not
    write to: nothing is created), so the writers that take it exclusively wait; none when
    it is missing (no writer ever used the folder) or this thread holds it already."""
    held: set[str] = _held.__dict__.setdefault("paths", set())
    if str(path) in held:
        yield
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        yield
        return
    except OSError as err:
        raise StorageError(
            f"{path}: cannot be opened to read under its lock ({err.strerror})"
        ) from None
    try:
        _flock(
            fd,
            fcntl.LOCK_SH,
            timeout_s,
            lambda: f"{path}: a writer has held this lock for {timeout_s:.0f}s; retry when done",
        )
        yield
    finally:
        os.close(fd)


def _flock(fd: int, operation: int, timeout_s: float, busy: Callable[[], str]) -> None:
    """``flock(fd, operation)``, polling until ``timeout_s`` runs out (then a
    :class:`StorageError` saying ``busy()``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, operation | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise StorageError(busy()) from None
            time.sleep(0.005)


class UseLock:
    """A ``flock`` on ``path`` held until :meth:`release`: shared by every process that
    uses a notebook, exclusive for one that needs it to itself (a key rotation). ``flock``
    locks belong to the open file, so unlike SQLite's ``fcntl`` locks they survive other
    descriptors of the file being closed."""

    def __init__(
        self, path: Path, *, exclusive: bool, timeout_s: float, busy: Callable[[], str]
    ) -> None:
        self._fd: int | None = os.open(ensure_private_file(path), os.O_RDWR)
        try:
            _flock(self._fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH, timeout_s, busy)
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing releases the lock
            self._fd = None


def lock_holders(path: Path, kind: str = "FLOCK") -> set[int]:
    """The pids holding a lock of ``kind`` (``FLOCK``, or ``POSIX`` for ``fcntl`` locks
    such as SQLite's) on ``path``, from Linux's ``/proc/locks`` (empty where there is none).
    It reads the kernel's table, never the file."""
    try:
        inode = os.stat(path).st_ino
        table = Path("/proc/locks").read_text()
    except OSError:
        return set()
    holders = set()
    for line in table.splitlines():
        fields = line.split()  # "1: POSIX ADVISORY READ <pid> <maj:min:inode> <start> <end>"
        if len(fields) >= 6 and fields[1] == kind and fields[5].endswith(f":{inode}"):
            holders.add(int(fields[4]))  # waiters ("->") have fields[1] == "->": skipped
    return holders
