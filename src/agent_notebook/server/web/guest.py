"""What a guest sees: its slice of the notebook, nothing else (seed 002's guest reads the
relevant slice; every other page refuses a guest, see :mod:`..guest_rights`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from ...search.slice import MAX_SLICE_TOKENS
from ..auth import access_of
from .common import Nb
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
        found = nb.slice(q, budget, audience=audience)
    return page(request, "slice.html", q=q, budget=budget, found=found)
