"""The one exception tree of agent-notebook.

Every error the library raises on purpose is a :class:`NotebookError`; driver and file-system
errors are mapped into it at the storage boundary (``raise ... from err``), so callers catch one
root and front ends turn it into a message, an exit code or an HTTP status::

    NotebookError
    ├── InvalidInput            bad ids, values or files; nothing was changed  (also ValueError)
    │   ├── InvalidId           an id off its format (``../x``, ``s_bad``, empty)
    │   └── MalformedFile       a file that cannot be parsed; names the path and line
    ├── NotFound                an unknown session, moment, pending item…   (also LookupError)
    ├── Conflict                an id that exists already with other content
    ├── StorageError            the backend failed (disk, database, lock)
    │   └── CorruptFile         a stored file that no longer parses; names the file
    └── MissingDependency       an optional part is not installed; names the install command
                                                                          (also ImportError)

Messages say what was wrong, where, and how to fix it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "Conflict",
    "CorruptFile",
    "InvalidId",
    "InvalidInput",
    "MalformedFile",
    "MissingDependency",
    "NotFound",
    "NotebookError",
    "StorageError",
]


class NotebookError(Exception):
    """Root of every error agent-notebook raises on purpose."""


class InvalidInput(NotebookError, ValueError):
    """The caller's input is invalid. Nothing was written."""


class InvalidId(InvalidInput):
    """An id does not match its format."""

    def __init__(self, kind: str, value: object, pattern: str) -> None:
        self.kind = kind
        self.value = value
        super().__init__(
            f"invalid {kind} id {value!r}: expected the form {pattern} "
            f"(ids never contain slashes, dots or spaces)"
        )


class MalformedFile(InvalidInput):
    """A file given to us (ingest, import) cannot be read; names the path and line."""

    def __init__(self, path: Path | str, problem: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


class NotFound(NotebookError, LookupError):
    """The id names nothing in this notebook."""

    def __str__(self) -> str:  # LookupError would repr() the message
        return str(self.args[0]) if self.args else ""


class Conflict(NotebookError):
    """The write would overwrite different data under the same id."""


class StorageError(NotebookError):
    """The storage backend failed; the message names the file or database."""


class CorruptFile(StorageError):
    """A stored file no longer parses or validates (for example a hand-edited YAML file)."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = str(path)
        super().__init__(
            f"{self.path}: {problem}. Fix or restore this file (the rest of the notebook is "
            f"untouched); nothing was written."
        )


class MissingDependency(NotebookError, ImportError):
    """An optional part of agent-notebook is not installed."""

    def __init__(
        self, feature: str, extra: str | None = None, *, package: str | None = None
    ) -> None:
        command = (
            f"pip install '{package}'" if package else f"pip install 'agent-notebook[{extra}]'"
        )
        super().__init__(f"{feature} needs an optional dependency: {command}")
