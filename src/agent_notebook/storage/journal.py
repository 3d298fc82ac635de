"""All-or-nothing writes of several files under one directory, by an undo journal.

Each file is replaced atomically (temp file, fsync, rename), but a transaction of many files
killed part-way would leave some of them new and some old. So, before the first of them,
the journal (``.batch-journal.json``) is written atomically and fsynced: the old bytes of
every file the transaction replaces or deletes, the files it creates, the directories it
makes, and the digest of the one file whose rename commits the transaction (written last).
Then the files are written, the commit file last, then the deletions that follow the commit,
then the journal is removed. :func:`recover`, run under the writer's lock before anything
reads or writes, settles a journal a crash left: when the commit file holds the new bytes
the transaction committed and its deletions are finished; otherwise every file is put back
as it was. Both are idempotent, so a crash during recovery is recovered the same way.

The journal holds files' bytes as stored (sealed, when the notebook is encrypted), so it
needs no sealing of its own. A transaction that writes only the commit file needs no journal.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..core import files
from ..errors import CorruptFile

JOURNAL_FILE = ".batch-journal.json"
_FORMAT = "agent-notebook batch journal"
_VERSION = 1


@dataclass
class FileBatch:
    """One transaction's file changes, every path inside ``root``."""

    root: Path
    commit: tuple[Path, bytes]  # written last: its rename is the commit
    writes: list[tuple[Path, bytes]] = field(default_factory=list)
    deletes: list[Path] = field(default_factory=list)  # before the commit
    after_commit: list[Path] = field(default_factory=list)  # deletions the commit allows

    def apply(self) -> None:
        """Make the changes, all or (after a crash, once recovered) none."""
        journaled = bool(self.writes or self.deletes or self.after_commit)
        try:
            if journaled:
                self._write_journal()
            self._apply()
        except BaseException:
            if journaled:  # put the files back now, not at the next open
                with contextlib.suppress(Exception):
                    recover(self.root)
            raise

    def _write_journal(self) -> None:
        # A crash while an earlier journal was being written left only its temp file (no
        # journal, nothing to recover); the writers' lock is held, so none is being written.
        files.remove_temp_files(self.root, {JOURNAL_FILE})
        touched = [path for path, _ in self.writes] + self.deletes
        undo = [{"path": self._relative(p), "old": _old_bytes(p)} for p in touched]
        new_dirs = sorted(
            {self._relative(d) for p, _ in self.writes for d in _missing_dirs(p.parent)},
            key=lambda d: (-d.count("/"), d),  # deepest first: the order to remove them
        )
        commit_path, commit_data = self.commit
        document = {
            "format": _FORMAT,
            "version": _VERSION,
            "commit": {"path": self._relative(commit_path), "sha256": _digest(commit_data)},
            "undo": undo,
            "new_dirs": new_dirs,
            "after_commit": [self._relative(p) for p in self.after_commit],
        }
        # fsynced with its directory before any file of the batch is renamed into place
        files.write_atomic(self.root / JOURNAL_FILE, json.dumps(document).encode())

    def _apply(self) -> None:
        dirs: set[Path] = set()
        for path, data in self.writes:
            for made in _missing_dirs(path.parent):
                dirs.add(made.parent)  # its entry in the parent must be durable too
            files.ensure_private_dir(path.parent)
            files.write_atomic(path, data, sync_dir=False)
            dirs.add(path.parent)
        for path in self.deletes:
            path.unlink(missing_ok=True)
            dirs.add(path.parent)
        _sync(dirs)  # every change of the batch is durable before the commit
        commit_path, commit_data = self.commit
        files.write_atomic(commit_path, commit_data)
        _finish(self.root, self.after_commit)

    def _relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


def recover(root: Path) -> bool:
    """Settle the journal a crash left in ``root``, if any (call with the writer's lock
    held); True when there was one."""
    journal = root / JOURNAL_FILE
    try:
        raw = journal.read_bytes()
    except FileNotFoundError:
        return False
    document = _parse(raw, journal)
    commit = root / document["commit"]["path"]
    try:
        committed = _digest(commit.read_bytes()) == document["commit"]["sha256"]
    except FileNotFoundError:
        committed = False
    if committed:
        _finish(root, [root / p for p in document["after_commit"]])
        return True
    names_by_dir: dict[Path, set[str]] = {}
    for entry in document["undo"]:
        path = root / entry["path"]
        if entry["old"] is None:
            path.unlink(missing_ok=True)
        elif path.parent.is_dir():
            files.write_atomic(path, base64.b64decode(entry["old"]), sync_dir=False)
        names_by_dir.setdefault(path.parent, set()).add(path.name)
    for d, names in names_by_dir.items():  # the temp files the crash cut short
        files.remove_temp_files(d, names)
    dirs = set(names_by_dir)
    for name in document["new_dirs"]:
        made = root / name
        with contextlib.suppress(OSError):
            made.rmdir()  # only when empty
        dirs.add(made.parent)
    _sync(dirs)
    journal.unlink()
    files.fsync_dir(root)
    return True


def _finish(root: Path, after_commit: Iterable[Path]) -> None:
    """The deletions a committed transaction allows, then the journal's removal. That
    removal needs no fsync: a journal back after a crash is found committed again."""
    dirs: set[Path] = set()
    for path in after_commit:
        path.unlink(missing_ok=True)
        dirs.add(path.parent)
    _sync(dirs)
    (root / JOURNAL_FILE).unlink(missing_ok=True)


def _parse(raw: bytes, journal: Path) -> dict[str, Any]:
    """The journal, checked: well formed, every path inside the directory."""
    fix = (
        "it is written only while a batch of files is being written; if no process is "
        "writing, look at it, then remove it (the batch it describes may be partly written)"
    )
    try:
        document = json.loads(raw)
        if document.get("format") != _FORMAT or document.get("version") != _VERSION:
            raise ValueError("not a batch journal of this version")
        paths = [document["commit"]["path"], *document["after_commit"], *document["new_dirs"]]
        paths += [entry["path"] for entry in document["undo"]]
        for entry in document["undo"]:
            if entry["old"] is not None:
                base64.b64decode(entry["old"], validate=True)
        str(document["commit"]["sha256"])
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as err:
        raise CorruptFile(journal, f"not a valid batch journal ({err}): {fix}") from None
    for path in paths:
        pure = PurePosixPath(path) if isinstance(path, str) else None
        if pure is None or pure.is_absolute() or ".." in pure.parts or not pure.parts:
            raise CorruptFile(journal, f"names {path!r}, outside its directory: {fix}")
    return dict(document)


def _old_bytes(path: Path) -> str | None:
    try:
        return base64.b64encode(path.read_bytes()).decode("ascii")
    except FileNotFoundError:
        return None


def _missing_dirs(path: Path) -> list[Path]:
    """``path`` and its parents that do not exist yet, outermost first."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    return missing[::-1]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sync(dirs: Iterable[Path]) -> None:
    for d in sorted(dirs):
        if d.is_dir():
            files.fsync_dir(d)
