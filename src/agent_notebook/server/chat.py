"""Seed 001's chat endpoints: chat sessions (threads), one turn (also as server-sent
events), and the context a turn would get."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse
from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict, Field

from ..chat.context import Mode
from ..chat.service import ChatService
from ..errors import NotebookError
from ..model import Text
from ..notebook.facade import Notebook
from .auth import access_of
from .deps import Limit, Offset, Page, notebook, page
from .errors import FIXES, TITLES, status_of

router = APIRouter(prefix="/api/chat", tags=["chat"])
Nb = Annotated[Notebook, Depends(notebook)]
THREAD_PATTERN = r"^[A-Za-z0-9_:@-]{1,200}$"


def chat_service(request: Request) -> ChatService:
    """The chat service of the request's notebook (one per notebook on the server)."""
    return access_of(request).tenant.chat


Chat = Annotated[ChatService, Depends(chat_service)]


class NewChatSession(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: Text = Field("", max_length=1000)
    thread_id: str | None = Field(
        None, pattern=THREAD_PATTERN, description="Default: a new id, chat-<12 hex digits>."
    )


class Rename(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: Text = Field(max_length=1000)


class ChatMessage(BaseModel):
    id: str | None
    type: str
    content: str


class ChatSession(BaseModel):
    """A chat session is a LangGraph thread; its turns are moments of ``notebook_session``."""

    id: str
    notebook_session: str
    title: str
    started: datetime


class ChatSessionWithMessages(ChatSession):
    messages: list[ChatMessage]
    condensed_history: str = ""


class ExecuteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    session_id: str = Field(min_length=1, max_length=200, description="The chat session.")
    message: Text = Field(min_length=1, max_length=200_000)
    context: Text | None = Field(None, description="Extra text for the system prompt.")
    context_config: dict[str, Mode] | None = Field(
        None, description='Item id or kind -> "not in context" | "summary" | "full".'
    )
    model_override: str | None = Field(
        None, min_length=1, max_length=200, description="provider:model for this turn."
    )
    stream: bool = Field(False, description="Answer as server-sent events.")


class ExecuteResponse(BaseModel):
    session_id: str
    notebook_session: str
    answer: ChatMessage
    messages: list[ChatMessage]


class ContextRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    session_id: str = Field(min_length=1, max_length=200)
    message: Text = Field("", max_length=200_000, description="The next turn's message.")
    context_config: dict[str, Mode] | None = None


class ContextItemView(BaseModel):
    id: str
    kind: str
    mode: Mode
    tokens: int
    text: str


class CutItem(BaseModel):
    id: str
    reason: str


class ContextResponse(BaseModel):
    session_id: str
    notebook_session: str
    budget: int
    tokens_used: int
    items: list[ContextItemView]
    cut: list[CutItem]
    rendered: str


def _message(m: BaseMessage) -> ChatMessage:
    return ChatMessage(id=m.id, type=m.type, content=m.text)


def _view(chat: ChatService, nb: Notebook, thread_id: str, session_id: str) -> ChatSession:
    session = nb.get_session(session_id)
    return ChatSession(
        id=thread_id, notebook_session=session_id, title=session.task, started=session.started
    )


@router.post("/sessions", status_code=201)
def create_session(body: NewChatSession, chat: Chat, nb: Nb) -> ChatSession:
    """Start a chat session (a thread, with a session of the notebook for its turns)."""
    thread_id = body.thread_id or f"chat-{uuid.uuid4().hex[:12]}"
    session_id = chat.create(thread_id, body.title)
    return _view(chat, nb, thread_id, session_id)


@router.get("/sessions")
def list_sessions(chat: Chat, nb: Nb, offset: Offset = 0, limit: Limit = 50) -> Page[ChatSession]:
    """Chat sessions, the newest first."""
    found = [_view(chat, nb, t, s) for t, s in chat.threads(offset, limit)]
    return page(found, offset, limit)


@router.get("/sessions/{thread_id}")
def get_session(thread_id: str, chat: Chat, nb: Nb) -> ChatSessionWithMessages:
    """A chat session with its live messages (older ones are in ``condensed_history`` and,
    whole, in the notebook session's moments)."""
    session_id = chat.require(thread_id)
    state = chat.state(thread_id)
    view = _view(chat, nb, thread_id, session_id)
    return ChatSessionWithMessages(
        **view.model_dump(),
        messages=[_message(m) for m in state.get("messages") or []],
        condensed_history=state.get("condensed_history") or "",
    )


@router.patch("/sessions/{thread_id}")
def rename_session(thread_id: str, body: Rename, chat: Chat, nb: Nb) -> ChatSession:
    session_id = chat.require(thread_id)
    nb.update_session(session_id, task=body.title)
    return _view(chat, nb, thread_id, session_id)


@router.delete("/sessions/{thread_id}", status_code=204)
async def delete_session(thread_id: str, chat: Chat) -> Response:
    """Forget the conversation and its session notebook; the turns stay in the notebook."""
    await chat.delete(thread_id)
    return Response(status_code=204)


@router.post(
    "/execute",
    responses={200: {"content": {"text/event-stream": {}}, "model": ExecuteResponse}},
)
async def execute(body: ExecuteRequest, chat: Chat, request: Request) -> Any:
    """One turn: the message, the model's answer (the whole live window comes back). With
    ``stream`` (or ``Accept: text/event-stream``): ``token`` events as the answer comes,
    then ``done`` with this response's JSON, or ``error`` with an error's. The graph runs
    async; the notebook's blocking work runs on worker threads."""
    session_id = await asyncio.to_thread(chat.require, body.session_id)
    await asyncio.to_thread(chat.check_model, body.model_override)
    data = chat.turn_input(body.message, body.context, body.context_config, body.model_override)
    if body.stream or "text/event-stream" in request.headers.get("accept", ""):
        return StreamingResponse(
            _events(chat, body.session_id, session_id, data),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )
    return _answer(body.session_id, session_id, await chat.execute(body.session_id, data))


def _answer(thread_id: str, session_id: str, messages: Sequence[BaseMessage]) -> ExecuteResponse:
    views = [_message(m) for m in messages]
    return ExecuteResponse(
        session_id=thread_id, notebook_session=session_id, answer=views[-1], messages=views
    )


async def _events(
    chat: ChatService, thread_id: str, session_id: str, data: dict[str, Any]
) -> AsyncIterator[str]:
    try:
        async for kind, value in chat.stream(thread_id, data):
            if kind == "token":
                yield _sse("token", {"content": value})
            else:
                yield _sse("done", _answer(thread_id, session_id, value).model_dump(mode="json"))
    except NotebookError as err:
        status = status_of(err)
        body = {"error": TITLES.get(status, "error"), "detail": str(err), "fix": FIXES.get(status)}
        yield _sse("error", body)


def _sse(event: str, data: object) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


@router.post("/context")
def context(body: ContextRequest, chat: Chat) -> ContextResponse:
    """The context the next turn of a chat session would get for ``message`` and
    ``context_config``: each item with its mode and token count, what was cut and why."""
    built = chat.context(body.session_id, body.message, body.context_config)
    return ContextResponse(
        session_id=body.session_id,
        notebook_session=chat.require(body.session_id),
        budget=built.budget,
        tokens_used=built.tokens_used,
        items=[
            ContextItemView(id=i.id, kind=i.kind, mode=i.mode, tokens=i.tokens, text=i.text)
            for i in built.items
        ],
        cut=[CutItem(id=i, reason=r) for i, r in built.cut],
        rendered=built.render(),
    )
