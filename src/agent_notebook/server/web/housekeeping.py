"""Housekeeping: a compaction preview (``compact --dry-run``), the doctor's report, guest
tokens (create, list, revoke) and the privacy settings in force."""

from __future__ import annotations

from collections.abc import Iterator
from html import escape
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse

from ...errors import NotebookError
from ...notebook.doctor import doctor
from ..auth import access_of
from .common import Checked, Nb, back_to
from .plots import bar_chart
from .render import SECURITY_HEADERS, page, page_text

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


#: Where a streamed page's first part ends: what comes before is sent at once.
_SPLIT = "<!--results-->"


@router.get("/housekeeping/compact", response_class=HTMLResponse)
def compact_preview(request: Request, nb: Nb) -> StreamingResponse:
    """What ``compact`` would do now: run on a copy, nothing changed. The dry run takes
    seconds on a large notebook, so the page is streamed: its header and a progress note
    at once, then the summary, the plots and the rollups that would drop something."""
    waiting = page_text(request, "compact.html", report=None).split(_SPLIT)[0]

    def parts() -> Iterator[str]:
        yield waiting
        try:
            report = nb.archive.compact(dry_run=True)
        except NotebookError as error:
            yield f'<p role="alert" class="error">{escape(str(error))}</p></main></body></html>'
            return
        charts = [
            bar_chart(
                [("before", report.active_before), ("after", report.active_after)],
                "Active moments, before and after",
                "moments",
            ),
            bar_chart(
                [("before", report.tokens_before), ("after", report.tokens_after)],
                "Active tokens, before and after",
                "tokens",
            ),
        ]
        losing = [i for i in report.manifest if i.dropped]
        done = page_text(request, "compact.html", report=report, charts=charts, losing=losing)
        yield done.split(_SPLIT, 1)[1]

    return StreamingResponse(parts(), media_type="text/html", headers=SECURITY_HEADERS)


@router.post("/housekeeping/tokens", response_class=HTMLResponse, dependencies=[Checked])
def create_token(request: Request, nb: Nb, name: Annotated[str, Form()]) -> HTMLResponse:
    """The new token is shown once, on this page; only its hash is kept."""
    token = access_of(request).tenant.tokens.create_guest(name)
    return _page(request, nb, created=(name, token))


@router.post("/housekeeping/tokens/{name}/revoke", dependencies=[Checked])
def revoke_token(request: Request, name: str, confirm: Annotated[str, Form()] = "") -> Response:
    """First a confirmation (the guest is refused from then on); with ``confirm=yes``, done."""
    if confirm != "yes":
        return page(request, "revoke_confirm.html", name=name)
    access_of(request).tenant.tokens.revoke(name)
    return back_to("/housekeeping#tokens")
