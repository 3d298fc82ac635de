"""The encryption key (``privacy.encryption``) as a person handles it from a front end: a
new key, printed or written to an owner-only file outside the home, and the key a rotation
seals under, read from a file or from a variable's text. The ciphers themselves stay in
:mod:`agent_notebook.core.crypto`, below every front end."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.crypto import generate_key, key_from_text, key_id, key_text, read_key_file
from ..core.crypto import write_key_file as _write_key_file


@dataclass(frozen=True)
class NewKey:
    """A key just made: its text (what ``AGENT_NOTEBOOK_KEY`` takes), its id (hex) and,
    when it was written to one, its file."""

    text: str
    id: str
    file: Path | None = None


def new_key(file: Path | None = None, home: Path | None = None) -> NewKey:
    """A random 256-bit key; with ``file``, written to that new owner-only file (refused
    inside ``home`` or over an existing file)."""
    key = generate_key()
    path = None if file is None else _write_key_file(file, key, home)
    return NewKey(text=key_text(key), id=key_id(key).hex(), file=path)


def key_in_file(path: Path, home: Path | None = None) -> bytes:
    """The key in ``path``, refused when it lives inside ``home`` or others can read it."""
    return read_key_file(path, home)


def key_of_text(text: str, where: str) -> bytes:
    """A key from its base64 text; ``where`` names its source in the error."""
    return key_from_text(text, where)
