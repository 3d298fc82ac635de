"""Signing in to the web pages, and signing out.

The owner (or a guest) types a token into ``/signin``; it is checked like a bearer token and
a sign-in session is made for it (:mod:`agent_notebook.privacy.web_sessions`, kept beside
the tokens, so every server of a PostgreSQL notebook honours it). The
:data:`~..auth.COOKIE` cookie holds the session's random id, never the token: HttpOnly (no
script reads it), SameSite=Strict (no other site's page sends it), Secure over HTTPS.
Signing out ends the session on the server, so a copy of the cookie stops working too. A
script sends ``Authorization: Bearer <token>`` instead and needs no cookie. The forms'
CSRF token and its check are :mod:`.csrf`, which the pages (:mod:`.render`) use too."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ..auth import ACCESS_KEY, COOKIE, VIA_COOKIE_KEY, Access, Tenants, cookie_token
from ..errors import Forbidden
from .csrf import csrf_checked, same_origin
from .render import bare

router = APIRouter(include_in_schema=False)


def _tenants(request: Request) -> Tenants:
    tenants: Tenants = request.app.state.tenants
    return tenants


def _local(target: str) -> str:
    """Only a path on this server is a place to go back to after signing in."""
    return target if target.startswith("/") and not target.startswith("//") else "/"


@router.get("/signin", response_class=HTMLResponse)
def signin_form(request: Request, next: str = "/") -> HTMLResponse:
    return bare("signin.html", next=_local(next), error=None)


@router.post("/signin")
def signin(
    request: Request, token: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "/"
) -> Response:
    if not same_origin(request):
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
async def signout(request: Request) -> Response:
    """End the cookie's session on the server and forget the cookie (the token itself stays
    valid: revoke a guest's on Housekeeping). A signed-in cookie must come with the page's
    CSRF token, like every form that changes something: another site cannot sign you out."""
    session = cookie_token(request.scope)
    access: Access | None = request.scope.get(ACCESS_KEY)
    if session is not None and access is not None and request.scope.get(VIA_COOKIE_KEY):
        await csrf_checked(request)  # Forbidden (403), the session kept, when it is missing
        await run_in_threadpool(access.tenant.tokens.sessions.close, session)
    response = RedirectResponse("/signin", status_code=303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response
