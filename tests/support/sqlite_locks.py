"""Which processes hold POSIX locks on a SQLite file, read from ``/proc/locks`` (Linux).

A connection to a database in WAL mode holds a shared lock on the database file for as long
as it is open; that lock is what tells every other process that the write-ahead log is in
use. A process that opens and closes the file outside SQLite loses it (closing any
descriptor drops all of the process's ``fcntl`` locks on the file), and the next process to
close its connection deletes the log under it. :func:`lock_holders` lets a test see that
loss without touching the file: it reads the kernel's table, never the database.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_notebook.core import files

PROC_LOCKS = Path("/proc/locks")


def lock_holders(database: Path) -> set[int]:
    """The pids holding a POSIX (``fcntl``) lock on ``database``'s inode."""
    if not PROC_LOCKS.exists():
        pytest.skip("/proc/locks is Linux's; this check needs it")
    return files.lock_holders(database, "POSIX")


def assert_holds_its_locks(pid: int, database: Path, who: str) -> None:
    """Fail when ``pid``, which has a connection open on ``database``, has lost its locks."""
    assert pid in lock_holders(database), (
        f"{who} (pid {pid}) has a connection to {database} but holds no lock on it: "
        "something in that process opened and closed the file outside SQLite, and the next "
        "process to close a connection will delete the write-ahead log under it"
    )
