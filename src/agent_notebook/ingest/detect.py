"""``parse_file``: read a conversation file, detect its format, return a validated plan."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Final

from ..errors import InvalidInput, MalformedFile
from ..model import now_utc
from .locomo import sessions_from_locomo
from .messages import sessions_from_json, sessions_from_jsonl
from .plan import FORMAT_HELP, FORMATS, Format, IngestPlan
from .source import json_type, load_json, read_lines, read_text

_JSONL_SUFFIXES: Final = frozenset({".jsonl", ".ndjson"})
_ALIASES: Final[dict[str, Format]] = {
    "messages-json": "messages-json",
    "messages-jsonl": "messages-jsonl",
    "locomo": "locomo",
    "json": "messages-json",
    "jsonl": "messages-jsonl",
}


def parse_file(
    path: str | Path, *, format: str | None = None, default_time: datetime | None = None
) -> IngestPlan:
    """Parse a conversation file into an ingest plan; nothing is written.

    ``format`` is one of ``messages-json`` (alias ``json``), ``messages-jsonl`` (``jsonl``)
    or ``locomo``; ``None`` detects it. Messages without a timestamp take the previous
    message's; the first takes ``default_time`` (aware; now when ``None``).

    Raises :class:`MalformedFile`, naming the line where possible, for any problem in the
    file: the whole file is validated before the plan is returned.
    """
    file = Path(path)
    chosen = _check_format(format)
    if default_time is None:
        default_time = now_utc()
    elif default_time.tzinfo is None or default_time.utcoffset() is None:
        raise InvalidInput("default_time has no timezone: give an aware time")
    if chosen is None and file.suffix.lower() in _JSONL_SUFFIXES:
        chosen = "messages-jsonl"
    if chosen == "messages-jsonl":  # read a line at a time
        return IngestPlan(
            chosen, str(path), sessions_from_jsonl(file, read_lines(file), default_time)
        )
    text = read_text(file)
    if not text.strip():
        raise MalformedFile(file, "no messages: the file is empty")
    try:
        data = load_json(file, text)
    except MalformedFile as err:
        if chosen is not None:
            raise
        raise MalformedFile(file, f"{err.problem}; ingest reads {FORMAT_HELP}", err.line) from None
    if chosen is None:
        chosen = detect_format(file, data)
    if chosen == "locomo":
        return IngestPlan(chosen, str(path), sessions_from_locomo(file, text, data))
    return IngestPlan(chosen, str(path), sessions_from_json(file, text, data, default_time))


def detect_format(path: Path, data: Any) -> Format:
    """The format of parsed JSON: LoCoMo conversations or chat messages."""
    if isinstance(data, list):
        if not data:
            raise MalformedFile(path, "no messages: the list is empty", 1)
        first = data[0]
        return "locomo" if isinstance(first, dict) and "conversation" in first else "messages-json"
    if isinstance(data, dict):
        if "messages" in data:
            return "messages-json"
        if "conversation" in data:
            return "locomo"
    raise MalformedFile(
        path, f"unknown format: got {json_type(data)}; ingest reads {FORMAT_HELP}", 1
    )


def _check_format(format: str | None) -> Format | None:
    if format is None:
        return None
    try:
        return _ALIASES[format.strip().lower()]
    except KeyError:
        raise InvalidInput(
            f"unknown ingest format {format!r}: expected one of {', '.join(FORMATS)} "
            f"(or json, jsonl): {FORMAT_HELP}"
        ) from None
