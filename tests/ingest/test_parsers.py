"""The ingest parsers: chat messages (JSON, JSONL) and LoCoMo, detection and error lines."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_notebook.errors import InvalidInput, MalformedFile
from agent_notebook.ingest import IngestPlan, parse_file, parse_locomo_time
from tests.support.locomo import LOCOMO_DEV

T0 = datetime(2026, 6, 7, 10, 0, tzinfo=UTC)


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def malformed(path: Path, **kwargs: Any) -> MalformedFile:
    with pytest.raises(MalformedFile) as info:
        parse_file(path, **kwargs)
    assert info.value.path == str(path)
    return info.value


# --- chat messages -----------------------------------------------------------------------

MESSAGES = [
    {"role": "user", "content": "Hi, I moved to Lisbon.", "timestamp": "2026-06-07T10:00:00Z"},
    {"role": "assistant", "content": [{"type": "text", "text": "Nice!"}, {"type": "image_url"}]},
    {"role": "user", "content": "I adopted a cat.", "timestamp": 1780826400, "id": "msg-9"},
    {"role": "user", "name": "Ana", "content": "Naive time.", "timestamp": "2026-06-08 09:30"},
]


def test_json_messages_parse_to_one_session(tmp_path: Path) -> None:
    path = write(tmp_path, "chat.json", json.dumps(MESSAGES, indent=2))
    plan = parse_file(path)
    assert plan.format == "messages-json"
    assert plan.path == str(path)
    assert plan.moment_count == 4
    [session] = plan.sessions
    assert session.task == "Imported from chat.json"
    assert session.started == T0
    assert session.source_id == path.resolve().as_uri()  # the file is the source
    texts = [d.text for d in session.drafts]
    assert texts == ["Hi, I moved to Lisbon.", "Nice!", "I adopted a cat.", "Naive time."]
    assert [d.role for d in session.drafts] == ["user", "assistant", "user", "user"]
    assert [d.source_id for d in session.drafts] == ["0", "1", "msg-9", "3"]
    assert session.drafts[3].speaker == "Ana"
    stamps = [d.timestamp for d in session.drafts]
    # no timestamp → the previous message's; epoch seconds; naive ISO → UTC
    assert stamps == [
        T0,
        T0,
        datetime.fromtimestamp(1780826400, UTC),
        datetime(2026, 6, 8, 9, 30, tzinfo=UTC),
    ]


def test_content_parts_join_text_and_offsets_become_utc(tmp_path: Path) -> None:
    messages = [
        {
            "role": "user",
            "speaker": "Bo",
            "content": [{"type": "text", "text": "line one"}, "line two"],
            "timestamp": "2026-06-07T12:00:00+02:00",
            "id": 42,
        }
    ]
    plan = parse_file(write(tmp_path, "parts.json", json.dumps({"messages": messages})))
    [draft] = plan.sessions[0].drafts
    assert draft.text == "line one\nline two"
    assert draft.speaker == "Bo"
    assert draft.source_id == "42"
    assert draft.timestamp == T0
    assert draft.timestamp is not None and draft.timestamp.tzinfo is UTC


def test_missing_timestamps_use_default_time(tmp_path: Path) -> None:
    path = write(tmp_path, "plain.json", '[{"role": "user", "content": "a"}]')
    plan = parse_file(path, default_time=T0)
    assert plan.sessions[0].started == T0
    assert plan.sessions[0].drafts[0].timestamp == T0
    before = datetime.now(UTC)
    stamp = parse_file(path).sessions[0].started
    assert before <= stamp <= datetime.now(UTC)


def test_jsonl_skips_blank_lines(tmp_path: Path) -> None:
    lines = [json.dumps(MESSAGES[0]), "", "   ", json.dumps(MESSAGES[2]) + "\r"]
    plan = parse_file(write(tmp_path, "chat.jsonl", "\n".join(lines) + "\n"))
    assert plan.format == "messages-jsonl"
    [session] = plan.sessions
    assert [d.text for d in session.drafts] == ["Hi, I moved to Lisbon.", "I adopted a cat."]
    assert [d.source_id for d in session.drafts] == ["0", "msg-9"]
    assert session.started == T0


def test_jsonl_keeps_line_separators_inside_strings(tmp_path: Path) -> None:
    line = json.dumps({"role": "user", "content": "a\u2028b"}, ensure_ascii=False)
    plan = parse_file(write(tmp_path, "sep.jsonl", line + "\n"), default_time=T0)
    assert plan.sessions[0].drafts[0].text == "a\u2028b"


# --- LoCoMo ------------------------------------------------------------------------------


def locomo_sample() -> list[dict[str, Any]]:
    def turns(session: int, *texts: str) -> list[dict[str, Any]]:
        speakers = ["Ana", "Bo"]
        return [
            {"speaker": speakers[i % 2], "dia_id": f"D{session}:{i + 1}", "text": text}
            for i, text in enumerate(texts)
        ]

    session_2 = turns(2, "I started painting.", "Show me!")
    session_2[0] |= {"img_url": ["http://x/y.jpg"], "blip_caption": "a photo of a sunset"}
    conversation = {
        "speaker_a": "Ana",
        "speaker_b": "Bo",
        "session_10_date_time": "9:05 am on 1 January, 2024",
        "session_10": turns(10, "Happy new year!"),
        "session_2_date_time": "1:56 pm on 8 May, 2023",
        "session_2": session_2,
        "session_3_date_time": "2:00 pm on 9 May, 2023",  # a date without turns
    }
    return [
        {
            "sample_id": "conv-x",
            "conversation": conversation,
            "observation": {"session_2_observation": "LLM-written, never indexed"},
            "session_summary": {"session_2_summary": "LLM-written summary"},
            "event_summary": {"events_session_2": "LLM-written events"},
            "qa": [{"question": "What did Ana start?", "answer": "painting", "evidence": []}],
        }
    ]


def test_locomo_sessions_in_numeric_order_with_captions(tmp_path: Path) -> None:
    plan = parse_file(write(tmp_path, "sample.json", json.dumps(locomo_sample(), indent=1)))
    assert plan.format == "locomo"
    assert [s.source_id for s in plan.sessions] == ["conv-x/session_2", "conv-x/session_10"]
    assert [s.task for s in plan.sessions] == [
        "LoCoMo conv-x session 2",
        "LoCoMo conv-x session 10",
    ]
    first, last = plan.sessions
    start = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert first.started == start
    assert last.started == datetime(2024, 1, 1, 9, 5, tzinfo=UTC)
    assert [d.source_id for d in first.drafts] == ["D2:1", "D2:2"]
    assert [d.timestamp for d in first.drafts] == [start, start + timedelta(seconds=1)]
    assert first.drafts[0].text == "I started painting.\n[shared an image: a photo of a sunset]"
    assert first.drafts[1].text == "Show me!"
    assert [(d.role, d.speaker) for d in first.drafts] == [("user", "Ana"), ("user", "Bo")]
    assert plan.moment_count == 3
    every_text = " ".join(d.text for s in plan.sessions for d in s.drafts)
    assert "LLM-written" not in every_text and "What did Ana" not in every_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:48 am on 1 February, 2023", datetime(2023, 2, 1, 0, 48, tzinfo=UTC)),
        ("12:10 pm on 11 Aug, 2023", datetime(2023, 8, 11, 12, 10, tzinfo=UTC)),
    ],
)
def test_locomo_time(text: str, expected: datetime) -> None:
    assert parse_locomo_time(text) == expected


# --- detection ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("a.json", json.dumps(MESSAGES), "messages-json"),
        ("a.txt", json.dumps({"messages": MESSAGES}), "messages-json"),
        ("a.JSONL", json.dumps(MESSAGES[0]), "messages-jsonl"),
        ("a.data", json.dumps(locomo_sample()), "locomo"),
        ("a.json", json.dumps(locomo_sample()[0]), "locomo"),
    ],
)
def test_detection(tmp_path: Path, name: str, content: str, expected: str) -> None:
    plan = parse_file(write(tmp_path, name, content), default_time=T0)
    assert plan.format == expected
    assert plan.moment_count > 0


def test_explicit_format_overrides_suffix(tmp_path: Path) -> None:
    path = write(tmp_path, "chat.txt", json.dumps(MESSAGES[0]) + "\n" + json.dumps(MESSAGES[2]))
    assert parse_file(path, format="messages-jsonl").moment_count == 2
    assert parse_file(path, format="jsonl").format == "messages-jsonl"
    assert malformed(path, format="messages-json").line == 2  # "Extra data"
    with pytest.raises(InvalidInput, match="unknown ingest format 'csv'"):
        parse_file(path, format="csv")


def test_naive_default_time_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "a.json", '[{"role": "user", "content": "a"}]')
    with pytest.raises(InvalidInput, match="no timezone"):
        parse_file(path, default_time=datetime(2026, 6, 7))


# --- malformed input names the line ------------------------------------------------------


def test_bad_json_names_line_3(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", '[\n  {"role": "user", "content": "a"},\n  oops\n]')
    err = malformed(path)
    assert err.line == 3
    assert "not JSON: Expecting value" in err.problem
    assert str(err).startswith(f"{path}:3: ")


def test_jsonl_line_2_without_content(tmp_path: Path) -> None:
    lines = ['{"role": "user", "content": "a"}', '{"role": "user"}']
    err = malformed(write(tmp_path, "chat.jsonl", "\n".join(lines)))
    assert (err.line, err.problem) == (2, "message 1: has no 'content'")


def test_json_item_line_is_located(tmp_path: Path) -> None:
    body = [{"role": "user", "content": "fine"}] * 3 + [{"role": 7, "content": "x"}]
    text = json.dumps({"meta": {"a": [1, 2]}, "messages": body}, indent=2)
    err = malformed(write(tmp_path, "chat.json", text))
    assert "message 3: unknown role type" in err.problem
    role_line = text.splitlines().index('      "role": 7,') + 1
    assert err.line == role_line - 1  # the line where the item's "{" is


def test_invalid_utf8_names_byte_and_line(tmp_path: Path) -> None:
    data = b'[\n{"role": "user", "content": "caf\xe9"}\n]'
    err = malformed(write(tmp_path, "latin1.json", data))
    assert err.line == 2
    offset = data.index(b"\xe9")
    assert f"invalid UTF-8 at byte {offset}" in err.problem


def test_bad_timestamp(tmp_path: Path) -> None:
    lines = ['{"role": "user", "content": "a"}'] * 2 + [
        '{"role": "user", "content": "b", "timestamp": "yesterday"}'
    ]
    err = malformed(write(tmp_path, "t.jsonl", "\n".join(lines)))
    assert err.line == 3
    assert "message 2: timestamp 'yesterday' is not ISO 8601" in err.problem


@pytest.mark.parametrize("stamp", ["1e400", "NaN", "true", "[1]"])
def test_unusable_timestamps(tmp_path: Path, stamp: str) -> None:
    text = '[{"role": "user", "content": "a", "timestamp": ' + stamp + "}]"
    assert "timestamp" in malformed(write(tmp_path, "t.json", text)).problem


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("empty.json", ""),
        ("blank.jsonl", "\n \n"),
        ("list.json", "[]"),
        ("obj.json", '{"messages": []}'),
    ],
)
def test_no_messages(tmp_path: Path, name: str, content: str) -> None:
    assert malformed(write(tmp_path, name, content)).problem.startswith("no messages")


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ('"hello"', "message 0: expected a message object, got a string"),
        ('{"content": "a"}', "message 0: has no 'role'"),
        ('{"role": "user", "content": 5}', "'content' must be a string or a list of parts"),
        ('{"role": "user", "content": [{"type": "text"}]}', "text part without a 'text'"),
        ('{"role": "user", "content": "a", "id": 1.5}', "'id' must be a string or an integer"),
        ('{"role": "user", "content": "\\ud800"}', "message 0: text: text is not valid UTF-8"),
    ],
)
def test_invalid_messages(tmp_path: Path, message: str, problem: str) -> None:
    err = malformed(write(tmp_path, "m.json", f"[\n{message}\n]"))
    assert problem in err.problem
    assert err.line == 2


def test_not_a_conversation_file(tmp_path: Path) -> None:
    err = malformed(write(tmp_path, "x.json", '{"hello": 1}'))
    assert "unknown format" in err.problem


def locomo_error(tmp_path: Path, sample: list[dict[str, Any]]) -> MalformedFile:
    text = json.dumps(sample, indent=1)
    err = malformed(write(tmp_path, "locomo.json", text))
    assert err.line is not None
    return err


def test_locomo_turns_without_date_time(tmp_path: Path) -> None:
    sample = locomo_sample()
    del sample[0]["conversation"]["session_2_date_time"]
    err = locomo_error(tmp_path, sample)
    assert "LoCoMo conv-x session_2 has turns but no session_2_date_time" in err.problem
    assert '"session_2": [' in (tmp_path / "locomo.json").read_text().splitlines()[err.line - 1]


def test_locomo_bad_turn_names_its_line(tmp_path: Path) -> None:
    sample = locomo_sample()
    del sample[0]["conversation"]["session_2"][1]["text"]
    err = locomo_error(tmp_path, sample)
    assert err.problem == "LoCoMo conv-x session_2 turn 1: has no 'text' string"
    lines = (tmp_path / "locomo.json").read_text().splitlines()
    assert lines[err.line - 1].strip() == "{" and '"D2:2"' in lines[err.line + 1]


def test_locomo_bad_date_time(tmp_path: Path) -> None:
    sample = locomo_sample()
    sample[0]["conversation"]["session_10_date_time"] = "13:05 pm on 1 January, 2024"
    err = locomo_error(tmp_path, sample)
    assert "session_10_date_time" in err.problem and "hour 13" in err.problem


# --- the real LoCoMo development split ---------------------------------------------------


def test_real_locomo_file() -> None:
    if not LOCOMO_DEV.exists():
        pytest.skip(f"{LOCOMO_DEV} is not available")
    plan: IngestPlan = parse_file(LOCOMO_DEV)
    assert plan.format == "locomo"
    conversations: dict[str, int] = {}
    for session in plan.sessions:
        assert session.source_id is not None
        sample_id, _, number = session.source_id.partition("/session_")
        conversations[sample_id] = conversations.get(sample_id, 0) + 1
        assert session.drafts
        for draft in session.drafts:
            assert draft.source_id is not None
            assert re.fullmatch(rf"D{number}:\d+", draft.source_id)
    assert len(conversations) == 5
    assert all(count > 0 for count in conversations.values())
