"""A thread's session notebook: the seven sections with their budgets as bars, each
editable in place with the API's checks (no blanking; a stale ETag is a conflict, said at
the top of the page in words and shown with both texts), and the condensed-away text behind each marker reachable."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, Response

from ...errors import Conflict, InvalidInput
from ...session import SessionNotebookSync, sections
from ..deps import check_if_match, etag_of
from ..sections_api import checked_section, checked_thread
from .common import PAGE, Checked, Nb, Offset, back_to, paged
from .render import page

router = APIRouter(include_in_schema=False)
_MARKER = re.compile(r"\[condensed: earlier text moved to ([^\]\n]+)\]")


@dataclass(frozen=True)
class SectionView:
    name: str
    guidance: str
    text: str
    tokens: int
    budget: int
    etag: str
    #: The references of the condensed-away text its markers name.
    cuts: list[str]


def thread_url(thread_id: str) -> str:
    return f"/notebooks/{quote(thread_id, safe='')}"


def _views(notes: SessionNotebookSync) -> list[SectionView]:
    parsed = sections.parse(notes.load())
    budget = notes.budgets.max_section_tokens
    return [
        SectionView(
            name,
            sections.SECTIONS[name],
            text,
            notes.estimate_tokens(text),
            budget,
            etag_of(text),
            _MARKER.findall(text),
        )
        for name, text in parsed.items()
    ]


@router.get("/notebooks", response_model=None)
def threads(request: Request, nb: Nb, offset: Offset = 0, thread: str = "") -> Response:
    if thread.strip():  # the "open a thread" form
        return back_to(thread_url(thread.strip()))
    found, paging = paged(
        offset, nb.langgraph.session_notebook_threads()[offset : offset + PAGE + 1]
    )
    return page(request, "threads.html", threads=found, paging=paging)


def _thread_page(
    request: Request,
    nb: Nb,
    thread_id: str,
    *,
    status: int = 200,
    problem: dict[str, str] | None = None,
) -> HTMLResponse:
    notes = nb.session_notebook(checked_thread(thread_id)).sync
    views = _views(notes)
    return page(
        request,
        "thread.html",
        status=status,
        thread_id=thread_id,
        sections=views,
        total=sum(v.tokens for v in views),
        total_budget=notes.budgets.max_total_tokens,
        problem=problem or {},
        revision=notes.revision()[0],
    )


@router.get("/notebooks/{thread_id}", response_class=HTMLResponse)
def thread(request: Request, thread_id: str, nb: Nb) -> HTMLResponse:
    return _thread_page(request, nb, thread_id)


@router.post("/notebooks/{thread_id}/sections/{section}", dependencies=[Checked])
def edit_section(
    request: Request,
    thread_id: str,
    section: str,
    nb: Nb,
    content: Annotated[str, Form()] = "",
    etag: Annotated[str | None, Form()] = None,
) -> Response:
    """Replace one section as ``PUT /api/threads/…/sections/…`` does (the same check under
    the same lock), then condense what is over budget. A conflict or a refused text shows
    the page again, the text typed kept, nothing changed."""
    name = checked_section(section)
    notes = nb.session_notebook(checked_thread(thread_id)).sync

    def check(current: str) -> None:
        check_if_match(etag, etag_of(current), f"section {name!r} of {thread_id}")

    try:
        notes.update_section(name, content, check=check)
    except Conflict:
        # in words, not the API's (which names the ETags): the page shows theirs and keeps
        # the text typed, and its form now carries their version's ETag
        message = (
            f"Not saved: {name} was changed elsewhere (by an agent or in another window) "
            "after you opened this page. The new version is shown in the section and your "
            "text is still in its box: compare them, then save again to replace it with yours."
        )
        problem = {"section": name, "message": message, "typed": content}
        return _thread_page(request, nb, thread_id, status=409, problem=problem)
    except InvalidInput as err:
        problem = {"section": name, "message": f"Not saved: {err}", "typed": content}
        return _thread_page(request, nb, thread_id, status=422, problem=problem)
    notes.enforce_budget()
    return back_to(thread_url(thread_id) + f"#{quote(name.replace(' ', '-'))}")


@router.get("/notebooks/{thread_id}/cut", response_class=HTMLResponse)
def cut(request: Request, thread_id: str, ref: str, nb: Nb) -> HTMLResponse:
    """The text a condensed section's marker names."""
    text = nb.session_notebook(checked_thread(thread_id)).sync.fetch_cut(ref)
    return page(request, "cut.html", thread_id=thread_id, ref=ref, text=text)
