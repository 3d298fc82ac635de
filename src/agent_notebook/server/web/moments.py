"""Moments: one moment's page (everything about it), its media, and redacting it (with a
reason, a confirmation, then the tombstone shown)."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import FileResponse, HTMLResponse, Response

from ..notebook_api import media_file
from .common import Checked, Nb, back_to
from .render import page

router = APIRouter(include_in_schema=False)


def moment_url(moment_id: str) -> str:
    return f"/moments/{quote(moment_id, safe='')}"


@router.get("/moments/{moment_id}", response_class=HTMLResponse)
def moment(request: Request, moment_id: str, nb: Nb) -> HTMLResponse:
    return page(request, "moment.html", m=nb.get_moment(moment_id))


@router.get("/moments/{moment_id}/media", response_class=FileResponse)
def media(moment_id: str, nb: Nb, kind: Literal["image", "audio"] | None = None) -> FileResponse:
    return media_file(nb, moment_id, kind)


@router.post("/moments/{moment_id}/marks", dependencies=[Checked])
def mark(
    moment_id: str,
    nb: Nb,
    importance: Annotated[float, Form(ge=0, le=1)],
    pinned: Annotated[str, Form()] = "",
) -> Response:
    """Importance and pin only: the text is immutable (a redaction is the only change)."""
    nb.facts.mark_moment(moment_id, importance=importance, pinned=pinned == "yes")
    return back_to(moment_url(moment_id))


@router.post("/moments/{moment_id}/redact", dependencies=[Checked])
def redact(
    request: Request,
    moment_id: str,
    nb: Nb,
    reason: Annotated[str, Form()] = "",
    confirm: Annotated[str, Form()] = "",
) -> Response:
    """First the confirmation (what goes, for good); with ``confirm=yes``, the redaction.
    The reason is checked by the facade when it redacts (a blank one is refused there)."""
    if confirm != "yes":
        return page(request, "redact_confirm.html", m=nb.get_moment(moment_id), reason=reason)
    nb.redact(moment_id, reason, who="owner")
    return back_to(moment_url(moment_id))
