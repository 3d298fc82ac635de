"""Owner-only homes: find what is open to other users, report it on open, fix it in doctor.

Everything the library writes under a home is owner-only (directories 0700, files 0600, see
:mod:`agent_notebook.core.files`); a ``chmod -R``, a copy or an archive tool can loosen
that. A path is *loosened* when its mode grants any group or other bit. (A stricter mode
such as 0400 is not reported: it shares nothing.)

Symbolic links are never followed: a link whose target is outside the home (or missing) is
reported and left alone (``fixable`` is false), since chmod would change its target, which
the notebook does not own; a link into the home is skipped, its target is checked itself.

:func:`check_home` walks the whole tree (``doctor``); :func:`check_top` looks at the home and
its direct entries only (``notebook.db`` and its ``-wal``/``-shm``, ``config.yaml``, and the
``sessions/``, ``archive/``, ``secrets/`` directories themselves), which is what
:meth:`Notebook.open` runs: a YAML home holds a file per moment, and walking 100k of them on
every open would cost more than the open.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import stat
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..core.files import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE

__all__ = [
    "Fixed",
    "Loosened",
    "check_home",
    "check_top",
    "fix_command",
    "fix_home",
    "quiet_on_open",
    "report_on_open",
]

#: Group and other bits: any of them shares the path with another user.
SHARED_BITS = 0o077
#: At most this many paths are named in the message on open; doctor lists them all.
NAMED_ON_OPEN = 5

log = logging.getLogger(__name__)
_quiet: ContextVar[bool] = ContextVar("agent_notebook_quiet_permissions", default=False)

Kind = Literal["dir", "file", "symlink"]


@dataclass(frozen=True)
class Loosened:
    """A path under the home that other users may reach, with its mode and the one it
    should have (``want`` is None for a symlink, which is reported, not changed)."""

    path: Path
    kind: Kind
    mode: int
    want: int | None
    note: str = ""

    @property
    def fixable(self) -> bool:
        return self.want is not None

    def describe(self) -> str:
        if self.want is None:
            return f"{self.path} ({self.note})"
        return f"{self.path} ({self.kind} {self.mode:#o}, want {self.want:#o})"


@dataclass(frozen=True)
class Fixed:
    """What :func:`fix_home` did to one path: its mode before and after, or why it could not."""

    path: Path
    kind: Kind
    before: int
    after: int | None
    error: str = ""


def fix_command(home: Path) -> str:
    return f"agent-notebook doctor --fix --home {shlex.quote(str(home))}"


def check_home(home: Path) -> list[Loosened]:
    """Every loosened path of ``home`` and below it (the home itself first), never
    following a symbolic link."""
    found = _check_root(home)
    stack = [home]
    while stack:
        for entry in _entries(stack.pop()):
            loose = _check_entry(home, entry)
            if loose is not None:
                found.append(loose)
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
    return found


def check_top(home: Path) -> list[Loosened]:
    """The loosened paths among the home and its direct entries (what open checks)."""
    found = _check_root(home)
    for entry in _entries(home):
        loose = _check_entry(home, entry)
        if loose is not None:
            found.append(loose)
    return found


def fix_home(home: Path) -> list[Fixed]:
    """Make every loosened path of ``home`` owner-only again (directories 0700, files 0600;
    symbolic links are left alone). Returns what changed, and what could not be changed
    (a file owned by another user, say) with the reason."""
    changed = []
    for loose in check_home(home):
        if loose.want is None:
            continue
        try:
            os.chmod(loose.path, loose.want, follow_symlinks=False)
        except OSError as err:
            changed.append(Fixed(loose.path, loose.kind, loose.mode, None, err.strerror or ""))
        else:
            changed.append(Fixed(loose.path, loose.kind, loose.mode, loose.want))
    return changed


def report_on_open(home: Path) -> list[Loosened]:
    """Check the top of ``home`` and log a warning naming what is loosened and the command
    that fixes it; returns what was found. Logged once per open (not per path); nothing is
    logged inside :func:`quiet_on_open` (doctor, which reports them itself)."""
    if _quiet.get():
        return []
    found = check_top(home)
    if found:
        log.warning("%s", open_message(home, found))
    return found


def open_message(home: Path, found: list[Loosened]) -> str:
    named = "; ".join(loose.describe() for loose in found[:NAMED_ON_OPEN])
    more = f" and {len(found) - NAMED_ON_OPEN} more" if len(found) > NAMED_ON_OPEN else ""
    links = " (or link out of it)" if any(not loose.fixable for loose in found) else ""
    message = (
        f"agent-notebook: {len(found)} path(s) of the notebook at {home} are open to other "
        f"users{links}: {named}{more}."
    )
    if any(loose.fixable for loose in found):
        message += f" Run '{fix_command(home)}' to make them owner-only again."
    return message


@contextlib.contextmanager
def quiet_on_open() -> Iterator[None]:
    """Within this block, :meth:`Notebook.open` does not report loosened permissions."""
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return list(it)
    except (FileNotFoundError, NotADirectoryError):
        return []  # removed while we looked (a temp file renamed into place)


def _check_root(home: Path) -> list[Loosened]:
    # The home itself may be a link the owner made (~/.agent-notebook -> /data/nb): its
    # target is the notebook, so it is followed, unlike the links inside it.
    try:
        mode = stat.S_IMODE(os.stat(home).st_mode)
    except FileNotFoundError:
        return []
    return [Loosened(home, "dir", mode, PRIVATE_DIR_MODE)] if mode & SHARED_BITS else []


def _check_entry(home: Path, entry: os.DirEntry[str]) -> Loosened | None:
    try:
        if entry.is_symlink():
            return _check_link(home, Path(entry.path))
        mode = stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode)
        is_dir = entry.is_dir(follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not mode & SHARED_BITS:
        return None
    if is_dir:
        return Loosened(Path(entry.path), "dir", mode, PRIVATE_DIR_MODE)
    return Loosened(Path(entry.path), "file", mode, PRIVATE_FILE_MODE)


def _check_link(home: Path, link: Path) -> Loosened | None:
    target = link.resolve()
    root = home.resolve()
    if target.exists() and target.is_relative_to(root):
        return None  # its target is under the home, and checked there
    mode = stat.S_IMODE(link.lstat().st_mode)
    where = "missing" if not target.exists() else "outside the home"
    note = f"symlink to {target}, {where}: not followed, left alone"
    return Loosened(link, "symlink", mode, None, note)
