"""Errors as JSON a person (or a model) can act on: ``{"error", "detail", "fix"}``.

401 a missing or wrong bearer token, 403 a guest token off its routes, 404 an unknown id,
409 a conflict (a stale ``If-Match`` too), 413 an oversized body (or a guest's write-back
past a size cap), 422 invalid input, 429 a guest's write-back past a count cap; a bad
request never gets a 5xx and changes nothing. 502 a model's provider failed (the chat model:
``ModelFailed``; the summarizer's: ``SummaryFailed``; the session-notebook updater's:
``UpdateFailed``), 503 the backend or a missing model setting, 500 only a bug. Library
errors keep their own message (which says what was wrong) as ``detail``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..core.validation import describe_errors
from ..errors import (
    Conflict,
    InvalidInput,
    MissingDependency,
    ModelNotConfigured,
    NotebookError,
    NotFound,
    OverLimit,
    RateLimited,
    StorageError,
    SummaryFailed,
    UpdateFailed,
)
from ..errors import Forbidden as Forbidden  # re-export: was defined here
from ..errors import ModelFailed as ModelFailed  # re-export: was defined here
from .guest_rights import hide_places

log = logging.getLogger(__name__)

#: The Retry-After (seconds) of a 503 that a retry may cure: a database that cannot be
#: reached now (restarting, failing over, every pooled connection busy).
RETRY_AFTER_S = 2

#: Set by :class:`~.auth.BearerAuth` on a guest's request: the places on disk (and what to
#: show instead) that no error sent to this caller may name.
HIDDEN_PLACES_KEY = "agent_notebook.hidden_places"

FIXES: dict[int, str] = {
    400: "send a well-formed HTTP request",
    401: "send 'Authorization: Bearer <token>': the owner's token is in "
    "<home>/secrets/owner-token; a guest gets one from the owner ('agent-notebook token "
    "create --guest NAME')",
    403: "use a route your token may use, or ask the notebook's owner to do this",
    404: "check the id or the path; the list endpoints (GET /api/sessions, "
    "GET /api/chat/sessions) say what exists, and /docs lists every path",
    405: "use one of the methods /docs lists for this path",
    408: "send the whole body without pausing (the server waits a limited time for each "
    "part of it: serve --read-timeout)",
    409: "read the record again (its ETag header is current), reapply your change to it "
    "and send it again with that ETag in If-Match",
    413: "send a smaller body: split long texts into several moments, or start the server "
    "with a larger --max-body",
    429: "wait for the Retry-After header's seconds when it is given; a cap without one "
    "(write-backs per session) is set by the notebook's owner, under guests: in config.yaml",
    502: "a model's provider failed (the detail says which: the chat model, the summarizer or "
    "the session-notebook updater); retry, or pick another model (model_override, or "
    "chat.model in config.yaml)",
    422: "correct what the detail names and send the request again; nothing was changed",
    501: "install the optional part the detail names, then restart the server",
    503: "the server cannot do this now; the detail says what to set up or when to retry "
    "(a Retry-After header: retry after that many seconds)",
    500: "this is a bug in agent-notebook; report it with the request that caused it",
}
TITLES: dict[int, str] = {
    400: "bad request",
    401: "unauthorized",
    403: "forbidden",
    404: "not found",
    405: "method not allowed",
    408: "request timeout",
    409: "conflict",
    413: "request body too large",
    429: "too many requests",
    422: "invalid input",
    501: "not installed",
    502: "bad gateway",
    503: "unavailable",
    500: "internal error",
}


#: Where errors are JSON; elsewhere (the web pages) a page says what went wrong.
API_ROOTS = ("/api", "/mcp", "/mcp-guest")
#: How a web page shows an error: ``(request, status, detail) -> response``.
WebError = Callable[[Request, int, str], Response]


def is_api_path(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in API_ROOTS)


class ApiError(BaseModel):
    """Every error response's body."""

    error: str
    detail: str
    fix: str


def documented_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of the errors an endpoint may answer, each with the
    :class:`ApiError` body and what to do about it, and ``default`` for the rest."""
    described: dict[int | str, dict[str, Any]] = {
        status: {"model": ApiError, "description": f"{TITLES[status]}: {FIXES[status]}"}
        for status in statuses
    }
    described["default"] = {"model": ApiError, "description": "any other error"}
    return described


#: What every endpoint of the API may answer: no or a wrong token, a token that may not do
#: this, and input that fails its checks.
API_ERRORS = documented_errors(401, 403, 422)


#: The fix of a guest's write-back past a size cap (a 413 that is not about the body).
CAP_FIX = (
    "write less: the detail names the cap (guests: in the notebook's config.yaml) and its "
    "value, which only the owner can change"
)


def error_response(status: int, detail: str, fix: str | None = None) -> JSONResponse:
    body = ApiError(
        error=TITLES.get(status, "error"), detail=detail, fix=fix or FIXES.get(status, "")
    )
    return JSONResponse(body.model_dump(), status_code=status)


def status_of(err: NotebookError) -> int:
    if isinstance(err, NotFound):
        return 404
    if isinstance(err, Forbidden):
        return 403
    if isinstance(err, Conflict):
        return 409
    if isinstance(err, OverLimit):
        return 429 if isinstance(err, RateLimited) else 413
    if isinstance(err, InvalidInput):
        return 422
    if isinstance(err, MissingDependency):
        return 501
    if isinstance(err, StorageError | ModelNotConfigured):
        return 503
    if isinstance(err, ModelFailed | SummaryFailed | UpdateFailed):
        return 502
    return 500


class _BodyTooLarge(HTTPException):
    """Raised while reading a body past the limit (FastAPI re-raises HTTP exceptions).

    Private, outside the tree of ``agent_notebook.errors``: Starlette turns it into the 413
    response, it never reaches a caller."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than {limit} bytes")


class _BodyTimeout(HTTPException):
    """Raised when a client pauses mid-body longer than the read timeout.

    Private, like :class:`_BodyTooLarge`: Starlette turns it into the 408 response."""

    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"the request body stopped arriving for {seconds:g} s")


class BodySizeLimit:
    """ASGI middleware: a body over ``limit()`` bytes gets 413, by its Content-Length up
    front or, without one, as soon as the bytes read pass the limit. ``limit`` is asked at
    each request: it follows the notebooks' text limit, known once they are open. Until the
    body's last part has come, each wait for the next part lasts at most ``read_timeout_s``
    (then a 408): a client that sends half a body and holds the connection does not hold a
    request open (nor a server's shutdown) for longer."""

    def __init__(
        self, app: ASGIApp, limit: Callable[[], int], read_timeout_s: float | None = None
    ) -> None:
        self.app = app
        self.limit_of = limit
        self.read_timeout_s = read_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_of()
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            detail = f"the request body is larger than {limit} bytes"
            if not declared.isdigit():
                detail = "the Content-Length header is not a number"
            response = error_response(413 if declared.isdigit() else 400, detail)
            await response(scope, receive, send)
            return
        seen = 0
        whole = False  # the body's last part has come: later waits (a disconnect) are unbounded

        async def counted() -> Message:
            nonlocal seen, whole
            message = await self._next(receive, whole)
            if message["type"] == "http.request":
                whole = not message.get("more_body", False)
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _BodyTooLarge(limit)
            return message

        await self.app(scope, counted, send)

    async def _next(self, receive: Receive, whole: bool) -> Message:
        if whole or self.read_timeout_s is None:
            return await receive()
        try:
            with anyio.fail_after(self.read_timeout_s):
                return await receive()
        except TimeoutError:
            raise _BodyTimeout(self.read_timeout_s) from None


def shown_to(request: Request, detail: str) -> str:
    """``detail`` as this request's caller may see it (a guest: without the server's paths)."""
    places = request.scope.get(HIDDEN_PLACES_KEY)
    return detail if not places else hide_places(detail, places)


def install(app: FastAPI, web_error: WebError | None = None) -> None:
    """Register the handlers that turn every error into :class:`ApiError` JSON (or, off the
    API's paths, into ``web_error``'s page when given)."""

    def respond(request: Request, status: int, detail: str, fix: str | None = None) -> Response:
        if web_error is not None and not is_api_path(request.url.path):
            return web_error(request, status, detail)
        return error_response(status, detail, fix)

    @app.exception_handler(NotebookError)
    async def notebook_error(request: Request, err: NotebookError) -> Response:
        status = status_of(err)
        if status >= 500:
            log.error("%s %s: %s", request.method, request.url.path, err)
        fix = CAP_FIX if isinstance(err, OverLimit) and status == 413 else None
        response = respond(request, status, shown_to(request, str(err)), fix)
        if isinstance(err, StorageError):
            response.headers["Retry-After"] = str(RETRY_AFTER_S)
        if isinstance(err, OverLimit) and err.retry_after_s is not None:
            response.headers["Retry-After"] = str(err.retry_after_s)
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, err: RequestValidationError) -> Response:
        return respond(request, 422, describe(err.errors(), _body_model(request)))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException) -> Response:
        response = respond(request, err.status_code, shown_to(request, str(err.detail)))
        if err.headers:
            response.headers.update(err.headers)
        return response

    @app.exception_handler(Exception)
    async def unexpected(request: Request, err: Exception) -> Response:
        log.exception("%s %s failed", request.method, request.url.path, exc_info=err)
        return respond(request, 500, shown_to(request, f"{type(err).__name__}: {err}"))


def describe(errors: Any, body: type[BaseModel] | None = None) -> str:
    """FastAPI's validation errors as one line: ``body.text: Field required; …``; an unknown
    field of the ``body`` model is named with the valid ones."""
    return describe_errors(errors, body, ("body",)) or "invalid request"


def _body_model(request: Request) -> type[BaseModel] | None:
    """The model of the route's JSON body, if it has one."""
    field = getattr(request.scope.get("route"), "body_field", None)
    model = getattr(getattr(field, "field_info", None), "annotation", None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None
