"""Keeping the pages' forms safe from other sites (CSRF), for the pages (:mod:`.render`)
and the sign-in (:mod:`.signin`) alike.

A request that came with the cookie and changes something must also carry the CSRF token,
in a form's ``csrf`` field or an ``X-CSRF-Token`` header. The token is an HMAC of the
session id (or of a bearer token), printed into the pages: another site can make a browser
send the cookie, but it cannot read a page to learn the CSRF token. A foreign ``Origin`` is
refused too."""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlsplit

from fastapi import Request

from ..auth import ACCESS_KEY, VIA_COOKIE_KEY, bearer, cookie_token
from ..errors import Forbidden

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


def same_origin(request: Request) -> bool:
    """Whether the request came from this server's own page (or from no page at all)."""
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
    if not same_origin(request):
        raise Forbidden("this request came from another site's page; nothing was changed")
    if offered is None or not hmac.compare_digest(offered, csrf_token(request)):
        raise Forbidden(
            "the form's CSRF token is missing or stale (signed in again elsewhere?): reload "
            "the page and send it again; nothing was changed"
        )
