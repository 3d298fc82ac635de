"""Redact and forget (issue 8): the text leaves every file under the notebook's home.

A real notebook on each persistent backend, chat turns through the real chat graph (a fake
model), compaction into rollups and the cold archive, vectors; then a byte search of every
file (gzip archives raw and decompressed) after the notebook is closed.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage

from agent_notebook import Notebook
from agent_notebook import config as cfg
from agent_notebook.chat import build_chat_graph
from agent_notebook.core.lexical import stem
from agent_notebook.errors import InvalidId, InvalidInput, NotFound
from agent_notebook.storage import MemoryBackend
from tests.support import pg
from tests.support.clirun import text_cli

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
BIN = Path(sys.executable).parent
THREAD = {"configurable": {"thread_id": "t-1"}}

# Words that appear nowhere else: each names what must be gone, or must stay.
ARCHIVED_SECRET = "zebraquartz"  # an old moment, compacted and archived, then redacted
CHAT_SECRET = "plumcrystal"  # a chat message, then redacted
CONCEPT = "marmalade"  # in old moments and in the chat, then forgotten
KEPT = ("sunflowerkite", "Bellecour")  # must survive


def all_bytes(home: Path) -> dict[str, bytes]:
    """Every file under ``home``; archives also decompressed."""
    found: dict[str, bytes] = {}
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found[str(path)] = data
            if path.name.endswith(".gz"):
                found[f"{path} (decompressed)"] = gzip.decompress(data)
    return found


def holders(home: Path, word: str) -> list[str]:
    needles = {w.encode() for w in (word, word.lower(), word.upper(), word.capitalize())}
    needles.add(stem(word.lower()).encode())
    return sorted(name for name, data in all_bytes(home).items() if any(n in data for n in needles))


def build(home: Path, backend: str) -> dict[str, str]:
    """A notebook holding the words everywhere; returns ids of the moments to redact."""
    home.mkdir()
    cfg.write_config(
        home,
        cfg.NotebookConfig(
            backend=backend,
            session_notebook=cfg.SessionBudgets(message_threshold=2),
        ),
    )
    ids: dict[str, str] = {}
    with Notebook.open(home) as nb:
        for day in range(0, 40, 3):  # old days: rollups, then the archive
            when = T0 + timedelta(days=day)
            session = nb.start_session(f"day {day}", started=when)
            texts = [
                f"Ana booked seat {day} on the TGV to Lyon and the hotel Bellecour.",
                f"Ana tasted the {CONCEPT} from the market stall on day {day} of the trip.",
            ]
            if day == 6:
                texts.append(
                    f"The {ARCHIVED_SECRET} vault code is under the blue lamp near the door."
                )
            recorded = nb.record_many(
                session.id,
                [
                    {
                        "text": t,
                        "speaker": "Ana",
                        "timestamp": when + timedelta(minutes=i),
                        "importance": 0.25,
                    }
                    for i, t in enumerate(texts)
                ],
            )
            if day == 6:
                ids["archived"] = recorded[-1].id
        nb.compact(now=T0 + timedelta(days=130))
        assert nb.backend.get_archived([ids["archived"]])  # it went to the archive

        settings = nb.config.chat.model_copy(
            update={"live_budget_tokens": 300, "condensed_history_tokens": 200}
        )
        graph = build_chat_graph(
            nb, model=FakeListChatModel(responses=["Noted and filed."] * 50), settings=settings
        )
        chat = [
            f"Remember that the {CHAT_SECRET} alarm code is hidden inside the old piano bench.",
            f"My grandmother's {CONCEPT} recipe uses bitter oranges and a spoon of brandy.",
            "The sunflowerkite festival is on Saturday at the harbour, bring a scarf.",
        ]
        filler = [f"Filler question {i} about the weather and the garden plans." for i in range(8)]
        for text in [*chat, *filler]:
            graph.invoke({"messages": [HumanMessage(text)]}, THREAD)
        nb.drain()
        session_id = nb.thread_session("t-1")
        moment = next(m for m in nb.moments(session_id) if CHAT_SECRET in m.content.text)
        ids["chat"] = moment.id
        condensed = nb.get_session(session_id).context.condensed_history
        assert CHAT_SECRET in condensed  # compacted into the condensed history
        assert CHAT_SECRET in nb.session_notebook("t-1").sync.load()
        if nb.semantic is not None:
            nb.reindex()
    return ids


@pytest.fixture(params=["sqlite", "yaml"])
def built(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    return home, build(home, str(request.param))


def test_redact_and_forget_leave_no_byte_behind(built: tuple[Path, dict[str, str]]) -> None:
    home, ids = built
    for word in (ARCHIVED_SECRET, CHAT_SECRET, CONCEPT, *KEPT):
        assert holders(home, word), f"{word} should be in the notebook before"
    archive_files = [n for n in all_bytes(home) if n.endswith("(decompressed)")]
    assert any(ARCHIVED_SECRET.encode() in all_bytes(home)[n] for n in archive_files)

    with Notebook.open(home) as nb:
        redacted = nb.redact(ids["chat"], "an alarm code")
        assert redacted.redacted is not None and redacted.content.text == ""
        archived = nb.redact(ids["archived"], "a vault code")
        assert archived.redacted is not None and archived.content.text == ""
        assert nb.archived_moment(ids["archived"]).redacted is not None
        report = nb.forget(CONCEPT, "family privacy")
        assert not report.dry_run and report.concept == CONCEPT
        assert len(report.moments) >= 5 and report.rollups
        assert any(s.startswith("t-1/") for s in report.sections)

    for word in (ARCHIVED_SECRET, CHAT_SECRET, CONCEPT):
        assert holders(home, word) == [], f"{word} is still in these files"
    for word in KEPT:
        assert holders(home, word), f"{word} should have stayed"

    with Notebook.open(home) as nb:
        for word in (ARCHIVED_SECRET, CHAT_SECRET, CONCEPT):
            hits = nb.search(word, include_archive=True, limit=50)  # by meaning: neighbours
            assert all(word not in h.moment.content.text.casefold() for h in hits)
            assert not {h.moment.id for h in hits} & {ids["chat"], ids["archived"]}
            assert nb.search(word, mode="lexical") == []
        with pytest.raises(NotFound):
            nb.concept(CONCEPT)
        assert nb.search("sunflowerkite")
        session = nb.get_session(nb.get_moment(ids["chat"]).session)
        audit = [d for d in session.decisions if d.what.startswith("redacted")]
        assert any(d.what == f"redacted {ids['chat']}" for d in audit)
        assert all(d.why == "an alarm code" for d in audit if ids["chat"] in d.what)
        copy = MemoryBackend()
        nb.export_to(copy)
        exported = copy.get_moment(ids["chat"])
        assert exported is not None and exported.redacted is not None
        assert exported.content.text == ""


def test_a_dry_run_lists_and_changes_nothing(built: tuple[Path, dict[str, str]]) -> None:
    home, _ = built

    def digests() -> dict[str, str]:
        return {
            name: hashlib.sha256(data).hexdigest()
            for name, data in all_bytes(home).items()
            if not name.endswith("-shm") and not name.endswith(".lock")
        }

    before = digests()
    with Notebook.open(home) as nb:
        report = nb.forget(CONCEPT.upper(), dry_run=True)
        assert report.dry_run and report.concept == CONCEPT
        assert len(report.moments) >= 5 and report.rollups and report.sections
        assert nb.concept(CONCEPT).moments
    assert digests() == before


def test_bad_input_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Notebook.open(home) as nb:
        session = nb.start_session("t")
        nb.record(session.id, f"The {CONCEPT} jar is on the shelf by the window.")
        with pytest.raises(NotFound, match="m_99"):
            nb.redact("m_99", "why")
        with pytest.raises(InvalidId):
            nb.redact("99", "why")
        with pytest.raises(InvalidInput, match="no words"):
            nb.forget("  ")
        with pytest.raises(InvalidInput, match="reason"):  # every front end: a tombstone says why
            nb.redact("m_1", "  ")
        assert nb.search(CONCEPT)
        assert nb.get_session(session.id).decisions == []


def run(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return text_cli(home, *args, stdin=stdin, env={cfg.EMBEDDER_ENV: "none"})


def test_the_commands(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run(home, "init").returncode == 0
    drafts: list[dict[str, Any]] = [
        {"text": f"The {CHAT_SECRET} code is under the mat by the front door."},
        {"text": f"Buy {CONCEPT} and bread for the weekend breakfast."},
        {"text": "The sunflowerkite festival is on Saturday."},
    ]
    recorded = run(home, "record", "--task", "cli", "-f", "json", stdin=json.dumps(drafts))
    assert recorded.returncode == 0, recorded.stderr
    first = json.loads(recorded.stdout)[0]["id"]

    bad = run(home, "redact", "m_999", "--reason", "x")
    assert bad.returncode == 1 and "m_999" in bad.stderr
    assert run(home, "forget", " ").returncode == 1

    done = run(home, "redact", first, "--reason", "a door code", "-f", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["redacted"]["why"] == "a door code"

    dry = run(home, "forget", CONCEPT, "--dry-run", "--format", "json")
    assert dry.returncode == 0, dry.stderr
    listed = json.loads(dry.stdout)
    assert listed["dry_run"] and len(listed["moments"]) == 1
    gone = run(home, "forget", CONCEPT, "--reason", "not needed", "-f", "json")
    assert gone.returncode == 0 and json.loads(gone.stdout)["moments"] == listed["moments"]
    for word in (CHAT_SECRET, CONCEPT):
        assert holders(home, word) == [], word
    assert holders(home, "sunflowerkite")


@pytest.mark.parametrize("backend", ["sqlite", "yaml", "postgresql"])
def test_forgetting_a_phrase_that_matches_structure_keeps_the_structure(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forgotten phrase that also appears in ids, times, statuses or LangGraph's own
    bookkeeping ("00" in every timestamp, "active" as a status, "loop" as a checkpoint's
    source, "1" in its versions) rewrites only free text: every session, session notebook
    and thread still loads and goes on."""
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
    home = tmp_path / "home"
    home.mkdir()
    url = pg.url_with_schema(tmp_path) if backend == "postgresql" else backend
    cfg.write_config(
        home,
        cfg.NotebookConfig(backend=url, session_notebook=cfg.SessionBudgets(message_threshold=2)),
    )
    with Notebook.open(home) as nb:
        session = nb.start_session("plan the 00 drill", started=T0)
        nb.record(session.id, "The drill starts at 00 sharp, the loop road is closed.")
        graph = build_chat_graph(nb, model=FakeListChatModel(responses=["Noted."] * 20))
        for text in ("The active loop alarm rings at 00 hours.", "Bring 1 torch.", "Thanks."):
            graph.invoke({"messages": [HumanMessage(text)]}, THREAD)
        nb.drain()
        before = {s.id: s for s in nb.backend.list_sessions()}
        history = len(list(graph.get_state_history(THREAD)))
        thread_session = nb.thread_session("t-1")
        pointer = graph.get_state(THREAD).values["recorded_through"]  # a message's id
        segment = pointer.split("-")[-2]  # hex digits between two hyphens
        for phrase in ("00", "active", "loop", "1", "input", "t-1", "01", "2026", segment):
            nb.forget(phrase, "structure test")

        after = {s.id: s for s in nb.backend.list_sessions()}
        assert after.keys() == before.keys()
        for sid, old in before.items():
            new = after[sid]
            assert (new.started, new.task_status, new.context.recent_moments) == (
                old.started,
                old.task_status,
                old.context.recent_moments,
            )
        assert "00" not in after[session.id].task  # free text is scrubbed
        assert len(list(graph.get_state_history(THREAD))) == history
        assert nb.thread_session("t-1") == thread_session
        assert graph.get_state(THREAD).values["recorded_through"] == pointer
        state = graph.invoke({"messages": [HumanMessage("Still there?")]}, THREAD)
        assert state["messages"][-1].content == "Noted."
        nb.session_notebook("t-1").sync.load()  # raises if its stored times were rewritten


def test_forget_words_only_keeps_the_rest_of_each_moment_and_previews_the_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``forget --words-only`` redacts the concept's words within the moments (the meeting's
    date stays); the default redacts whole moments. A dry run shows each moment's text as
    it is (whole) or as it would be left (words only) and changes nothing."""
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
    with Notebook.open(tmp_path / "home") as nb:
        s = nb.start_session("planning", started=T0).id
        meeting = nb.record(s, "The sprint review is in the Fjord room on Tuesday at 10.")
        other = nb.record(s, "Lunch is at noon.")
        before = nb.get_moment(meeting.id)

        preview = nb.forget("fjord", dry_run=True, words_only=True)
        assert preview.moments == [meeting.id] and preview.words_only
        left = "The sprint review is in the [redacted] room on Tuesday at 10."
        assert preview.texts == {meeting.id: left}
        assert nb.get_moment(meeting.id) == before  # a dry run changes nothing
        whole = nb.forget("fjord", dry_run=True)
        assert whole.texts == {meeting.id: before.content.text} and not whole.words_only

        nb.forget("fjord", "not needed", words_only=True)
        kept = nb.get_moment(meeting.id)
        assert kept.content.text == left and kept.redacted is None
        assert "fjord" not in kept.metadata.concepts
        assert [h.moment.id for h in nb.search("Tuesday review", mode="lexical")] == [meeting.id]
        assert nb.search("fjord", mode="lexical", min_score=0) == []
        assert nb.get_moment(other.id).content.text == "Lunch is at noon."


def test_redact_moments_redacts_several_in_one_pass_with_an_audit_entry_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
    with Notebook.open(tmp_path / "home") as nb:
        s = nb.start_session("docs", started=T0).id
        first, second, kept = (nb.record(s, f"Document {n} about zebras") for n in "ABC")
        nb.redact_moments([first.id, second.id], "replaced", who="tester")
        for gone in (first, second):
            moment = nb.get_moment(gone.id)
            assert moment.redacted is not None and moment.redacted.who == "tester"
            assert moment.content.text == ""
        assert nb.get_moment(kept.id).content.text == "Document C about zebras"
        assert [h.moment.id for h in nb.search("zebras", mode="lexical")] == [kept.id]
        log = [d.what for d in nb.get_session(s).decisions]
        assert sum(f"redacted {m.id}" in w for m in (first, second) for w in log) == 2
        with pytest.raises(InvalidInput):
            nb.redact_moments([kept.id], "  ")  # a reason is required; nothing changes
        assert nb.get_moment(kept.id).redacted is None
