"""Housekeeping: a compaction preview (``compact --dry-run``), the doctor's report, guest
tokens (create, list, revoke) and the privacy settings in force."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, Response

from ...notebook.doctor import doctor
from ..auth import access_of
from .common import Checked, Nb, back_to
from .plots import paired_chart
from .render import page

router = APIRouter(include_in_schema=False)


def _page(request: Request, nb: Nb, created: tuple[str, str] | None = None) -> HTMLResponse:
    tokens = access_of(request).tenant.tokens
    return page(
        request,
        "housekeeping.html",
        report=doctor(nb),
        privacy=nb.config.privacy,
        tokens=tokens.listing(),
        created=created,
    )


@router.get("/housekeeping", response_class=HTMLResponse)
def housekeeping(request: Request, nb: Nb) -> HTMLResponse:
    return _page(request, nb)


@router.get("/housekeeping/compact", response_class=HTMLResponse)
def compact_preview(request: Request, nb: Nb) -> HTMLResponse:
    """What ``compact`` would do now: run on a copy, nothing changed."""
    report = nb.compact(dry_run=True)
    chart = paired_chart(
        [
            ("moments", report.active_before, report.active_after),
            ("tokens", report.tokens_before, report.tokens_after),
        ],
        "Active moments and tokens, before and after compaction",
    )
    return page(request, "compact.html", report=report, chart=chart)


@router.post("/housekeeping/tokens", response_class=HTMLResponse, dependencies=[Checked])
def create_token(request: Request, nb: Nb, name: Annotated[str, Form()]) -> HTMLResponse:
    """The new token is shown once, on this page; only its hash is kept."""
    token = access_of(request).tenant.tokens.create_guest(name)
    return _page(request, nb, created=(name, token))


@router.post("/housekeeping/tokens/{name}/revoke", dependencies=[Checked])
def revoke_token(request: Request, name: str) -> Response:
    access_of(request).tenant.tokens.revoke(name)
    return back_to("/housekeeping#tokens")
