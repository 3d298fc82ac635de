"""Chat messages ``{role, content, timestamp?, speaker?|name?, id?}`` as a JSON list or JSONL.

Every message becomes one moment of a single session, whose source is the file (its
absolute ``file://`` URI: ingesting the same file again adds only new messages). Indexes in messages and in default
``source_id`` values are 0-based positions among the messages (blank JSONL lines skipped).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import MalformedFile, MalformedItem
from ..model import MomentDraft
from .plan import IngestSession
from .source import (
    json_type,
    line_of,
    load_json,
    make_draft,
    optional_str,
    parse_timestamp,
)


def sessions_from_json(
    path: Path, text: str, data: Any, default_time: datetime
) -> list[IngestSession]:
    """A JSON list of messages, or an object whose ``messages`` is that list."""
    prefix: list[str | int] = []
    if isinstance(data, dict) and "messages" in data:
        data, prefix = data["messages"], ["messages"]
    if not isinstance(data, list):
        raise MalformedFile(
            path,
            f"expected a list of messages, got {json_type(data)}",
            line_of(text, prefix),
        )
    if not data:
        raise MalformedFile(path, "no messages: the list is empty", line_of(text, prefix))
    return [_session(path, data, lambda i: line_of(text, [*prefix, i]), default_time)]


def sessions_from_jsonl(
    path: Path, lines: Iterable[tuple[int, str]], default_time: datetime
) -> list[IngestSession]:
    """One message object per line (``lines``: the non-blank ones with their numbers, read
    one at a time); each is turned into a draft as it is read, so only the drafts are held."""
    drafts: list[MomentDraft] = []
    read = 0
    previous = default_time
    for index, (number, raw) in enumerate(lines):
        try:
            draft = _draft(load_json(path, raw, number), index, previous)
        except MalformedItem as problem:
            raise MalformedFile(path, f"message {index}: {problem}", number) from None
        read += 1
        assert draft.timestamp is not None
        previous = draft.timestamp
        if not draft.is_empty:
            drafts.append(draft)
    if not read:
        raise MalformedFile(path, "no messages: the file is empty or has only blank lines")
    return [_session_of(path, drafts)]


def _session(
    path: Path,
    items: Sequence[Any],
    line_at: Callable[[int], int | None],
    default_time: datetime,
) -> IngestSession:
    drafts: list[MomentDraft] = []
    previous = default_time
    for index, item in enumerate(items):
        try:
            draft = _draft(item, index, previous)
        except MalformedItem as problem:
            raise MalformedFile(path, f"message {index}: {problem}", line_at(index)) from None
        assert draft.timestamp is not None
        previous = draft.timestamp
        if not draft.is_empty:  # null content (a message that only calls tools): no text
            drafts.append(draft)
    return _session_of(path, drafts)


def _session_of(path: Path, drafts: list[MomentDraft]) -> IngestSession:
    if not drafts:
        raise MalformedFile(path, "no message has any text to record")
    assert drafts[0].timestamp is not None
    return IngestSession(
        task=f"Imported from {path.name}",
        started=drafts[0].timestamp,
        drafts=drafts,
        source_id=path.resolve().as_uri(),
    )


def _draft(item: object, index: int, previous: datetime) -> MomentDraft:
    if not isinstance(item, dict):
        raise MalformedItem(f"expected a message object, got {json_type(item)}")
    if "role" not in item:
        raise MalformedItem("has no 'role'")
    role = item["role"]
    if not isinstance(role, str):
        raise MalformedItem(f"unknown role type: 'role' must be a string, not {json_type(role)}")
    if not role.strip():
        raise MalformedItem("'role' is empty")
    if "content" not in item:
        raise MalformedItem("has no 'content'")
    speaker = optional_str(item, "speaker")
    if speaker is None:
        speaker = optional_str(item, "name")
    stamp = item.get("timestamp")
    return make_draft(
        text=_content_text(item["content"]),
        role=role.strip(),
        speaker=speaker or "",
        timestamp=previous if stamp is None else parse_timestamp(stamp),
        source_id=_source_id(item.get("id"), index),
    )


def _content_text(content: object) -> str:
    """A string, or a list of parts (``{"type": "text", "text": ...}`` or plain strings).

    Text parts are joined by newlines; other parts (images, tool calls) carry no text.
    ``null`` content (an assistant message that only calls tools) is empty text.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise MalformedItem(
            f"'content' must be a string or a list of parts, not {json_type(content)}"
        )
    texts: list[str] = []
    for number, part in enumerate(content):
        if isinstance(part, str):
            texts.append(part)
        elif not isinstance(part, dict):
            raise MalformedItem(f"content part {number} is {json_type(part)}, not an object")
        elif part.get("type") == "text":
            text = part.get("text")
            if not isinstance(text, str):
                raise MalformedItem(f"content part {number} is a text part without a 'text' string")
            texts.append(text)
    return "\n".join(texts)


def _source_id(value: object, index: int) -> str:
    if value is None:
        return str(index)
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise MalformedItem(f"'id' must be a string or an integer, not {json_type(value)}")
