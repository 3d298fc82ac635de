"""The one exception tree of agent-notebook.

Every error the library raises on purpose is a :class:`NotebookError`, and every one of them
is defined here (the modules that raise them re-export the names they always had); driver and
file-system errors are mapped into it at the storage boundary (``raise ... from err``), so
callers catch one root and front ends turn it into a message, an exit code or an HTTP status::

    NotebookError
    ├── InvalidInput             bad ids, values or files; nothing was changed  (a ValueError)
    │   ├── InvalidId            an id off its format (``../x``, ``s_bad``, empty)
    │   ├── MalformedFile        a file that cannot be parsed (ingest); names the path and line
    │   ├── MalformedItem        one item of an ingested file is wrong (a message, a turn, a time)
    │   ├── MalformedAnswer      a model's session-notebook answer is unusable (parse_answer)
    │   ├── CorruptMedia         an image or audio file that does not decode; names the file
    │   └── WrongKey             the notebook was sealed with another key than the one given
    ├── NotFound                 an unknown session, moment, pending item…  (a LookupError)
    │   ├── CheckpointPruned     a checkpoint id older than those a pruning checkpointer keeps
    │   └── VectorChangesPruned  vector changes asked after a position the log no longer keeps
    ├── Conflict                 an id that exists already with other content (HTTP 409)
    ├── Forbidden                a valid token that may not do this, a guest off its routes (403)
    ├── OverLimit                a guest's write-back past one of its caps (``guests:``)
    │   ├── TooLarge             a size cap: one text, or a guest's total bytes (HTTP 413)
    │   └── RateLimited          a count cap: per session, per hour (HTTP 429)
    ├── StorageError             the backend failed (disk, database, lock)  (HTTP 503)
    │   ├── CorruptFile          a stored file that no longer parses; names the file
    │   └── SealedBlobError      a sealed blob that does not open with its key (altered, moved)
    ├── MissingDependency        an optional part is not installed; names pip's command (ImportError)
    ├── ModelNotConfigured       the chat graph has no model: none given, configured or in the env
    ├── ModelFailed              a chat or embedding model's provider failed in a call (HTTP 502)
    ├── SummaryFailed            a summarizer's model gave no summary, no fallback (HTTP 502)
    └── UpdateFailed             the session-notebook updater got no valid proposal (HTTP 502)

Messages say what was wrong, where, and how to fix it. ``MalformedItem`` and
``MalformedAnswer`` are mostly caught inside the package (ingest turns the first into a
``MalformedFile`` with the path and line, the updater retries on the second, then raises
``UpdateFailed``); they reach a caller only from the parsing helpers that raise them directly.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "CheckpointPruned",
    "Conflict",
    "CorruptFile",
    "CorruptMedia",
    "Forbidden",
    "InvalidId",
    "InvalidInput",
    "MalformedAnswer",
    "MalformedFile",
    "MalformedItem",
    "MissingDependency",
    "ModelFailed",
    "ModelNotConfigured",
    "NotFound",
    "NotebookError",
    "OverLimit",
    "RateLimited",
    "SealedBlobError",
    "StorageError",
    "SummaryFailed",
    "TooLarge",
    "UpdateFailed",
    "VectorChangesPruned",
    "WrongKey",
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


class MalformedItem(InvalidInput):
    """One item of an ingested file (a message, a turn, a time) is wrong. The parser adds the
    path and line and raises :class:`MalformedFile`; ``parse_locomo_time`` raises it as is."""


class MalformedAnswer(InvalidInput):
    """A model's answer to the session-notebook updater cannot be used; the message says what
    was wrong with it. The updater asks again, then raises :class:`UpdateFailed`."""


_REEXPORT = "re-export or copy the file again from its source"


class CorruptMedia(InvalidInput):
    """A media file that cannot be decoded (truncated, damaged, or not what its name says)."""

    def __init__(self, path: Path | str, problem: str, fix: str = _REEXPORT) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}; {fix}. Nothing was recorded.")


class WrongKey(InvalidInput):
    """The notebook was sealed with another key than the one given. Nothing was changed."""


class NotFound(NotebookError, LookupError):
    """The id names nothing in this notebook."""

    def __str__(self) -> str:  # LookupError would repr() the message
        return str(self.args[0]) if self.args else ""


class CheckpointPruned(NotFound):
    """A checkpoint id older than the ones a pruning checkpointer keeps."""


class VectorChangesPruned(NotFound):
    """``StorageBackend.vector_changes`` from a position older than the changes it still
    keeps (a removal there may be gone from its log): the caller loads the vectors again
    from position 0."""

    def __init__(self, after: int) -> None:
        super().__init__(f"the vector changes after {after} were pruned: load from 0")
        self.after = after


class Conflict(NotebookError):
    """The write would overwrite different data under the same id."""


class Forbidden(NotebookError):
    """The token is valid but may not do this (a guest off its routes): HTTP 403."""


class OverLimit(NotebookError):
    """A guest's write-back past one of its caps: ``cap`` names the setting (under
    ``guests:`` in ``config.yaml``), ``limit`` is its value; nothing was written.
    ``retry_after_s``: when a retry may pass (an hourly cap), else None."""

    def __init__(
        self, message: str, *, cap: str, limit: int, retry_after_s: int | None = None
    ) -> None:
        super().__init__(message)
        self.cap, self.limit, self.retry_after_s = cap, limit, retry_after_s


class TooLarge(OverLimit):
    """A size cap: one write-back's text, or the bytes a guest may write in all (HTTP 413)."""


class RateLimited(OverLimit):
    """A count cap: write-backs per session, or per guest and hour (HTTP 429)."""


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


class SealedBlobError(StorageError):
    """A sealed blob does not open with its key: altered, truncated or moved."""


class MissingDependency(NotebookError, ImportError):
    """An optional part of agent-notebook is not installed."""

    def __init__(
        self, feature: str, extra: str | None = None, *, package: str | None = None
    ) -> None:
        command = (
            f"pip install '{package}'" if package else f"pip install 'agent-notebook[{extra}]'"
        )
        super().__init__(f"{feature} needs an optional dependency: {command}")


class ModelNotConfigured(NotebookError):
    """No chat model was given, configured or set in the environment variable ``env_var``."""

    def __init__(self, env_var: str) -> None:
        super().__init__(
            "no chat model configured: set 'chat: {model: provider:name}' in config.yaml, or "
            f"{env_var}=provider:name (for example openai:gpt-4o-mini), or pass --model; "
            "offline, with no LLM: --model offline:notes answers from what the notebook recalls"
        )


class ModelFailed(NotebookError):
    """A model's provider failed while serving a request: the chat model's, or the
    embedding model's that ``search.embedder`` names (``provider:model``): HTTP 502."""


class SummaryFailed(NotebookError):
    """No summary could be made (the model failed and there was no fallback): HTTP 502."""


class UpdateFailed(NotebookError):
    """The updater could not produce a valid proposal; the notebook stays as it was: HTTP
    502 (its model failed or answered unusably)."""
