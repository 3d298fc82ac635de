"""Pure row <-> record conversions shared by the SQL backends (SQLite, PostgreSQL).

Times are microseconds since the epoch (UTC). A moment's text lives in its own column (the
full-text index reads it from there) and is left out of the JSON body, so it is stored once;
so are its id, session, time, role and speaker (issue 17: half the bytes of a chat moment's
body). Bodies written before repeat those fields: they read the same, from the columns.
Fields at their defaults are left out too, ``schema_version`` 1 included (a body without
one was written at version 1; a later version is always written out). A retrieval key
that is also one of the moment's concepts (most are) is stored as the concept's position
in ``metadata.concepts``: ``"retrieval_keys":["api/routes.ts:118",0,3]``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from ..model import ArchiveEntry, Moment, Session

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
#: The columns a moment is read from, in the order :func:`moment_from_row` takes them.
MOMENT_READ: Final = "num, session_id, ts_us, speaker, role, text, body"
#: The fields the row's own columns hold, so the JSON body leaves them out.
_IN_COLUMNS: Final = frozenset({"id", "session", "timestamp", "role", "speaker"})
#: The ``schema_version`` of a body that states none (issue 17: 19 bytes of every body).
_UNSTATED_VERSION: Final = 1


def from_us(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def to_us(when: datetime) -> int:
    delta = when - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def moment_row(moment: Moment) -> tuple[int, str, int, str, str, str, str]:
    # Fields at their defaults are left out (validation puts them back): most of a chat
    # moment's fields are empty, and the body would otherwise outweigh the text.
    body = moment.model_dump(
        mode="json", exclude_defaults=True, exclude={*_IN_COLUMNS, "schema_version"}
    )
    if moment.schema_version != _UNSTATED_VERSION:
        body["schema_version"] = moment.schema_version
    if "metadata" in body:
        _keys_as_positions(body["metadata"])
    text = body.get("content", {}).pop("text", "")
    if body.get("content") == {}:  # most moments: the text was all their content
        del body["content"]
    return (
        moment.number,
        moment.session,
        to_us(moment.timestamp),
        moment.speaker,
        moment.role,
        text,
        _json(body),
    )


def moment_from_row(row: Sequence[Any]) -> Moment:
    """The moment of a row of :data:`MOMENT_READ`'s columns."""
    num, session_id, ts_us, speaker, role, text, body = row
    data = json.loads(body)
    data.setdefault("schema_version", _UNSTATED_VERSION)
    if "metadata" in data:
        _keys_from_positions(data["metadata"])
    data.update(
        id=f"m_{num}", session=session_id, timestamp=from_us(ts_us), role=role, speaker=speaker
    )
    data.setdefault("content", {})["text"] = text
    return Moment.model_validate(data)


def _keys_as_positions(metadata: dict[str, Any]) -> None:
    """The retrieval keys that are concepts too, as their concepts' positions (issue 17: a
    chat moment's keys are mostly its concepts, a tenth of the raw text's bytes again)."""
    keys, concepts = metadata.get("retrieval_keys"), metadata.get("concepts")
    if keys and concepts:
        position: dict[str, int] = {}
        for i, concept in enumerate(concepts):
            position.setdefault(concept, i)
        metadata["retrieval_keys"] = [position.get(key, key) for key in keys]


def _keys_from_positions(metadata: dict[str, Any]) -> None:
    keys = metadata.get("retrieval_keys")
    if keys and any(isinstance(key, int) for key in keys):
        concepts = metadata["concepts"]
        metadata["retrieval_keys"] = [concepts[k] if isinstance(k, int) else k for k in keys]


def session_row(session: Session) -> tuple[str, int, str]:
    return (session.id, to_us(session.started), _json(session.model_dump(mode="json")))


def session_from_row(body: str) -> Session:
    return Session.model_validate_json(body)


def archive_row(entry: ArchiveEntry) -> tuple[int, str]:
    return (entry.number, _json(entry.model_dump(mode="json")))


def archive_from_row(body: str) -> ArchiveEntry:
    return ArchiveEntry.model_validate_json(body)
