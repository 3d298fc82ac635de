"""The notebook as LangChain tools, without MCP: ``notebook_tools(nb)``.

The same tools, descriptions and recovery hints as the MCP server
(:mod:`agent_notebook.notebook.agent_tools`), called in process. A failed call does not
raise into the agent: the tool answers with the error and how to recover (a ``ToolMessage``
with ``status="error"`` when called with a tool call), and nothing was changed. Calls
without an event loop of their own (``ainvoke``) run in LangChain's executor, off the loop.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.validation import describe_validation_error
from ..errors import InvalidInput, NotebookError
from ..notebook.agent_tools import (
    READ_SESSION,
    RECORD,
    SEARCH,
    SLICE,
    WRITE_BACK,
    ToolDoc,
    error_message,
    record_moment,
    search_hits,
)
from ..notebook.facade import Notebook

__all__ = ["notebook_tools"]


def _arg(doc: ToolDoc, name: str, default: Any = ...) -> Any:
    """A field of a tool's arguments, described as the MCP tool describes it."""
    return Field(default, description=doc.args[name])


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchArgs(_Args):
    query: str = _arg(SEARCH, "query")
    session_id: str | None = _arg(SEARCH, "session_id", None)
    limit: int = _arg(SEARCH, "limit", 10)
    current_session_id: str | None = _arg(SEARCH, "current_session_id", None)


class SliceArgs(_Args):
    query: str = _arg(SLICE, "query")
    budget_tokens: int = _arg(SLICE, "budget_tokens", 4000)
    audience: str = _arg(SLICE, "audience", "guest")
    session_id: str | None = _arg(SLICE, "session_id", None)


class ReadSessionArgs(_Args):
    session_id: str = _arg(READ_SESSION, "session_id")


class RecordArgs(_Args):
    text: str = _arg(RECORD, "text")
    session_id: str | None = _arg(RECORD, "session_id", None)
    task: str = _arg(RECORD, "task", "")
    role: str = _arg(RECORD, "role", "user")
    speaker: str = _arg(RECORD, "speaker", "")


class WriteBackArgs(_Args):
    guest: str = _arg(WRITE_BACK, "guest")
    session_id: str = _arg(WRITE_BACK, "session_id")
    kind: Literal["decision", "pending", "escalation_outcome"] = _arg(WRITE_BACK, "kind")
    text: str = _arg(WRITE_BACK, "text")
    why: str = _arg(WRITE_BACK, "why", "")
    escalation_id: str | None = _arg(WRITE_BACK, "escalation_id", None)


def notebook_tools(notebook: Notebook) -> list[BaseTool]:
    """LangChain tools over ``notebook``: ``search``, ``slice``, ``read_session``,
    ``record`` and ``write_back``, for any agent (``create_agent(model, tools=...)``).

    >>> tools = {t.name: t for t in notebook_tools(nb)}  # doctest: +SKIP
    >>> tools["search"].invoke({"query": "train to Lyon"})  # doctest: +SKIP
    '[{"id": "m_1", "session": "s_2026-06-07_001", ...}]'
    """
    nb = notebook

    def search(
        query: str,
        session_id: str | None = None,
        limit: int = 10,
        current_session_id: str | None = None,
    ) -> str:
        return _json(
            search_hits(nb, query, session_id, limit, current_session_id=current_session_id)
        )

    def slice_(
        query: str,
        budget_tokens: int = 4000,
        audience: str = "guest",
        session_id: str | None = None,
    ) -> str:
        return nb.slice(query, budget_tokens, audience=audience, session=session_id).render()

    def read_session(session_id: str) -> str:
        return _json(nb.get_session(session_id).model_dump(mode="json"))

    def record(
        text: str,
        session_id: str | None = None,
        task: str = "",
        role: str = "user",
        speaker: str = "",
    ) -> str:
        return _json(record_moment(nb, text, session_id, task=task, role=role, speaker=speaker))

    def write_back(
        guest: str,
        session_id: str,
        kind: Literal["decision", "pending", "escalation_outcome"],
        text: str,
        why: str = "",
        escalation_id: str | None = None,
    ) -> str:
        entry = nb.write_back(guest, session_id, kind, text, why=why, escalation_id=escalation_id)
        return _json(entry.model_dump(mode="json"))

    return [
        _tool("search", search, SEARCH, SearchArgs),
        _tool("slice", slice_, SLICE, SliceArgs),
        _tool("read_session", read_session, READ_SESSION, ReadSessionArgs),
        _tool("record", record, RECORD, RecordArgs),
        _tool("write_back", write_back, WRITE_BACK, WriteBackArgs),
    ]


def _tool(name: str, work: Callable[..., str], doc: ToolDoc, args: type[BaseModel]) -> BaseTool:
    def call(**kwargs: Any) -> str:
        try:
            return work(**kwargs)
        except NotebookError as err:  # the facade checked and changed nothing
            raise ToolException(error_message(err)) from err

    def bad_arguments(err: ValidationError | Any) -> str:
        if not isinstance(err, ValidationError):  # pydantic.v1's, which these schemas are not
            return error_message(InvalidInput(f"{name}: {err}"))
        return error_message(InvalidInput(f"{name}: {describe_validation_error(err)}"))

    return StructuredTool.from_function(
        call,
        name=name,
        description=doc.brief(),
        args_schema=args,
        infer_schema=False,
        handle_tool_error=True,  # the error's message is the tool's answer
        handle_validation_error=bad_arguments,
    )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
