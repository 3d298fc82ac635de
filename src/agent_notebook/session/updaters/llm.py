"""The updater that asks a chat model: any LangChain chat model rewrites the seven sections.

The model reads the old notebook (rendered as Markdown) and the new messages (``role: text``
lines, tool calls included) and answers with every section's new text plus ``resolved``, the
identifiers it dropped on purpose. Models with tool calling answer through
``with_structured_output(NotebookAnswer)``; the others (``with_structured_output`` raises
``NotImplementedError``) are asked for a JSON object, read from the answer's text once
``<think>…</think>`` blocks and Markdown fences are stripped.

An answer that cannot be used (a model error, invalid JSON, a wrong shape, missing sections)
is retried ``max_retries`` times, the retry saying what was wrong; then :class:`UpdateFailed`
names every problem. A section answered empty keeps its old text.

The steps are pure functions shared by ``propose`` (``model.invoke``) and ``apropose``
(``await model.ainvoke``): :func:`build_prompt`, :func:`parse_answer`, :func:`to_proposal`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Final

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable
from pydantic import AliasChoices, BaseModel, Field, ValidationError, field_validator

from ...compaction.summarize import strip_think
from ...errors import InvalidInput, MalformedAnswer, UpdateFailed
from ..sections import SECTION_NAMES, SECTIONS, Sections, render
from .base import UpdateProposal

__all__ = [
    "MAX_MESSAGE_CHARS",
    "LlmUpdater",
    "Malformed",
    "NotebookAnswer",
    "build_prompt",
    "parse_answer",
    "render_messages",
    "retry_prompt",
    "to_proposal",
]

MAX_MESSAGE_CHARS: Final = 4000  # longer message texts keep their start and end
FIELDS: Final = {name: name.lower().replace(" ", "_") for name in SECTION_NAMES}

_FENCE: Final = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)```", re.S)


def _section(name: str) -> Any:
    """A section's field: snake_case in the schema (tool-calling APIs reject keys with spaces),
    the section name accepted too."""
    choices = AliasChoices(FIELDS[name], name)
    return Field(validation_alias=choices, description=f"{name}: {SECTIONS[name]}")


class NotebookAnswer(BaseModel):
    """The new session notebook: each section's full new text, and the identifiers of the old
    notebook deliberately left out."""

    current_state: str = _section("Current State")
    task_specification: str = _section("Task Specification")
    files_and_functions: str = _section("Files and Functions")
    workflow: str = _section("Workflow")
    errors_and_corrections: str = _section("Errors and Corrections")
    key_results: str = _section("Key Results")
    worklog: str = _section("Worklog")
    resolved: list[str] = Field(
        default_factory=list,
        description="Identifiers of the old notebook deliberately left out (done, superseded)",
    )

    @field_validator(*FIELDS.values(), mode="before")
    @classmethod
    def _lines(cls, value: object) -> object:
        """A list of bullet strings is the section's lines; null is an empty section."""
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return "\n".join(value)
        return "" if value is None else value

    @field_validator("resolved", mode="before")
    @classmethod
    def _list(cls, value: object) -> object:
        return [] if value is None else [value] if isinstance(value, str) else value


Malformed = MalformedAnswer  # its name here before errors.py


_INSTRUCTIONS: Final = f"""\
You keep the session notebook: the working memory of one conversation, in seven fixed \
sections. Rewrite it from the old notebook and the new messages.

Rules:
- Give all seven sections. Keep what still matters from the old notebook and add what the new \
messages bring.
- Copy identifiers verbatim: file paths and line numbers, function, class and module names, \
ids, numbers, dates, names, commands and error messages. Never paraphrase or renumber them.
- Current State says where things stand now (the latest request and what was done about it). Task Specification lists the user's asks and \
later corrections. Errors and Corrections pairs each problem with its resolution, or says it \
is unresolved. Worklog only grows: one-line entries, oldest first, dated with the messages' timestamps \
when they have them.
- Write Markdown lines and bullets, without section headers.
- In "resolved", list every identifier of the old notebook that you deliberately leave out \
(done, fixed or superseded); an empty list if you dropped none.

The sections:
{chr(10).join(f"- {name}: {purpose}" for name, purpose in SECTIONS.items())}"""

_JSON_FORMAT: Final = (
    "Answer with one JSON object and nothing else: the keys are the seven section names, each "
    'with a string, and "resolved", a list of strings. Its shape:\n'
    + json.dumps({**dict.fromkeys(SECTION_NAMES, "..."), "resolved": ["..."]}, indent=1)
)


def render_messages(messages: Sequence[BaseMessage], limit: int = MAX_MESSAGE_CHARS) -> str:
    """The messages as ``role: text`` entries, each tool call and tool result named."""
    calls = {c["id"]: c["name"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    entries = []
    for m in messages:
        text = str(m.text).strip()
        if len(text) > limit:
            text = f"{text[: limit // 2]}\n[… {len(text) - limit} characters cut …]\n{text[-limit // 2 :]}"
        if isinstance(m, ToolMessage):
            tool = m.name or calls.get(m.tool_call_id) or "tool"
            role = f"tool {tool} ({m.status}, call {m.tool_call_id})"
        else:
            role = "user" if isinstance(m, HumanMessage) else m.type
            role = "assistant" if isinstance(m, AIMessage) else role
        when = m.response_metadata.get("timestamp") or m.additional_kwargs.get("timestamp")
        lines = [f"{role}{f' at {when}' if when else ''}: {text}".rstrip()]
        for c in m.tool_calls if isinstance(m, AIMessage) else []:
            args = json.dumps(c["args"], ensure_ascii=False, default=str)
            lines.append(f"  [tool call {c['name']} (call {c['id']}): {args}]")
        entries.append("\n".join(lines))
    return "\n\n".join(entries)


def build_prompt(
    current: Sections, messages: Sequence[BaseMessage], *, json_mode: bool
) -> list[BaseMessage]:
    """The messages to send: the rules, then the old notebook and the new messages (and, in
    ``json_mode``, the JSON shape to answer with)."""
    request = (
        f"The old notebook:\n\n{render(current)}\n"
        f"The new messages:\n\n{render_messages(messages)}\n\n"
        "Rewrite the notebook."
    )
    if json_mode:
        request += f"\n\n{_JSON_FORMAT}"
    return [SystemMessage(_INSTRUCTIONS), HumanMessage(request)]


def retry_prompt(prompt: list[BaseMessage], problem: str, *, json_mode: bool) -> list[BaseMessage]:
    """The first prompt again, followed by what was wrong with the last answer."""
    again = "as one JSON object and nothing else" if json_mode else "in the given shape"
    note = (
        f"Your answer could not be used: {problem}. Answer again with all seven sections, {again}."
    )
    return [*prompt, HumanMessage(note)]


def parse_answer(answer: object) -> NotebookAnswer:
    """A :class:`NotebookAnswer` from what the model gave back (an instance, a dict, a message
    or text holding a JSON object), or :class:`MalformedAnswer` saying what was wrong."""
    if isinstance(answer, NotebookAnswer):
        return answer
    if isinstance(answer, BaseException):
        raise MalformedAnswer(f"the model call failed: {type(answer).__name__}: {answer}")
    if isinstance(answer, BaseMessage | str):
        answer = _json_object(str(answer.text) if isinstance(answer, BaseMessage) else answer)
    if not isinstance(answer, dict):
        raise MalformedAnswer(
            f"expected a JSON object with the seven sections, got {type(answer).__name__}"
        )
    try:
        return NotebookAnswer.model_validate(answer)
    except ValidationError as err:
        raise MalformedAnswer(_describe(err)) from None


def to_proposal(answer: NotebookAnswer, current: Sections) -> UpdateProposal:
    """The proposal from a valid answer: a section answered empty keeps its old text."""
    sections = {}
    for name in SECTION_NAMES:
        text = str(getattr(answer, FIELDS[name])).strip("\n")
        for echo in (f"## {name}", f"_{SECTIONS[name]}_"):  # a header the model repeated
            text = text.removeprefix(echo).lstrip("\n") if text.startswith(echo) else text
        sections[name] = text if text.strip() else current.get(name, "")
    resolved = list(dict.fromkeys(r.strip() for r in answer.resolved if r.strip()))
    return UpdateProposal(sections, resolved)


def _json_object(text: str) -> Any:
    """The JSON object in a text answer, past any reasoning and around any prose or fence."""
    text = strip_think(text)
    text = fence[1] if (fence := _FENCE.search(text)) else text
    if (start := text.find("{")) < 0:
        raise MalformedAnswer(f"no JSON object in the answer (it begins {text.strip()[:80]!r})")
    try:
        return json.JSONDecoder().raw_decode(text, start)[0]
    except json.JSONDecodeError as err:
        raise MalformedAnswer(
            f"invalid JSON: {err.msg} at line {err.lineno} column {err.colno}"
        ) from None


def _describe(err: ValidationError) -> str:
    """What was wrong, by section name: "missing sections: Worklog; Current State: …"."""
    names = {field: name for name, field in FIELDS.items()}
    missing, other = [], []
    for e in err.errors():
        where = ".".join(names.get(str(part), str(part)) for part in e["loc"])
        if e["type"] == "missing":
            missing.append(where)
        else:
            other.append(f"{where}: {e['msg']}")
    return "; ".join(([f"missing sections: {', '.join(missing)}"] if missing else []) + other)


class _Attempts:
    """The prompt to send next, and what to make of each answer; shared by sync and async."""

    def __init__(self, current: Sections, prompt: list[BaseMessage], json_mode: bool, tries: int):
        self.current, self.json_mode, self.tries = current, json_mode, tries
        self.first = self.prompt = prompt
        self.problems: list[str] = []

    def record(self, answer: object) -> UpdateProposal | None:
        """The proposal, or None to ask again with :attr:`prompt`; UpdateFailed after the last."""
        try:
            return to_proposal(parse_answer(answer), self.current)
        except MalformedAnswer as err:
            self.problems.append(f"attempt {len(self.problems) + 1}: {err}")
            if len(self.problems) >= self.tries:
                raise UpdateFailed(
                    f"the llm updater got no usable notebook update from the model in "
                    f"{self.tries} attempt(s) ({'; '.join(self.problems)}); the notebook was "
                    "not changed"
                ) from None
            if not isinstance(answer, BaseException):  # a failed call is just asked again
                self.prompt = retry_prompt(self.first, str(err), json_mode=self.json_mode)
            return None


class LlmUpdater:
    """Any LangChain chat model rewrites the sections (see the module doc)."""

    name = "llm"

    def __init__(self, model: BaseChatModel, *, max_retries: int = 1) -> None:
        if max_retries < 0:
            raise InvalidInput(f"max_retries must be 0 or more, not {max_retries}")
        self.model, self.max_retries = model, max_retries
        try:
            self._runnable: Runnable[Any, Any] = model.with_structured_output(NotebookAnswer)
            self.json_mode = False
        except NotImplementedError:  # no tool calling: ask for JSON in the prompt
            self._runnable, self.json_mode = model, True

    def _attempts(self, current: Sections, messages: Sequence[BaseMessage]) -> _Attempts:
        prompt = build_prompt(current, messages, json_mode=self.json_mode)
        return _Attempts(current, prompt, self.json_mode, self.max_retries + 1)

    def propose(self, current: Sections, messages: Sequence[BaseMessage]) -> UpdateProposal:
        if not messages:
            return UpdateProposal({n: current.get(n, "") for n in SECTION_NAMES})
        attempts = self._attempts(current, messages)
        while True:
            try:
                answer: object = self._runnable.invoke(attempts.prompt)
            except Exception as err:  # noqa: BLE001 - any model failure is a failed attempt
                answer = err
            if (proposal := attempts.record(answer)) is not None:
                return proposal

    async def apropose(self, current: Sections, messages: Sequence[BaseMessage]) -> UpdateProposal:
        if not messages:
            return UpdateProposal({n: current.get(n, "") for n in SECTION_NAMES})
        attempts = self._attempts(current, messages)
        while True:
            try:
                answer: object = await self._runnable.ainvoke(attempts.prompt)
            except Exception as err:  # noqa: BLE001 - any model failure is a failed attempt
                answer = err
            if (proposal := attempts.record(answer)) is not None:
                return proposal
