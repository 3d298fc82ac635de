"""What a guest sees: its slice of the notebook, nothing else (seed 002's guest reads the
relevant slice; every other page refuses a guest, see :mod:`..guest_rights`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse

from ...notebook.sessions import WriteBackKind
from ...search.slice import MAX_SLICE_TOKENS
from ..auth import access_of
from .common import Checked, Nb
from .render import page

router = APIRouter(include_in_schema=False)


@router.get("/slice", response_class=HTMLResponse)
def slice_page(
    request: Request,
    nb: Nb,
    q: str = "",
    budget: Annotated[int, Query(ge=1, le=MAX_SLICE_TOKENS)] = 2000,
) -> HTMLResponse:
    """A provenance-tagged slice for ``q`` within ``budget`` tokens, as ``GET /api/slice``
    gives it (the owner may look at what a guest would get)."""
    found = None
    if q.strip():
        access = access_of(request)
        audience = access.grant.name if access.is_guest else "guest"
        found = nb.slice(q, budget, audience=audience, scope=access.grant.scope)
    return page(request, "slice.html", q=q, budget=budget, found=found)


@router.post("/slice/write-back", response_class=HTMLResponse, dependencies=[Checked])
def write_back(
    request: Request,
    nb: Nb,
    session: Annotated[str, Form()],
    kind: Annotated[WriteBackKind, Form()],
    text: Annotated[str, Form()],
    why: Annotated[str, Form()] = "",
    escalation: Annotated[str, Form()] = "",
) -> HTMLResponse:
    """A guest's one write, as ``POST /api/sessions/{id}/write-back`` makes it: under the
    guest's own name (the token proves it; the owner writes as the owner)."""
    access = access_of(request)
    guest = access.grant.name if access.is_guest else None
    entry = nb.write_back(
        guest, session.strip(), kind, text, why=why, escalation_id=escalation.strip() or None
    )
    return page(request, "slice.html", q="", budget=2000, found=None, written=entry)
