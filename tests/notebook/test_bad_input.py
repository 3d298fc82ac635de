"""Bad input gets an error that names the problem, and the notebook is left as it was.

Each test takes a snapshot of everything a backend stores (sessions, moments, concepts,
counters), feeds the facade one kind of bad input, checks the error type and message, and
compares a fresh snapshot with the first.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent_notebook import (
    CorruptFile,
    InvalidId,
    InvalidInput,
    Notebook,
    NotFound,
)
from tests.support.snapshots import snapshot

BAD_IDS = ["../x", "a/b", "", "s_2026-13-01_001", "m_0", "m_01"]
#: What surrogateescape decoding makes of invalid UTF-8 (b"caf\xe9" read as UTF-8).
LONE_SURROGATE = "\udc80"
ESCAPED = b"caf\xe9".decode("utf-8", "surrogateescape")
T0 = datetime(2026, 6, 7, 9, 30, tzinfo=UTC)


@pytest.fixture
def filled(notebook: Notebook) -> tuple[Notebook, str]:
    """A notebook with one session holding two moments (the second a child of the first)."""
    session = notebook.start_session("Plan the trip", started=T0)
    first = notebook.record(session.id, "Book the train to Lyon for 7 June")
    notebook.record(session.id, "Booked, seat 42", role="assistant", parent=first.id)
    return notebook, session.id


# -- ids off the format ---------------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_session_id_is_invalid_id_naming_the_value(
    filled: tuple[Notebook, str], bad: str
) -> None:
    nb, _ = filled
    before = snapshot(nb.backend)
    with pytest.raises(InvalidId, match="session") as info:
        nb.get_session(bad)
    assert repr(bad) in str(info.value)
    assert info.value.value == bad
    with pytest.raises(InvalidId) as info:
        nb.record(bad, "text that must not land anywhere")
    assert repr(bad) in str(info.value)
    with pytest.raises(InvalidId) as info:
        nb.record_many(bad, [{"text": "a"}, {"text": "b"}])
    assert repr(bad) in str(info.value)
    assert snapshot(nb.backend) == before


@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_moment_id_is_invalid_id_naming_the_value(
    filled: tuple[Notebook, str], bad: str
) -> None:
    nb, sid = filled
    before = snapshot(nb.backend)
    with pytest.raises(InvalidId, match="moment") as info:
        nb.get_moment(bad)
    assert repr(bad) in str(info.value)
    # The same id as a parent is refused by validation, naming the field and the value.
    with pytest.raises(InvalidInput, match="parent") as info2:
        nb.record(sid, "a reply to nothing", parent=bad)
    assert repr(bad) in str(info2.value)
    assert snapshot(nb.backend) == before


@pytest.mark.parametrize("bad", ["m_1\n", "m_1 ", " m_1", "m_\u0661", "m_1\u0662", "m_\uff11"])
def test_moment_ids_match_whole_and_ascii_only(filled: tuple[Notebook, str], bad: str) -> None:
    nb, sid = filled
    before = snapshot(nb.backend)
    with pytest.raises(InvalidId) as info:
        nb.get_moment(bad)  # "m_1\n" once matched "^m_...$" and read m_1
    assert repr(bad) in str(info.value)
    with pytest.raises(InvalidInput, match="parent"):
        nb.record(sid, "reply", parent=bad)  # once stored parent "m_1\n" and adopted it
    assert snapshot(nb.backend) == before


@pytest.mark.parametrize(
    "bad", ["s_2026-06-07_001\n", "s_2026-06-07_001 ", "s_\u0662\u0660\u0662\u0666-06-07_001"]
)
def test_session_ids_match_whole_and_ascii_only(filled: tuple[Notebook, str], bad: str) -> None:
    nb, _ = filled
    before = snapshot(nb.backend)
    with pytest.raises(InvalidId) as info:
        nb.get_session(bad)
    assert repr(bad) in str(info.value)
    with pytest.raises(InvalidId):
        nb.record(bad, "text")
    assert snapshot(nb.backend) == before


# -- text that is not UTF-8 -----------------------------------------------------------------


@pytest.mark.parametrize("text", [LONE_SURROGATE, ESCAPED, f"ok then {LONE_SURROGATE} more"])
def test_lone_surrogate_in_text_is_refused(filled: tuple[Notebook, str], text: str) -> None:
    nb, sid = filled
    before = snapshot(nb.backend)
    with pytest.raises(InvalidInput, match="UTF-8"):
        nb.record(sid, text)
    with pytest.raises(InvalidInput, match="UTF-8"):
        nb.record(sid, "fine text", speaker=text)
    with pytest.raises(InvalidInput, match="UTF-8"):
        nb.record(sid, "fine text", actions=[{"tool": text}])
    with pytest.raises(InvalidInput, match="UTF-8"):
        nb.record(sid, "fine text", actions=[{"tool": "t", "arguments": {"k": text}}])
    with pytest.raises(InvalidInput, match="UTF-8"):
        nb.start_session(text)
    with pytest.raises(InvalidInput, match="UTF-8"):
        nb.decide(sid, text)
    with pytest.raises(InvalidInput, match="UTF-8"):
        nb.open_pending(sid, text)
    with pytest.raises(InvalidInput, match="UTF-8"):
        nb.update_session(sid, task=text)
    assert snapshot(nb.backend) == before


# -- records that cannot exist --------------------------------------------------------------


def test_moment_for_unknown_session_is_not_found(filled: tuple[Notebook, str]) -> None:
    nb, _ = filled
    before = snapshot(nb.backend)
    unknown = "s_2026-01-01_999"
    with pytest.raises(NotFound, match=unknown):
        nb.record(unknown, "orphan")
    with pytest.raises(NotFound, match=unknown):
        nb.record_many(unknown, [{"text": "a"}, {"text": "b"}])
    assert snapshot(nb.backend) == before


def test_unknown_parent_is_not_found_and_uses_no_id(filled: tuple[Notebook, str]) -> None:
    nb, sid = filled
    before = snapshot(nb.backend)
    with pytest.raises(NotFound, match="m_999"):
        nb.record(sid, "reply", parent="m_999")
    assert snapshot(nb.backend) == before
    assert nb.record(sid, "next").id == "m_3"  # the failed record reserved no number


@pytest.mark.parametrize("importance", [1.5, -0.1, float("nan"), float("inf")])
def test_importance_out_of_range_is_refused(
    filled: tuple[Notebook, str], importance: float
) -> None:
    nb, sid = filled
    before = snapshot(nb.backend)
    with pytest.raises(InvalidInput, match="importance"):
        nb.record(sid, "very important", importance=importance)
    assert snapshot(nb.backend) == before


def test_naive_datetimes_are_refused(filled: tuple[Notebook, str]) -> None:
    nb, sid = filled
    before = snapshot(nb.backend)
    naive = datetime(2026, 6, 7, 10, 0)
    with pytest.raises(InvalidInput, match="timezone"):
        nb.start_session("no zone", started=naive)
    with pytest.raises(InvalidInput, match="timezone"):
        nb.record(sid, "no zone", timestamp=naive)
    with pytest.raises(InvalidInput, match="timezone"):
        nb.search("train", since=naive)
    assert snapshot(nb.backend) == before


def test_record_many_with_one_bad_draft_records_none(filled: tuple[Notebook, str]) -> None:
    nb, sid = filled
    before = snapshot(nb.backend)
    good = [{"text": f"good draft {i}"} for i in range(5)]
    bad_drafts: list[dict[str, Any]] = [
        {"text": "bad", "importance": 1.5},
        {"text": "bad", "timestamp": datetime(2026, 1, 1)},
        {"text": LONE_SURROGATE},
        {"text": "bad", "parent": "m_01"},
        {"text": "bad", "no_such_field": 1},
        {"text": "bad", "parent": "m_999"},  # valid form, missing: fails inside the transaction
    ]
    for bad in bad_drafts:
        with pytest.raises((InvalidInput, NotFound)) as info:
            nb.record_many(sid, [*good[:3], bad, *good[3:]])
        if isinstance(info.value, InvalidInput):
            assert "moment 3" in str(info.value)  # names the draft that was wrong
        assert snapshot(nb.backend) == before, bad
    recorded = nb.record_many(sid, good)
    assert [m.id for m in recorded] == ["m_3", "m_4", "m_5", "m_6", "m_7"]


def test_close_unknown_pending_and_escalation_are_not_found(
    filled: tuple[Notebook, str],
) -> None:
    nb, sid = filled
    before = snapshot(nb.backend)
    with pytest.raises(NotFound, match="p_7"):
        nb.close_pending(sid, "p_7")
    with pytest.raises(NotFound, match="e_3"):
        nb.resolve_escalation(sid, "e_3", "done")
    with pytest.raises(NotFound, match="m_404"):
        nb.link(sid, "m_404")
    with pytest.raises(InvalidInput, match="task_status"):
        nb.update_session(sid, task_status="finished")
    assert snapshot(nb.backend) == before


# -- hand-broken files in a YAML notebook ---------------------------------------------------


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _yaml_notebook(home: Path) -> tuple[str, str]:
    with Notebook.open(home, backend="yaml") as nb:
        session = nb.start_session("Plan the trip", started=T0)
        nb.record(session.id, "Book the train to Lyon for 7 June")
        moment = nb.record(session.id, "Booked, seat 42")
    return session.id, moment.id


@pytest.mark.parametrize(
    ("which", "garbage"),
    [
        ("moment", ": : :\n  - ["),
        ("session", ": : :\n  - ["),
        ("index", ": : :\n  - ["),
        ("moment", "schema_version: 1\nid: m_2\n"),  # parses, but is not a moment
        ("moment", "- just\n- a list\n"),
        ("moment", "\xff\xfe not utf-8"),
    ],
)
def test_corrupt_yaml_file_is_named_in_the_error(tmp_path: Path, which: str, garbage: str) -> None:
    home = tmp_path / "home"
    sid, mid = _yaml_notebook(home)
    path = {
        "moment": home / "sessions" / sid / "moments" / f"{mid}.yaml",
        "session": home / "sessions" / f"{sid}.yaml",
        "index": home / "index.yaml",
    }[which]
    assert path.is_file()
    if garbage.startswith("\xff"):
        path.write_bytes(garbage.encode("latin-1"))
    else:
        path.write_text(garbage, encoding="utf-8")
    before = _tree(home)
    with pytest.raises(CorruptFile) as info:
        Notebook.open(home, backend="yaml")
    assert str(path) in str(info.value)
    assert info.value.path == str(path)
    assert _tree(home) == before  # opening a broken notebook writes nothing


def test_corrupt_file_seen_by_an_open_notebook_aborts_the_write(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sid, mid = _yaml_notebook(home)
    path = home / "sessions" / sid / "moments" / f"{mid}.yaml"
    with Notebook.open(home, backend="yaml") as nb, Notebook.open(home, backend="yaml") as other:
        path.write_text(": : :\n  - [", encoding="utf-8")
        nb.record(sid, "makes index.yaml change, so the other instance reloads")
        before = _tree(home)
        with pytest.raises(CorruptFile) as info:
            other.record(sid, "must not be written")
        assert str(path) in str(info.value)
        assert _tree(home) == before
