"""Rendering the pages: one Jinja2 environment over the package's templates (autoescaped),
and what every page is given (who is asking, the CSRF token, the navigation)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape

from ..auth import access_of
from .csrf import csrf_token

_ENV = Environment(
    loader=PackageLoader("agent_notebook.server.web", "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


def _when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M")


def _day(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d")


def _pct(value: float, top: float = 1.0) -> str:
    """A bar's width in percent, clamped to 0..100."""
    share = 0.0 if top <= 0 else max(0.0, min(1.0, value / top))
    return f"{share * 100:.1f}%"


def concept_url(name: str) -> str:
    """A concept's page, every character escaped: Jinja's ``urlencode`` leaves "/" as it
    is, which would split a name such as "tcp/ip" into two path segments."""
    return f"/concepts/{quote(name, safe='')}"


def subject_url(name: str) -> str:
    """A subject's page (what is known about someone), every character escaped."""
    return f"/subjects/{quote(name, safe='')}"


_ENV.filters.update(
    when=_when, day=_day, pct=_pct, concept_url=concept_url, subject_url=subject_url
)


#: Every page: scripts and everything else only from this server, never in a frame.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' "
    "'unsafe-inline'; img-src 'self' data:; media-src 'self'; object-src 'none'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """``template`` rendered for the request's caller."""
    html = page_text(request, template, **context)
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


def page_text(request: Request, template: str, **context: Any) -> str:
    """``template`` rendered for the request's caller, as text (for a streamed page)."""
    access = access_of(request)
    return _ENV.get_template(template).render(
        request=request,
        guest=access.is_guest,
        who=access.grant.name,
        csrf=csrf_token(request),
        path=request.url.path,
        **context,
    )


def bare(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """A page for a caller not signed in (the sign-in page)."""
    html = _ENV.get_template(template).render(guest=False, who=None, csrf="", **context)
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)
