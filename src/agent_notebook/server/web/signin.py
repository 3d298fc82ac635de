"""Signing in to the web pages, and keeping their forms safe from other sites (CSRF).

The owner (or a guest) types a token into ``/signin``; it is checked like a bearer token and
a sign-in session is made for it (:mod:`agent_notebook.privacy.web_sessions`, kept beside
the tokens, so every server of a PostgreSQL notebook honours it). The
:data:`~..auth.COOKIE` cookie holds the session's random id, never the token: HttpOnly (no
script reads it), SameSite=Strict (no other site's page sends it), Secure over HTTPS.
Signing out ends the session on the server, so a copy of the cookie stops working too. A
script sends ``Authorization: Bearer <token>`` instead and needs no cookie.

CSRF: a request that came with the cookie and changes something must also carry the CSRF
token, in a form's ``csrf`` field or an ``X-CSRF-Token`` header. The token is an HMAC of the
session id (or of a bearer token), printed into the pages: another site can make a browser send the cookie, but
it cannot read a page to learn the CSRF token. A foreign ``Origin`` is refused too."""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ..auth import ACCESS_KEY, COOKIE, VIA_COOKIE_KEY, Access, Tenants, bearer, cookie_token
from ..errors import Forbidden

router = APIRouter(include_in_schema=False)
_CSRF_CONTEXT = b"agent-notebook web csrf v1"


def request_token(request: Request) -> str | None:
    """The secret the request came with: its bearer token, else the cookie's session id."""
    return bearer(request.scope) or cookie_token(request.scope)


def csrf_token(request: Request) -> str:
    """The CSRF token of the request's sign-in ('' for a caller not signed in)."""
    token = request_token(request)
    if token is None or request.scope.get(ACCESS_KEY) is None:
        return ""
    return hmac.new(token.encode(), _CSRF_CONTEXT, hashlib.sha256).hexdigest()[:40]


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == request.headers.get("host", "")


async def csrf_checked(request: Request) -> None:
    """A dependency of every state-changing page route: refuse a cookie-borne request
    without the page's CSRF token (a bearer header needs none: no browser adds it)."""
    if not request.scope.get(VIA_COOKIE_KEY):
        return
    offered = request.headers.get("x-csrf-token")
    if offered is None:
        form = await request.form()  # parsed once: the route's Form fields read the same
        value = form.get("csrf")
        offered = value if isinstance(value, str) else None
    if not _same_origin(request):
        raise Forbidden("this request came from another site's page; nothing was changed")
    if offered is None or not hmac.compare_digest(offered, csrf_token(request)):
        raise Forbidden(
            "the form's CSRF token is missing or stale (signed in again elsewhere?): reload "
            "the page and send it again; nothing was changed"
        )


def _tenants(request: Request) -> Tenants:
    tenants: Tenants = request.app.state.tenants
    return tenants


def _local(target: str) -> str:
    """Only a path on this server is a place to go back to after signing in."""
    return target if target.startswith("/") and not target.startswith("//") else "/"


@router.get("/signin", response_class=HTMLResponse)
def signin_form(request: Request, next: str = "/") -> HTMLResponse:
    from .render import bare

    return bare("signin.html", next=_local(next), error=None)


@router.post("/signin")
def signin(
    request: Request, token: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "/"
) -> Response:
    from .render import bare

    if not _same_origin(request):
        raise Forbidden("a sign-in from another site's page is refused")
    access: Access | None = _tenants(request).identify(token.strip()) if token.strip() else None
    if access is None:
        error = "That token is not valid on this server (wrong or revoked)."
        return bare("signin.html", status=401, next=_local(next), error=error)
    session = access.tenant.tokens.sessions.open(token.strip())
    target = "/slice" if access.is_guest else _local(next)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        COOKIE,
        session,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


@router.post("/signout")
def signout(request: Request) -> Response:
    """End the cookie's session on the server and forget the cookie (the token itself stays
    valid: revoke a guest's on Housekeeping)."""
    session = cookie_token(request.scope)
    access: Access | None = request.scope.get(ACCESS_KEY)
    if session is not None and access is not None and request.scope.get(VIA_COOKIE_KEY):
        access.tenant.tokens.sessions.close(session)
    response = RedirectResponse("/signin", status_code=303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response
