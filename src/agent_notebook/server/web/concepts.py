"""Concepts: the index, one concept's moments across sessions, and forgetting a concept
after a dry-run preview of everything that would go."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse

from ...errors import NotFound
from ...notebook.checks import nothing_to_forget
from .common import PAGE, Checked, Nb, Offset, Pager, paged
from .render import page

router = APIRouter(include_in_schema=False)


@router.get("/concepts", response_class=HTMLResponse)
def concepts(request: Request, nb: Nb, offset: Offset = 0, q: str = "") -> HTMLResponse:
    found, paging = paged(offset, nb.concepts(offset, PAGE + 1, text=q))
    base = "/concepts?" + (urlencode({"q": q}) + "&" if q.strip() else "")
    return page(request, "concepts.html", concepts=found, paging=paging, q=q, base=base)


@router.get("/concepts/{name:path}", response_class=HTMLResponse)
def concept(request: Request, name: str, nb: Nb, offset: Offset = 0) -> HTMLResponse:
    """The concept's moments, a page at a time (the index lists their ids; only the shown
    page's moments are read). ``:path``: a name may hold "/" (the links send it as %2F,
    which the server decodes before routing)."""
    entry = nb.concept(name)
    shown = [nb.get_moment(mid) for mid in entry.moments[offset : offset + PAGE]]
    return page(
        request,
        "concept.html",
        entry=entry,
        moments=shown,
        paging=Pager(offset, offset + PAGE < len(entry.moments)),
    )


@router.post("/concepts/{name:path}/forget", response_class=HTMLResponse, dependencies=[Checked])
def forget(
    request: Request,
    name: str,
    nb: Nb,
    reason: Annotated[str, Form()] = "",
    confirm: Annotated[str, Form()] = "",
) -> HTMLResponse:
    """Without ``confirm=yes`` a dry run: the page lists what would go and asks again."""
    done = confirm == "yes"
    report = nb.forget(name, reason, who="owner", dry_run=not done)
    if not (report.moments or report.rollups or report.sections):  # as the CLI: exit 1
        raise NotFound(nothing_to_forget(report.concept))
    return page(request, "forget.html", name=name, report=report, reason=reason, done=done)
