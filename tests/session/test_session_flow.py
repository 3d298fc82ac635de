"""The session notebook's update cycle end to end: should_update → updater → budget → report,
on the notebook's own SQLite store, with the deterministic updater and fake chat models."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from agent_notebook import InvalidInput, Notebook
from agent_notebook.session import SECTION_NAMES
from agent_notebook.session.sections import Sections, parse
from agent_notebook.session.updaters import (
    DeterministicUpdater,
    LlmUpdater,
    UpdateProposal,
)

THREAD = "thread-7"


def conversation() -> list[BaseMessage]:
    call = {"name": "run_tests", "args": {"path": "tests/test_auth.py"}, "id": "c1"}
    return [
        HumanMessage("Fix the failing test in tests/test_auth.py", id="h1"),
        AIMessage("", tool_calls=[call], id="a1"),
        ToolMessage("AssertionError: expected 401", tool_call_id="c1", status="error", id="t1"),
        HumanMessage("actually, use verify_token() from auth/tokens.py", id="h2"),
        AIMessage("", tool_calls=[{**call, "id": "c2"}], id="a2"),
        ToolMessage("5 passed", tool_call_id="c2", id="t2"),
    ]


@pytest.fixture
def nb(tmp_path: Path) -> Notebook:
    notebook = Notebook.open(tmp_path / "home")
    yield notebook
    notebook.close()


def answer(sections: dict[str, str], resolved: Sequence[str] = ()) -> str:
    return json.dumps({**sections, "resolved": list(resolved)})


def test_the_deterministic_cycle_on_the_notebook_store(nb: Notebook) -> None:
    notes = nb.session_notebook(THREAD).sync
    messages = conversation()
    assert notes.should_update(messages[:5]) is False  # 5 messages, 2 tool calls
    assert notes.should_update(messages) is True  # 6 messages
    report = notes.update_from(messages, DeterministicUpdater())
    assert report.updated and report.failure is None
    assert {"Files and Functions", "Errors and Corrections", "Worklog"} <= set(
        report.changed_sections
    )
    assert "tests/test_auth.py" in notes.get_section("Files and Functions")
    assert "resolved" in notes.get_section("Errors and Corrections")
    assert notes.should_update(messages) is False  # the mark moved to the last message
    assert notes.update_from(messages, DeterministicUpdater()).updated is False
    nb.close()
    again = Notebook.open(nb.home)
    assert again.session_notebook(THREAD).sync.should_update(messages) is False
    again.close()


def test_a_malformed_llm_answer_keeps_the_notebook_and_records_the_failure(nb: Notebook) -> None:
    notes = nb.session_notebook(THREAD).sync
    notes.update_section("Current State", "Implementing auth middleware")
    before = notes.load()
    model = FakeListChatModel(responses=["not json at all", '{"Current State": 3}'])
    report = notes.update_from(conversation(), LlmUpdater(model))
    assert not report.updated and report.failure and "attempt 2" in report.failure
    assert notes.load() == before
    [failure] = notes.failures()
    assert failure.updater == "llm" and "attempt 1" in failure.error
    assert notes.should_update(conversation()) is True  # nothing was consumed


def test_a_valid_llm_answer_replaces_the_sections_and_cannot_blank_one(nb: Notebook) -> None:
    notes = nb.session_notebook(THREAD).sync
    notes.update_section("Key Results", "- latency p50 is 1.5 ms")
    new = dict.fromkeys(SECTION_NAMES, "")
    new["Current State"] = "Tests pass after switching to verify_token()"
    new["Worklog"] = "- fixed tests/test_auth.py"
    model = FakeListChatModel(responses=[answer(new)])
    report = asyncio.run(nb.session_notebook(THREAD).update_from(conversation(), LlmUpdater(model)))
    assert report.updated
    assert notes.get_section("Current State") == new["Current State"]
    assert notes.get_section("Worklog") == new["Worklog"]
    assert notes.get_section("Key Results") == "- latency p50 is 1.5 ms"  # blank answer ignored


def test_identifiers_that_vanish_unresolved_are_reported(nb: Notebook) -> None:
    notes = nb.session_notebook(THREAD).sync
    notes.update_section("Files and Functions", "- auth/middleware.py:42\n- EXP-2291")
    kept = dict.fromkeys(SECTION_NAMES, "")
    kept["Files and Functions"] = "- auth/tokens.py"
    dropped = LlmUpdater(FakeListChatModel(responses=[answer(kept)]))
    report = notes.update_from(conversation(), dropped, force=True)
    assert report.vanished_identifiers == ["auth/middleware.py:42", "exp-2291"]
    notes.update_section("Files and Functions", "- auth/middleware.py:42\n- EXP-2291")
    marked = LlmUpdater(
        FakeListChatModel(responses=[answer(kept, ["EXP-2291", "auth/middleware.py:42"])])
    )
    assert notes.update_from(conversation(), marked, force=True).vanished_identifiers == []


def test_a_date_kept_in_words_has_not_vanished(nb: Notebook) -> None:
    notes = nb.session_notebook(THREAD).sync
    notes.update_section("Current State", "- the review moved to 14 June")
    kept = dict.fromkeys(SECTION_NAMES, "")
    kept["Current State"] = "- the review moved to 14 June; Ana agreed"
    report = notes.update_from(
        conversation(), LlmUpdater(FakeListChatModel(responses=[answer(kept)])), force=True
    )
    assert report.updated and report.vanished_identifiers == []


def test_header_lines_in_an_answer_stay_inside_their_section(nb: Notebook) -> None:
    notes = nb.session_notebook(THREAD).sync
    new = dict.fromkeys(SECTION_NAMES, "")
    new["Current State"] = "text\n## Worklog\nstill current state"
    notes.update_from(
        conversation(), LlmUpdater(FakeListChatModel(responses=[answer(new)])), force=True
    )
    assert notes.get_section("Current State") == new["Current State"]
    assert parse(notes.load())["Worklog"] == ""


class _SlowUpdater:
    """An updater during whose run another writer changes a section it leaves alone."""

    name = "slow"

    def __init__(self, during: object) -> None:
        self.during = during

    def propose(self, current: Sections, messages: Sequence[BaseMessage]) -> UpdateProposal:
        self.during()  # type: ignore[operator]
        return UpdateProposal({**current, "Workflow": "- planned: ship it"})

    async def apropose(self, current: Sections, messages: Sequence[BaseMessage]) -> UpdateProposal:
        return self.propose(current, messages)


def test_an_update_section_made_while_an_updater_runs_is_not_lost(nb: Notebook) -> None:
    notes = nb.session_notebook(THREAD).sync
    updater = _SlowUpdater(lambda: notes.update_section("Key Results", "- found the bug"))
    report = notes.update_from(conversation(), updater, force=True)
    assert report.changed_sections == ["Workflow"]
    assert notes.get_section("Workflow") == "- planned: ship it"
    assert notes.get_section("Key Results") == "- found the bug"


def test_an_update_that_overflows_is_condensed_into_moments(nb: Notebook) -> None:
    notes = nb.session_notebook(THREAD).sync
    huge = "\n".join(f"- step {i}: touched src/module_{i}.py" for i in range(400))
    new = dict.fromkeys(SECTION_NAMES, "")
    new["Worklog"] = huge
    report = notes.update_from(
        conversation(), LlmUpdater(FakeListChatModel(responses=[answer(new)])), force=True
    )
    assert list(report.condensed) == ["Worklog"]
    reference = report.condensed["Worklog"]
    assert notes.get_section("Worklog").endswith(f"[condensed: earlier text moved to {reference}]")
    assert notes.estimate_tokens(notes.get_section("Worklog")) <= 500
    kept = notes.get_section("Worklog").rsplit("\n", 1)[0]
    assert notes.fetch_cut(reference) + kept == huge
    assert report.vanished_identifiers == []  # condensed text is not vanished


def test_budgets_come_from_config_yaml(tmp_path: Path) -> None:
    home = tmp_path / "configured"
    home.mkdir()
    (home / "config.yaml").write_text(
        "session_notebook:\n  message_threshold: 2\n  max_section_tokens: 64\n", encoding="utf-8"
    )
    with Notebook.open(home) as nb:
        notes = nb.session_notebook(THREAD).sync
        assert notes.budgets.message_threshold == 2 and notes.budgets.tool_call_threshold == 4
        assert notes.should_update(conversation()[:2]) is True
        notes.update_section("Worklog", "x" * 1000)
        assert notes.enforce_budget() and notes.estimate_tokens(notes.get_section("Worklog")) <= 64
    (home / "config.yaml").write_text(
        "session_notebook:\n  max_total_tokens: 10\n", encoding="utf-8"
    )
    with pytest.raises(InvalidInput, match="max_total_tokens"):
        Notebook.open(home)
