"""Bearer tokens on the HTTP server: who is asking, and which notebook they may see.

Every request under ``/api`` and both MCP mounts carries ``Authorization: Bearer <token>``.
The web pages (everything else, see :mod:`.web`) take the same header, or the sign-in
cookie :data:`COOKIE` that ``/signin`` sets (HttpOnly, SameSite=Strict): it holds a session
id, never the token (see :mod:`agent_notebook.privacy.web_sessions`); the cookie is never
taken under ``/api`` or the MCP mounts, and a page's state-changing request also needs a
CSRF token that the cookie alone cannot provide (see :mod:`.web.csrf`).
The token selects the notebook (each home has its own tokens, see
:mod:`agent_notebook.privacy.tokens`), so several owners share one server without seeing each
other's ids: another owner's session simply is not in your notebook (404). An owner token may
do everything; a guest token only what seed 002 gives a guest, as :mod:`.guest_rights`
defines it once for HTTP and MCP: read a slice and write back. ``/api/health``, the API
docs, the sign-in page and the static files stay open (they hold no notebook data).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from html import escape
from pathlib import Path
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request, cookie_parser
from starlette.responses import HTMLResponse, RedirectResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..chat.service import ChatService
from ..errors import NotebookError, StorageError
from ..notebook.facade import Notebook
from ..privacy.tokens import Grant, Tokens, web_session_grant
from .errors import (
    HIDDEN_PLACES_KEY,
    RETRY_AFTER_S,
    Forbidden,
    error_response,
    is_api_path,
    status_of,
)
from .guest_rights import GUEST_MAY, guest_may_request, hide_places, notebook_places

log = logging.getLogger(__name__)

#: Where the middleware leaves the caller's :class:`Access` in the ASGI scope.
ACCESS_KEY = "agent_notebook.access"
#: Open without a token: liveness and the API's description, no notebook data.
OPEN_PATHS = frozenset(
    {
        "/api/health",
        "/docs",
        "/docs/oauth2-redirect",
        "/redoc",
        "/openapi.json",
        "/signin",
        "/signout",
    }
)
#: Open too: the web pages' scripts and styles, and the API docs' assets (no notebook data).
OPEN_PREFIXES = ("/static/", "/docs-assets/", "/docs-local/")
#: The web pages' sign-in cookie: a session id (not the token), HttpOnly, SameSite=Strict.
COOKIE = "agent_notebook_session"
#: Set in the ASGI scope when the caller came with the cookie (not a bearer header): its
#: state-changing requests must then carry the CSRF token (see :mod:`.web.csrf`).
VIA_COOKIE_KEY = "agent_notebook.via_cookie"


@dataclass
class Tenant:
    """One owner's notebook on the server, with what the server keeps for it."""

    home: Path
    tokens: Tokens
    notebook: Notebook
    chat: ChatService
    owner_mcp: ASGIApp | None = None
    guest_mcp: ASGIApp | None = None
    #: Whether the owner's token was made as the notebook was opened.
    tokens_created: bool = False


@dataclass(frozen=True)
class Access:
    """A request's caller: whose notebook, and as owner or as which guest."""

    tenant: Tenant
    grant: Grant

    @property
    def is_guest(self) -> bool:
        return self.grant.role == "guest"


class Tenants:
    """The notebooks the server holds, filled when the app starts."""

    def __init__(self) -> None:
        self.items: list[Tenant] = []

    def places(self) -> dict[str, str]:
        """Every notebook's places on disk (see :func:`.guest_rights.notebook_places`)."""
        return {k: v for t in self.items for k, v in notebook_places(t.notebook).items()}

    def identify(self, token: str) -> Access | None:
        for tenant in self.items:
            grant = tenant.tokens.identify(token)
            if grant is not None:
                return Access(tenant, grant)
        return None

    def identify_session(self, session: str) -> Access | None:
        """The caller of a web sign-in session (the cookie), while it and its token live."""
        for tenant in self.items:
            grant = web_session_grant(tenant.tokens, session)
            if grant is not None:
                return Access(tenant, grant)
        return None


def bearer(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer …`` header, if any."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = bytes(value).decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def cookie_token(scope: Scope) -> str | None:
    """The session id of the web pages' sign-in cookie, if any."""
    for name, value in scope["headers"]:
        if name == b"cookie":
            token = cookie_parser(bytes(value).decode("latin-1")).get(COOKIE, "").strip()
            if token:
                return token
    return None


def web_refusal(status: int, detail: str, *, guest: bool = False) -> HTMLResponse:
    """What a browser is shown for a page it may not see (the API answers JSON instead)."""
    home = "/slice" if guest else "/signin"
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>agent-notebook</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="/static/app.css"></head><body><main class="narrow">'
        f'<h1>{status}</h1><p role="alert">{escape(detail)}</p>'
        f'<p><a href="{home}">{"Your slice" if guest else "Sign in"}</a></p></main></body></html>'
    )
    return HTMLResponse(body, status_code=status)


class BearerAuth:
    """ASGI middleware: 401 without a valid token, 403 for a guest off its routes; the
    caller's :class:`Access` goes into the scope for the routes and the MCP mounts."""

    def __init__(self, app: ASGIApp, tenants: Tenants) -> None:
        self.app = app
        self.tenants = tenants

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":  # no websocket routes: refuse, never serve
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        web = not is_api_path(path)  # the API and MCP never take the cookie
        token = bearer(scope)
        via_cookie = token is None and web and (token := cookie_token(scope)) is not None
        try:
            # in a worker thread: a PostgreSQL notebook's tokens are a query away
            identify = self.tenants.identify_session if via_cookie else self.tenants.identify
            access = None if token is None else await run_in_threadpool(identify, token)
        except NotebookError as err:  # an unreadable token file: the log says which
            log.error("%s %s: %s", method, path, err)
            if path in OPEN_PATHS:  # /api/health still answers (and says why it cannot)
                access = None
            else:
                detail = hide_places(str(err), self.tenants.places())  # the caller is unknown
                response = error_response(status_of(err), detail)
                if isinstance(err, StorageError):  # the database, unreachable for now
                    response.headers["Retry-After"] = str(RETRY_AFTER_S)
                await response(scope, receive, send)
                return
        if access is not None:
            scope[ACCESS_KEY] = access
            if via_cookie:
                scope[VIA_COOKIE_KEY] = True
            if access.is_guest:  # what the error handlers hide from this caller
                scope[HIDDEN_PLACES_KEY] = notebook_places(access.tenant.notebook)
        if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        if access is None and web:  # a browser: to the sign-in page, then back here
            if method in ("GET", "HEAD"):
                target = quote(
                    path
                    + (
                        "?" + scope["query_string"].decode("latin-1")
                        if scope["query_string"]
                        else ""
                    ),
                    safe="",
                )
                await RedirectResponse(f"/signin?next={target}", status_code=303)(
                    scope, receive, send
                )
            else:
                await web_refusal(401, "sign in first: your session has ended")(
                    scope, receive, send
                )
            return
        if access is None:
            detail = (
                "this request needs 'Authorization: Bearer <token>'"
                if token is None
                else "the Bearer token is not valid on this server (wrong or revoked)"
            )
            response = error_response(401, detail)
            challenge = 'Bearer realm="agent-notebook"'
            if token is not None:
                challenge += ', error="invalid_token"'
            response.headers["WWW-Authenticate"] = challenge
            await response(scope, receive, send)
            return
        if access.is_guest and not guest_may_request(method, path):
            detail = f"{method} {path} is not for guests: {GUEST_MAY}"
            refusal = web_refusal(403, detail, guest=True) if web else error_response(403, detail)
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)


def access_of(request: Request) -> Access:
    """The caller of a request that passed :class:`BearerAuth`."""
    access: Access | None = request.scope.get(ACCESS_KEY)
    if access is None:  # only an open path gets here without one, and none reads a notebook
        raise Forbidden("this request needs 'Authorization: Bearer <token>'")
    return access


class McpByToken:
    """The MCP mount (``/mcp`` or ``/mcp-guest``): the caller's own notebook's MCP server."""

    def __init__(self, tenants: Tenants, *, owner: bool) -> None:
        self.tenants = tenants
        self.owner = owner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        access: Access | None = scope.get(ACCESS_KEY)
        if access is None:  # BearerAuth lets none through; a mount outside it fails closed
            await error_response(401, "this request needs a bearer token")(scope, receive, send)
            return
        target = access.tenant.owner_mcp if self.owner else access.tenant.guest_mcp
        if target is None:
            await error_response(404, "the MCP server is off on this server")(scope, receive, send)
            return
        await target(scope, receive, send)
