"""Sessions: the paged list, a session's page (task and status, condensed history, the
audit log with its forms to decide and correct, pending items to open, reword and close,
escalations, links, stats) and its timeline of moments."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ...model import TaskStatus
from ...notebook.sessions import SessionOrder
from ..auth import access_of
from ..deps import etag_of
from .common import PAGE, Checked, Nb, Offset, back_to, paged
from .render import page

router = APIRouter(include_in_schema=False)


def session_url(session_id: str) -> str:
    return f"/sessions/{quote(session_id, safe='')}"


@router.get("/", response_class=HTMLResponse)
def home(request: Request) -> RedirectResponse:
    target = "/slice" if access_of(request).is_guest else "/sessions"
    return RedirectResponse(target, status_code=303)


@router.get("/sessions", response_class=HTMLResponse)
def sessions(
    request: Request,
    nb: Nb,
    offset: Offset = 0,
    q: str = "",
    status: TaskStatus | Literal[""] = "",
    order: SessionOrder = "started",
) -> HTMLResponse:
    """Sessions a page at a time; filtered by ``q`` (id or task) and ``status``, sorted."""
    read = nb.sessions(offset, PAGE + 1, text=q, status=status or None, order=order)
    found, paging = paged(offset, read)
    chosen = status.value if isinstance(status, TaskStatus) else ""
    given = {"q": q.strip(), "status": chosen, "order": "" if order == "started" else order}
    keep = {k: v for k, v in given.items() if v}
    return page(
        request,
        "sessions.html",
        sessions=found,
        paging=paging,
        form={"q": q, "status": chosen, "order": order},
        statuses=list(TaskStatus),
        base="/sessions?" + (urlencode(keep) + "&" if keep else ""),
        total=nb.session_count(),
    )


@router.get("/sessions/{session_id}", response_class=HTMLResponse)
def session(request: Request, session_id: str, nb: Nb) -> HTMLResponse:
    found = nb.get_session(session_id)
    return page(
        request,
        "session.html",
        s=found,
        log=nb.facts.decision_log(found.id),
        etag=etag_of(found),
        statuses=list(TaskStatus),
    )


@router.post("/sessions/{session_id}", dependencies=[Checked])
def change_session(
    session_id: str,
    nb: Nb,
    task: Annotated[str, Form()],
    task_status: Annotated[TaskStatus, Form()],
    etag: Annotated[str | None, Form()] = None,
) -> RedirectResponse:
    """Task and status, checked against the page's ETag in the same transaction (another
    writer's change since the page was read is a conflict, not overwritten)."""
    nb.write_if_match(
        session_id, etag, lambda: nb.update_session(session_id, task=task, task_status=task_status)
    )
    return back_to(session_url(session_id))


@router.post("/sessions/{session_id}/decisions", dependencies=[Checked])
def decide(
    session_id: str, nb: Nb, what: Annotated[str, Form()], why: Annotated[str, Form()] = ""
) -> RedirectResponse:
    nb.decide(session_id, what, why)
    return back_to(session_url(session_id) + "#decisions")


@router.post("/sessions/{session_id}/decisions/{decision_id}/edit", dependencies=[Checked])
def edit_decision(
    session_id: str,
    decision_id: str,
    nb: Nb,
    what: Annotated[str, Form()],
    why: Annotated[str, Form()] = "",
) -> RedirectResponse:
    """The form sends both fields (as shown, or changed): the correction is appended."""
    nb.facts.edit_decision(session_id, decision_id, what=what, why=why)
    return back_to(session_url(session_id) + "#decisions")


@router.post("/sessions/{session_id}/pending/{pending_id}/edit", dependencies=[Checked])
def edit_pending(
    session_id: str, pending_id: str, nb: Nb, what: Annotated[str, Form()]
) -> RedirectResponse:
    nb.facts.edit_pending(session_id, pending_id, what)
    return back_to(session_url(session_id) + "#pending")


@router.post("/sessions/{session_id}/pending", dependencies=[Checked])
def open_pending(session_id: str, nb: Nb, what: Annotated[str, Form()]) -> RedirectResponse:
    nb.open_pending(session_id, what)
    return back_to(session_url(session_id) + "#pending")


@router.post("/sessions/{session_id}/pending/{pending_id}/close", dependencies=[Checked])
def close_pending(
    session_id: str, pending_id: str, nb: Nb, resolution: Annotated[str, Form()] = ""
) -> RedirectResponse:
    nb.close_pending(session_id, pending_id, resolution)
    return back_to(session_url(session_id) + "#pending")


@router.post("/sessions/{session_id}/delete", response_model=None, dependencies=[Checked])
def delete_session(
    request: Request, session_id: str, nb: Nb, confirm: Annotated[str, Form()] = ""
) -> Response:
    """First a confirmation page (what goes, for good); with ``confirm=yes``, the deletion."""
    found = nb.get_session(session_id)
    if confirm != "yes":
        return page(request, "delete_confirm.html", s=found)
    gone = nb.delete_session(found.id)
    return page(request, "deleted.html", gone=gone)


@router.get("/sessions/{session_id}/moments", response_class=HTMLResponse)
def timeline(request: Request, session_id: str, nb: Nb, offset: Offset = 0) -> HTMLResponse:
    found = nb.get_session(session_id)
    moments, paging = paged(offset, nb.moments(session_id, offset, PAGE + 1))
    return page(request, "timeline.html", s=found, moments=moments, paging=paging)
