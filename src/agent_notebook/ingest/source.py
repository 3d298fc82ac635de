"""Shared pieces of the parsers: strict reading, JSON with line numbers, times and drafts.

Reading is bounded: a JSON file is parsed whole, so one over :data:`MAX_JSON_BYTES` is
refused before a byte is read; a JSONL file is read a line at a time (never the whole file
at once), up to :data:`MAX_JSONL_BYTES`, each line up to :data:`MAX_LINE_BYTES`."""

from __future__ import annotations

import json
import math
import re
import stat
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from ..core.files import refuse_live_database
from ..core.validation import describe_validation_error
from ..errors import MalformedFile, MalformedItem
from ..model import MomentDraft

_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")
_DECODER: Final = json.JSONDecoder()

#: The largest JSON file ingest reads: it is parsed whole (about three times its size in
#: memory); a longer conversation goes in as JSONL, read a line at a time.
MAX_JSON_BYTES: Final = 256 * 1024 * 1024
#: The largest JSONL file ingest reads (a line at a time; its messages are held until the
#: whole file is checked, so that a bad line records nothing).
MAX_JSONL_BYTES: Final = 2 * 1024 * 1024 * 1024
#: The longest line of a JSONL file: one message, far above ``moments.max_text_bytes``.
MAX_LINE_BYTES: Final = 64 * 1024 * 1024


#: A problem inside one item of a file; the caller adds the path and the line.
Problem = MalformedItem


def _readable(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{size} bytes"


def check_file(path: Path, limit: int, kind: str) -> int:
    """The size of ``path``, a regular file of at most ``limit`` bytes (else MalformedFile,
    saying the limit), checked before it is opened."""
    try:
        info = path.stat()  # stat, not open: it never waits
    except OSError as err:
        raise MalformedFile(path, f"cannot read the file: {err.strerror or err}") from None
    _check_regular(path, info.st_mode)
    if info.st_size > limit:
        more = (
            " Save it as JSONL (one message object a line, .jsonl), which is read a line "
            f"at a time up to {_readable(MAX_JSONL_BYTES)}, or split it"
            if kind == "JSON"
            else " Split it into several files and ingest each"
        )
        raise MalformedFile(
            path,
            f"the file is {_readable(info.st_size)}, over the {_readable(limit)} ingest reads "
            f"of a {kind} file; nothing was read.{more}",
        )
    return info.st_size


def _check_regular(path: Path, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise MalformedFile(path, "not a regular file (a directory): give a file in it")
    if not stat.S_ISREG(mode):
        kind = "a named pipe" if stat.S_ISFIFO(mode) else "a device or socket"
        raise MalformedFile(
            path,
            f"not a regular file ({kind}): ingest reads a saved file; save the "
            f"conversation to a file first (for example 'cat {path} > chat.jsonl') and "
            "ingest that",
        )


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a JSONL file with their numbers, read one at a time (each
    decoded as strict UTF-8; a leading byte-order mark is dropped). Only "\n" ends a line:
    ``str.splitlines()`` would also split on U+2028 inside strings."""
    check_file(path, MAX_JSONL_BYTES, "JSONL")
    refuse_live_database(path, "conversation file")
    offset = 0
    try:
        with path.open("rb") as f:
            for number, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), 1):
                if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                    raise MalformedFile(
                        path,
                        f"a line over {_readable(MAX_LINE_BYTES)}: one message a line, each "
                        "within that",
                        number,
                    )
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise MalformedFile(
                        path,
                        f"invalid UTF-8 at byte {offset + err.start} ({err.reason}); save the "
                        "file as UTF-8",
                        number,
                    ) from None
                offset += len(raw)
                if number == 1:
                    line = line.removeprefix("\ufeff")
                if line.strip():
                    yield number, line
    except OSError as err:
        raise MalformedFile(path, f"cannot read the file: {err.strerror or err}") from None


def read_text(path: Path) -> str:
    """The file's text, decoded as strict UTF-8 (a leading byte-order mark is dropped), at
    most :data:`MAX_JSON_BYTES`. Only a regular file: opening a named pipe waits for a
    writer (forever, if none comes), a device may never end, and the path is the source's
    id that a later ingest skips by."""
    check_file(path, MAX_JSON_BYTES, "JSON")
    refuse_live_database(path, "conversation file")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise MalformedFile(path, f"cannot read the file: {err.strerror or err}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise MalformedFile(
            path, f"invalid UTF-8 at byte {err.start} ({err.reason}); save the file as UTF-8", line
        ) from None
    return text.removeprefix("\ufeff")


def load_json(path: Path, text: str, line: int = 1) -> Any:
    """Parse JSON text; ``line`` is the file line the text starts on (for JSONL)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        where = line + err.lineno - 1
        raise MalformedFile(path, f"not JSON: {err.msg} (column {err.colno})", where) from None
    except ValueError as err:  # int() of a number over Python's 4,300-digit limit
        reason = str(err).split(";")[0]
        raise MalformedFile(path, f"a number that cannot be read ({reason})", line) from None
    except RecursionError:
        raise MalformedFile(path, "not JSON: nested too deeply", line) from None


def line_of(text: str, keys: Sequence[str | int]) -> int | None:
    """The line where the value at ``keys`` (object keys and array indexes) starts.

    ``text`` must be valid JSON. Used only to report errors, so it rescans the text.
    """
    try:
        pos = _locate(text, keys)
    except (ValueError, IndexError, RecursionError):
        return None
    return None if pos is None else text.count("\n", 0, pos) + 1


def _skip(text: str, pos: int) -> int:
    match = _WHITESPACE.match(text, pos)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _locate(text: str, keys: Sequence[str | int]) -> int | None:
    pos = _skip(text, 0)
    for key in keys:
        if isinstance(key, int):
            if not text.startswith("[", pos):
                return None
            pos = _skip(text, pos + 1)
            for _ in range(key):
                _, pos = _DECODER.raw_decode(text, pos)
                pos = _skip(text, pos)
                if not text.startswith(",", pos):
                    return None
                pos = _skip(text, pos + 1)
            if text.startswith("]", pos):
                return None
        else:
            if not text.startswith("{", pos):
                return None
            pos = _skip(text, pos + 1)
            found = None
            while not text.startswith("}", pos):
                name, pos = _DECODER.raw_decode(text, pos)
                pos = _skip(text, _skip(text, pos) + 1)  # the colon
                if name == key:
                    found = pos  # the last one wins, as in json.loads
                _, pos = _DECODER.raw_decode(text, pos)
                pos = _skip(text, pos)
                if text.startswith(",", pos):
                    pos = _skip(text, pos + 1)
            if found is None:
                return None
            pos = found
    return pos


def json_type(value: object) -> str:
    """How JSON would name the type of ``value``, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def parse_timestamp(value: object) -> datetime:
    """An ISO 8601 string (naive means UTC) or epoch seconds, as an aware UTC time."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise MalformedItem(f"timestamp {value!r} is not a finite number")
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            raise MalformedItem(f"timestamp {value!r} is out of range for epoch seconds") from None
    if not isinstance(value, str):
        raise MalformedItem(
            f"timestamp must be an ISO 8601 string or epoch seconds, not {json_type(value)}"
        )
    try:
        when = datetime.fromisoformat(value.strip())
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except ValueError:
        raise MalformedItem(
            f"timestamp {value!r} is not ISO 8601 (for example 2026-06-07T10:00:00Z)"
        ) from None
    except OverflowError:
        raise MalformedItem(f"timestamp {value!r} is out of range") from None


def optional_str(item: dict[str, Any], key: str) -> str | None:
    """``item[key]`` when it is a string, ``None`` when absent or null; a MalformedItem otherwise."""
    value = item.get(key)
    if value is None or isinstance(value, str):
        return value
    raise MalformedItem(f"'{key}' must be a string, not {json_type(value)}")


def make_draft(**fields: Any) -> MomentDraft:
    try:
        return MomentDraft.model_validate(fields)
    except ValidationError as err:
        raise MalformedItem(describe_validation_error(err, MomentDraft)) from None
