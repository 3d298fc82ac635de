"""LoCoMo conversations (Maharana et al., ACL 2024): one session per conversation session.

Only the turns are read. ``observation``, ``session_summary``, ``event_summary`` and ``qa``
were written by an LLM (or are the benchmark's answers) and must never be indexed.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, NoReturn

from ..errors import MalformedFile, MalformedItem
from ..model import MomentDraft
from .plan import IngestSession
from .source import json_type, line_of, make_draft, optional_str

_SESSION_KEY: Final = re.compile(r"session_(\d+)")
#: "1:56 pm on 8 May, 2023"
_DATE_TIME: Final = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([a-z]+)\.?,?\s+(\d{4})\s*",
    re.IGNORECASE,
)
_MONTH_NAMES: Final = (
    *("january", "february", "march", "april", "may", "june"),
    *("july", "august", "september", "october", "november", "december"),
)
_MONTHS: Final = {
    **{name: n for n, name in enumerate(_MONTH_NAMES, start=1)},
    **{name[:3]: n for n, name in enumerate(_MONTH_NAMES, start=1)},
    "sept": 9,
}


def parse_locomo_time(value: str) -> datetime:
    """A LoCoMo session time such as ``1:56 pm on 8 May, 2023``, taken as UTC."""
    match = _DATE_TIME.fullmatch(value)
    month = _MONTHS.get(match[5].lower()) if match else None
    if match is None or month is None:
        raise MalformedItem(f"{value!r} is not a LoCoMo time such as '1:56 pm on 8 May, 2023'")
    hour, minute = int(match[1]), int(match[2])
    if not 1 <= hour <= 12:
        raise MalformedItem(f"{value!r} has hour {hour}, expected 1 to 12 with am/pm")
    hour = hour % 12 + (12 if match[3].lower() == "p" else 0)
    try:
        return datetime(int(match[6]), month, int(match[4]), hour, minute, tzinfo=UTC)
    except ValueError as err:
        raise MalformedItem(f"{value!r} is not a real time ({err})") from None


def sessions_from_locomo(path: Path, text: str, data: Any) -> list[IngestSession]:
    """A list of LoCoMo conversations (or a single conversation object)."""
    if isinstance(data, dict):
        conversations: list[tuple[object, list[str | int]]] = [(data, [])]
    elif isinstance(data, list):
        conversations = [(conv, [i]) for i, conv in enumerate(data)]
    else:
        raise MalformedFile(path, f"expected a list of LoCoMo conversations, got {json_type(data)}")
    sample_ids: set[str] = set()
    sessions: list[IngestSession] = []
    for conversation, base in conversations:
        sessions.extend(_Conversation(path, text, base).sessions(conversation, sample_ids))
    if not sessions:
        raise MalformedFile(path, "no messages: no LoCoMo session has turns")
    return sessions


class _Conversation:
    """Parses one conversation; errors name the line of the offending value."""

    def __init__(self, path: Path, text: str, base: list[str | int]) -> None:
        self.path = path
        self.text = text
        self.base = base
        self.label = f"conversation {base[0]}" if base else "conversation"

    def fail(self, problem: str, *keys: str | int) -> NoReturn:
        line = line_of(self.text, [*self.base, *keys]) or line_of(self.text, self.base)
        raise MalformedFile(self.path, problem, line)

    def sessions(self, conversation: object, sample_ids: set[str]) -> list[IngestSession]:
        if not isinstance(conversation, dict):
            self.fail(f"{self.label} is {json_type(conversation)}, not an object")
        sample_id = conversation.get("sample_id")
        if not isinstance(sample_id, str) or not sample_id.strip():
            self.fail(f"{self.label} has no 'sample_id' string", "sample_id")
        if sample_id in sample_ids:
            self.fail(f"sample_id {sample_id!r} repeats an earlier conversation", "sample_id")
        sample_ids.add(sample_id)
        self.label = f"LoCoMo {sample_id}"
        body = conversation.get("conversation")
        if not isinstance(body, dict):
            self.fail(f"{self.label} has no 'conversation' object", "conversation")
        numbered: dict[int, str] = {}
        for key in body:
            if match := _SESSION_KEY.fullmatch(key):
                if int(match[1]) in numbered:
                    self.fail(f"{self.label}: {key} repeats {numbered[int(match[1])]}", key)
                numbered[int(match[1])] = key
        dia_ids: set[str] = set()
        sessions = []
        for number in sorted(numbered):
            key = numbered[number]
            drafts = self._turns(body, key, dia_ids)
            if drafts:
                assert drafts[0].timestamp is not None
                sessions.append(
                    IngestSession(
                        task=f"LoCoMo {sample_id} session {number}",
                        started=drafts[0].timestamp,
                        drafts=drafts,
                        source_id=f"{sample_id}/session_{number}",
                    )
                )
        return sessions

    def _turns(self, body: dict[str, Any], key: str, dia_ids: set[str]) -> list[MomentDraft]:
        turns = body[key]
        where = ("conversation", key)
        if not isinstance(turns, list):
            self.fail(f"{self.label} {key} is {json_type(turns)}, not a list of turns", *where)
        if not turns:
            return []
        date_key = f"{key}_date_time"
        if date_key not in body:
            self.fail(f"{self.label} {key} has turns but no {date_key}", *where)
        date_time = body[date_key]
        if not isinstance(date_time, str):
            self.fail(f"{self.label} {date_key} is {json_type(date_time)}, not a string", *where)
        try:
            started = parse_locomo_time(date_time)
        except MalformedItem as problem:
            self.fail(f"{self.label} {date_key}: {problem}", "conversation", date_key)
        drafts = []
        for index, turn in enumerate(turns):
            try:
                draft = _draft(turn, started + timedelta(seconds=index), dia_ids)
            except MalformedItem as problem:
                self.fail(f"{self.label} {key} turn {index}: {problem}", *where, index)
            if not draft.is_empty:  # a turn with no text nor caption: nothing to keep
                drafts.append(draft)
        return drafts


def _draft(turn: object, when: datetime, dia_ids: set[str]) -> MomentDraft:
    if not isinstance(turn, dict):
        raise MalformedItem(f"expected a turn object, got {json_type(turn)}")
    for field in ("speaker", "dia_id", "text"):
        if not isinstance(turn.get(field), str):
            raise MalformedItem(f"has no '{field}' string")
    dia_id: str = turn["dia_id"]
    if dia_id in dia_ids:
        raise MalformedItem(f"dia_id {dia_id!r} repeats an earlier turn")
    dia_ids.add(dia_id)
    text: str = turn["text"]
    caption = (optional_str(turn, "blip_caption") or "").strip()
    if caption:
        text = f"{text}\n[shared an image: {caption}]"
    return make_draft(
        text=text, role="user", speaker=turn["speaker"], timestamp=when, source_id=dia_id
    )
