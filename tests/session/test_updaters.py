"""Session-notebook updaters: the rules of the deterministic one on a scripted coding session,
and the LLM one with fake chat models (JSON in text, structured output, retries, failures)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from agent_notebook.errors import InvalidInput
from agent_notebook.session.sections import SECTION_NAMES, Sections, empty_sections, parse, render
from agent_notebook.session.updaters import (
    DeterministicUpdater,
    LlmUpdater,
    NotebookUpdater,
    UpdateFailed,
    UpdateProposal,
    as_messages,
)
from agent_notebook.session.updaters.llm import FIELDS, NotebookAnswer, build_prompt, parse_answer

CLOCK = datetime(2024, 5, 2, 9, 30, tzinfo=UTC)


def at(minute: int) -> dict[str, str]:
    return {"timestamp": f"2024-05-01T10:{minute:02d}:00Z"}


def call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def coding_session() -> list[BaseMessage]:
    """User asks for a fix, the agent reads, a test run fails, the user corrects, it passes."""
    messages: list[BaseMessage] = [
        SystemMessage("You are a careful coding agent."),
        HumanMessage("Please fix the failing test in tests/test_auth.py"),
        AIMessage(
            "Let me read the middleware first.",
            tool_calls=[{"name": "read_file", "args": {"path": "auth/middleware.py"}, "id": "c1"}],
        ),
        ToolMessage(
            "def check(request):\n    return request.headers.get('token')\n", tool_call_id="c1"
        ),
        AIMessage(
            "The middleware never checks the signature. I will run the tests.",
            tool_calls=[
                {"name": "run_tests", "args": {"target": "tests/test_auth.py"}, "id": "c2"}
            ],
        ),
        ToolMessage(
            'Traceback (most recent call last):\n  File "tests/test_auth.py", line 12, in test_reject\n'
            "    assert response.status == 401\nAssertionError: expected 401",
            tool_call_id="c2",
            status="error",
        ),
        HumanMessage("actually, use verify_token() from auth/tokens.py"),
        call(
            "edit_file", "c3", path="auth/middleware.py", content="from auth.tokens import x\n" * 9
        ),
        ToolMessage("ok", tool_call_id="c3"),
        call("run_tests", "c4", target="tests/test_auth.py"),
        ToolMessage("================ 5 passed in 0.12s ================", tool_call_id="c4"),
        AIMessage("Fixed: the middleware now uses verify_token() and all 5 tests passed."),
    ]
    for minute, message in enumerate(messages[1:]):
        message.response_metadata.update(at(minute))
    return messages


def updater() -> DeterministicUpdater:
    return DeterministicUpdater(now=lambda: CLOCK)


def bullets(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ")]


@pytest.fixture
def notebook() -> Sections:
    return updater().propose(empty_sections(), coding_session()).sections


# --- DeterministicUpdater -------------------------------------------------------------------


def test_both_updaters_follow_the_protocol() -> None:
    assert isinstance(updater(), NotebookUpdater) and updater().name == "deterministic"
    llm = LlmUpdater(FakeListChatModel(responses=["{}"]))
    assert isinstance(llm, NotebookUpdater) and llm.name == "llm"


def test_touched_files_and_functions_are_listed_once(notebook: Sections) -> None:
    files = bullets(notebook["Files and Functions"])
    for item in ["tests/test_auth.py", "auth/middleware.py", "auth/tokens.py", "verify_token()"]:
        assert f"- {item}" in files, (item, files)
    assert "- tests/test_auth.py:12" in files  # the traceback's location
    assert len(files) == len(set(files))
    assert not any("headers" in line or line[2:] == "x" for line in files)  # not from outputs


def test_the_error_and_its_fix_are_recorded(notebook: Sections) -> None:
    errors = bullets(notebook["Errors and Corrections"])
    assert errors[0] == (
        "- error: run_tests: AssertionError: expected 401 → resolved: run_tests ok: 5 passed in 0.12s"
    )
    assert errors[1].startswith("- correction: actually, use verify_token() from auth/tokens.py")
    assert "→ resolved:" in errors[1] and len(errors) == 2


def test_the_correction_joins_the_task_specification(notebook: Sections) -> None:
    assert bullets(notebook["Task Specification"]) == [
        "- ask: Please fix the failing test in tests/test_auth.py",
        "- correction: actually, use verify_token() from auth/tokens.py",
    ]


def test_worklog_has_one_dated_entry_per_message_oldest_first(notebook: Sections) -> None:
    log = bullets(notebook["Worklog"])
    assert len(log) == len(coding_session()) - 1  # the system prompt is not activity
    stamps = [line[2:18] for line in log]
    assert stamps == sorted(stamps) and stamps[0] == "2024-05-01 10:00"
    assert log[0] == "- 2024-05-01 10:00 user: Please fix the failing test in tests/test_auth.py"
    assert "assistant: Let me read the middleware first. [called read_file(path=" in log[1]
    assert log[4] == "- 2024-05-01 10:04 tool: run_tests failed: AssertionError: expected 401"


def test_workflow_lists_steps_with_outcomes_and_plans(notebook: Sections) -> None:
    flow = bullets(notebook["Workflow"])
    assert "- done: read_file(path=auth/middleware.py) → ok" in flow
    assert flow.count("- done: run_tests(target=tests/test_auth.py) → failed") == 1
    assert flow.count("- done: run_tests(target=tests/test_auth.py) → ok") == 1
    assert "- planned: I will run the tests." in flow
    assert flow.index("- planned: Let me read the middleware first.") < flow.index(
        "- done: read_file(path=auth/middleware.py) → ok"
    )


def test_key_results_keep_findings_and_tool_outputs(notebook: Sections) -> None:
    results = bullets(notebook["Key Results"])
    assert "- run_tests: 5 passed in 0.12s" in results
    assert "- Fixed: the middleware now uses verify_token() and all 5 tests passed." in results
    assert not any(line.endswith(": ok") for line in results)  # bare acknowledgements skipped


def test_current_state_is_the_latest_request_and_its_outcome(notebook: Sections) -> None:
    assert notebook["Current State"].splitlines() == [
        "Request: actually, use verify_token() from auth/tokens.py",
        "Answer: Fixed: the middleware now uses verify_token() and all 5 tests passed.",
        "Last step: run_tests ok: 5 passed in 0.12s",
    ]
    later = [HumanMessage("Now add a test for expired tokens"), call("run_tests", "c9")]
    later.append(ToolMessage("Error: 1 failed", tool_call_id="c9", status="error"))
    state = updater().propose(notebook, later).sections["Current State"]
    assert (
        state
        == "Request: Now add a test for expired tokens\nLast step: run_tests failed: Error: 1 failed"
    )


def test_no_new_messages_changes_nothing(notebook: Sections) -> None:
    assert updater().propose(notebook, []).sections == notebook
    assert updater().propose(notebook, [SystemMessage("be brief")]).sections == notebook


def test_sections_are_never_blanked_and_old_text_is_kept(notebook: Sections) -> None:
    new = updater().propose(notebook, [AIMessage("Thinking.")]).sections
    for name in SECTION_NAMES:
        assert new[name].strip(), name
        if name != "Current State":
            assert new[name].startswith(notebook[name]), name
    assert new["Current State"].startswith("Request: actually, use verify_token()")


def test_same_input_same_output() -> None:
    first = updater().propose(empty_sections(), coding_session())
    assert updater().propose(empty_sections(), coding_session()) == first
    assert asyncio.run(updater().apropose(empty_sections(), coding_session())) == first


def test_the_same_messages_again_add_no_duplicate_facts(notebook: Sections) -> None:
    again = updater().propose(notebook, coding_session()).sections
    for name in [
        "Task Specification",
        "Files and Functions",
        "Key Results",
        "Errors and Corrections",
    ]:
        assert again[name] == notebook[name], name


def test_an_unresolved_error_is_resolved_by_a_later_batch() -> None:
    failing = [
        call("run_tests", "a"),
        ToolMessage("FAILED test_x - ValueError: bad id", tool_call_id="a"),
    ]
    first = updater().propose(empty_sections(), failing).sections
    assert bullets(first["Errors and Corrections"]) == [
        "- error: run_tests: FAILED test_x - ValueError: bad id → unresolved"
    ]
    passing = [call("run_tests", "b"), ToolMessage("3 passed", tool_call_id="b")]
    second = updater().propose(first, passing).sections
    assert bullets(second["Errors and Corrections"]) == [
        "- error: run_tests: FAILED test_x - ValueError: bad id → resolved: run_tests ok: 3 passed"
    ]


def test_an_assistant_saying_fixed_resolves_an_error() -> None:
    messages = [
        call("deploy", "d1"),
        ToolMessage("Error: permission denied for /srv/app", tool_call_id="d1"),
        AIMessage("I changed the owner. The permission problem is resolved now."),
    ]
    errors = updater().propose(empty_sections(), messages).sections["Errors and Corrections"]
    assert errors == (
        "- error: deploy: Error: permission denied for /srv/app"
        " → resolved: The permission problem is resolved now."
    )


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("no, use the staging database", "correction"),
        ("Actually the limit is 50", "correction"),
        ("Instead, write it in Go", "correction"),
        ("wait — keep the old API", "correction"),
        ("not the login test, the logout one", "correction"),
        ("Please add tests for the parser", "ask"),
        ("Nothing else for now", "ask"),
    ],
)
def test_corrections_are_told_from_asks(text: str, kind: str) -> None:
    task = updater().propose(empty_sections(), [HumanMessage(text)]).sections["Task Specification"]
    assert task == f"- {kind}: {text}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see ./run.sh and ~/notes/todo.md", ["./run.sh", "~/notes/todo.md"]),
        ("the bug is at auth/middleware.py:42", ["auth/middleware.py:42"]),
        ("call os.path.join then SessionStore.load", ["os.path.join", "SessionStore.load"]),
        ("edit config.yaml and run parse_args()", ["config.yaml", "parse_args()"]),
        ("check the user_id field", ["user_id"]),
        ("e.g. ask and/or wait, see https://example.com/a/b.py", []),
    ],
)
def test_code_locations_are_found_in_text(text: str, expected: list[str]) -> None:
    files = updater().propose(empty_sections(), [HumanMessage(text)]).sections
    assert bullets(files["Files and Functions"]) == [f"- {item}" for item in expected]


def test_known_items_are_not_listed_again() -> None:
    old = {**empty_sections(), "Files and Functions": "- auth/middleware.py:42 (the JWT check)"}
    new = updater().propose(old, [HumanMessage("look at auth/middleware.py and auth/tokens.py")])
    assert new.sections["Files and Functions"] == old["Files and Functions"] + "\n- auth/tokens.py"


def test_each_section_gains_at_most_max_bullets_per_call() -> None:
    paths = " ".join(f"pkg/module_{n}.py" for n in range(30))
    new = DeterministicUpdater(now=lambda: CLOCK, max_bullets=5).propose(
        empty_sections(), [HumanMessage(paths)]
    )
    files = new.sections["Files and Functions"].splitlines()
    assert files == [f"- pkg/module_{n}.py" for n in range(5)] + ["- … 25 more not listed"]


def test_timestamps_come_from_metadata_or_the_clock() -> None:
    messages = [
        HumanMessage("a", response_metadata={"timestamp": "2024-01-02T03:04:05+02:00"}),
        HumanMessage("b", additional_kwargs={"timestamp": 1_700_000_000}),
        HumanMessage("c", additional_kwargs={"timestamp": "not a date"}),
        HumanMessage("d"),
    ]
    log = updater().propose(empty_sections(), messages).sections["Worklog"].splitlines()
    assert log == [
        "- 2024-01-02 01:04 user: a",
        "- 2023-11-14 22:13 user: b",
        "- 2024-05-02 09:30 user: c",
        "- 2024-05-02 09:30 user: d",
    ]


def test_openai_style_dicts_work_through_as_messages() -> None:
    messages = as_messages(
        [
            {"role": "user", "content": "rename utils/io.py"},
            {"role": "assistant", "content": "Done."},
        ]
    )
    sections = updater().propose(empty_sections(), messages).sections
    assert "- utils/io.py" in sections["Files and Functions"]
    assert sections["Current State"] == "Request: rename utils/io.py\nAnswer: Done."


def test_the_proposal_renders_and_parses_back(notebook: Sections) -> None:
    assert parse(render(notebook)) == notebook


# --- LlmUpdater -------------------------------------------------------------------------------

OLD: Sections = {
    **empty_sections(),
    "Current State": "Fixing tests/test_auth.py",
    "Files and Functions": "- auth/middleware.py:42",
    "Worklog": "- 2024-05-01 10:00 user: fix the test",
}
NEW_MESSAGES: list[BaseMessage] = [
    HumanMessage("use verify_token() from auth/tokens.py"),
    call("edit_file", "e1", path="auth/middleware.py"),
    ToolMessage("Error: file is read-only", tool_call_id="e1", status="error"),
]


def answer(**changes: Any) -> dict[str, Any]:
    sections = {name: f"{name} after the update" for name in SECTION_NAMES}
    return {**sections, "resolved": [], **changes}


def text(value: dict[str, Any]) -> str:
    return json.dumps(value)


class ScriptedModel(BaseChatModel):
    """A chat model without tool calling that answers from a script and records its prompts."""

    script: list[Any]
    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append(list(messages))
        reply = self.script.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])


class StructuredModel(ScriptedModel):
    """A model with structured output: the script holds what the structured runnable returns."""

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[Any, Any]:
        assert schema is NotebookAnswer and not include_raw

        def reply(prompt: Sequence[BaseMessage]) -> Any:
            self.prompts.append(list(prompt))
            item = self.script.pop(0)
            if isinstance(item, Exception):
                raise item
            return item

        return RunnableLambda(reply)


def test_a_valid_json_answer_replaces_the_sections() -> None:
    model = FakeListChatModel(responses=[text(answer(resolved=["auth/middleware.py:42"]))])
    proposal = LlmUpdater(model).propose(OLD, NEW_MESSAGES)
    assert proposal == UpdateProposal(
        {name: f"{name} after the update" for name in SECTION_NAMES}, ["auth/middleware.py:42"]
    )


def test_fenced_json_and_think_blocks_are_read() -> None:
    wrapped = (
        "<think>The notebook needs {braces} and care.</think>\nHere it is:\n```json\n"
        + text(answer(resolved=["a", " a ", ""]))
        + "\n```\nHope that helps {really}."
    )
    proposal = LlmUpdater(FakeListChatModel(responses=[wrapped])).propose(OLD, NEW_MESSAGES)
    assert proposal.sections["Worklog"] == "Worklog after the update" and proposal.resolved == ["a"]


def test_a_malformed_answer_is_retried_with_what_was_wrong() -> None:
    model = ScriptedModel(script=["Sure! The notebook is fine.", text(answer())])
    proposal = LlmUpdater(model).propose(OLD, NEW_MESSAGES)
    assert proposal.sections["Key Results"] == "Key Results after the update"
    assert len(model.prompts) == 2 and model.prompts[1][:2] == model.prompts[0]
    note = str(model.prompts[1][-1].content)
    assert "no JSON object" in note and "Sure! The notebook" in note


def test_fake_list_model_succeeds_on_its_second_response() -> None:
    model = FakeListChatModel(responses=['{"Current State": ', text(answer())])
    assert (
        LlmUpdater(model).propose(OLD, NEW_MESSAGES).sections["Workflow"]
        == "Workflow after the update"
    )


def test_two_malformed_answers_raise_update_failed_naming_both() -> None:
    missing = {"Current State": "x", "resolved": []}
    model = FakeListChatModel(responses=["{not json}", text(missing)])
    with pytest.raises(UpdateFailed) as failure:
        LlmUpdater(model).propose(OLD, NEW_MESSAGES)
    message = str(failure.value)
    assert "2 attempt(s)" in message and "attempt 1: invalid JSON" in message
    assert "attempt 2: missing sections: Task Specification, Files and Functions" in message
    assert "Worklog" in message


def test_max_retries_zero_fails_on_the_first_bad_answer() -> None:
    model = ScriptedModel(script=["[1, 2]", text(answer())])
    with pytest.raises(UpdateFailed, match=r"1 attempt\(s\).*no JSON object"):
        LlmUpdater(model, max_retries=0).propose(OLD, NEW_MESSAGES)
    assert len(model.prompts) == 1
    with pytest.raises(InvalidInput, match="max_retries"):
        LlmUpdater(model, max_retries=-1)


def test_a_model_error_is_retried_then_reported() -> None:
    model = ScriptedModel(script=[TimeoutError("slow"), text(answer())])
    assert (
        LlmUpdater(model).propose(OLD, NEW_MESSAGES).sections["Worklog"]
        == "Worklog after the update"
    )
    assert model.prompts[0] == model.prompts[1]  # a failed call is asked again as it was
    failing = ScriptedModel(script=[TimeoutError("slow"), ConnectionError("down")])
    with pytest.raises(UpdateFailed, match=r"TimeoutError: slow.*ConnectionError: down"):
        LlmUpdater(failing).propose(OLD, NEW_MESSAGES)


def test_an_answer_that_blanks_a_section_keeps_the_old_text() -> None:
    blanking = answer(**{"Files and Functions": "  \n", "Worklog": None, "Workflow": ""})
    proposal = LlmUpdater(FakeListChatModel(responses=[text(blanking)])).propose(OLD, NEW_MESSAGES)
    assert proposal.sections["Files and Functions"] == "- auth/middleware.py:42"
    assert proposal.sections["Worklog"] == OLD["Worklog"]
    assert proposal.sections["Workflow"] == ""  # empty before, empty now: nothing was lost
    assert proposal.sections["Current State"] == "Current State after the update"


def test_echoed_headers_and_bullet_lists_are_tidied() -> None:
    tidy = answer(**{"Key Results": "## Key Results\n_Important outputs or findings_\n- 5 passed"})
    tidy["Workflow"] = ["- read auth/middleware.py", "- edited it"]
    proposal = LlmUpdater(FakeListChatModel(responses=[text(tidy)])).propose(OLD, NEW_MESSAGES)
    assert proposal.sections["Key Results"] == "- 5 passed"
    assert proposal.sections["Workflow"] == "- read auth/middleware.py\n- edited it"


def test_apropose_uses_the_async_path() -> None:
    model = ScriptedModel(script=["oops", text(answer(resolved=["x"]))])
    proposal = asyncio.run(LlmUpdater(model).apropose(OLD, NEW_MESSAGES))
    assert proposal.resolved == ["x"] and len(model.prompts) == 2
    with pytest.raises(UpdateFailed):
        asyncio.run(
            LlmUpdater(FakeListChatModel(responses=["no", "no"])).apropose(OLD, NEW_MESSAGES)
        )


def test_structured_output_is_used_when_the_model_has_it() -> None:
    instance = NotebookAnswer.model_validate(answer(resolved=["auth/middleware.py:42"]))
    model = StructuredModel(script=[None, instance])
    updater = LlmUpdater(model)
    assert not updater.json_mode
    proposal = updater.propose(OLD, NEW_MESSAGES)
    assert proposal.sections["Current State"] == "Current State after the update"
    assert proposal.resolved == ["auth/middleware.py:42"]
    assert "JSON object" not in str(model.prompts[0][-1].content)  # the schema says it
    assert "got NoneType" in str(model.prompts[1][-1].content)


def test_structured_output_dicts_are_validated() -> None:
    snake = {name.lower().replace(" ", "_"): "s" for name in SECTION_NAMES}
    proposal = LlmUpdater(StructuredModel(script=[snake])).propose(OLD, NEW_MESSAGES)
    assert set(proposal.sections.values()) == {"s"} and proposal.resolved == []
    with pytest.raises(UpdateFailed, match="missing sections: Worklog"):
        bad = {k: v for k, v in snake.items() if k != "worklog"}
        LlmUpdater(StructuredModel(script=[bad, bad])).propose(OLD, NEW_MESSAGES)


def test_the_schema_suits_tool_calling_apis() -> None:
    tool = convert_to_openai_tool(NotebookAnswer)
    keys = tool["function"]["parameters"]["properties"]
    assert all(re.fullmatch(r"[a-zA-Z0-9_.-]{1,64}", key) for key in keys)
    assert len(keys) == 8 and "resolved" in keys
    assert set(NotebookAnswer.model_fields) == {*FIELDS.values(), "resolved"}
    assert set(tool["function"]["parameters"]["required"]) == set(keys) - {"resolved"}


def test_no_new_messages_asks_no_model() -> None:
    model = ScriptedModel(script=[])
    assert LlmUpdater(model).propose(OLD, []).sections == OLD
    assert asyncio.run(LlmUpdater(model).apropose(OLD, [])).sections == OLD
    assert model.prompts == []


def test_the_prompt_carries_the_notebook_the_messages_and_the_rules() -> None:
    system, request = build_prompt(OLD, NEW_MESSAGES, json_mode=True)
    rules, body = str(system.content), str(request.content)
    assert "verbatim" in rules and '"resolved"' in rules
    assert render(OLD) in body
    assert "user: use verify_token() from auth/tokens.py" in body
    assert '[tool call edit_file (call e1): {"path": "auth/middleware.py"}]' in body
    assert "tool edit_file (error, call e1): Error: file is read-only" in body
    assert '"Errors and Corrections": "..."' in body  # the JSON shape, in JSON mode only
    assert '"Errors and Corrections"' not in str(build_prompt(OLD, [], json_mode=False)[1].content)


def test_parse_answer_reports_what_was_wrong() -> None:
    with pytest.raises(ValueError, match="no JSON object"):
        parse_answer("I cannot do that.")
    with pytest.raises(ValueError, match="Current State: Input should be a valid string"):
        parse_answer(text(answer(**{"Current State": {"nested": 1}})))
    assert parse_answer(AIMessage(text(answer()))).worklog == "Worklog after the update"
