"""ETags of the notebook's records, and the check of an ``If-Match`` against one: a write
guarded by the ETag of the caller's last read fails with :class:`Conflict` when the record
changed since (see :meth:`Notebook.write_if_match`)."""

from __future__ import annotations

import hashlib

from pydantic import BaseModel

from ..errors import Conflict

__all__ = ["check_if_match", "etag_of"]


def etag_of(data: BaseModel | str) -> str:
    """A strong ETag: a hash of the record's JSON (or of the text)."""
    raw = data if isinstance(data, str) else data.model_dump_json()
    return '"' + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:20] + '"'


def check_if_match(if_match: str | None, current: str, what: str) -> None:
    """Raise :class:`Conflict` unless ``if_match`` is absent, ``*`` or ``current``."""
    if if_match is None:
        return
    offered = [tag.strip().removeprefix("W/") for tag in if_match.split(",")]
    if "*" in offered or current in offered:
        return
    raise Conflict(
        f"{what} changed since you read it (If-Match {if_match}, now {current}); "
        "read it again and reapply your change"
    )
