"""``create_app(settings)``: the HTTP server over one notebook, or several owners' notebooks.

Each notebook is opened when the app starts (embedding new moments in the background) and
closed when it stops; its chat graph, its MCP servers and its tokens go with it. Every
request's bearer token selects the notebook it sees (see :mod:`.auth`)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request, Security
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPBearer
from pydantic import BaseModel

from .. import __version__
from ..chat.service import ChatService
from ..config import DEFAULT_MAX_TEXT_BYTES
from ..errors import InvalidInput, StorageError
from ..notebook.facade import Notebook
from . import chat, errors, export, facts_api, notebook_api, sections_api, web
from .auth import ACCESS_KEY, Access, BearerAuth, McpByToken, Tenant, Tenants
from .mcp_tools import build_mcp
from .settings import ServerSettings, body_limit_for

log = logging.getLogger(__name__)


#: The bearer token in the OpenAPI description (Swagger UI's Authorize button). BearerAuth,
#: the middleware, checks it before any route runs; this dependency only declares it.
BEARER = Security(
    HTTPBearer(
        auto_error=False,
        scheme_name="bearer",
        description="The owner's token (in <home>/secrets/owner-token) or a guest's "
        "('agent-notebook token create --guest NAME').",
    )
)


class Health(BaseModel):
    status: str
    version: str
    #: The notebook's location, for its owner's token only (the endpoint needs none).
    notebook: str | None = None
    #: Why the server cannot serve now (with a 503 only).
    reason: str | None = None


def create_app(
    settings: ServerSettings | None = None, opened: list[Tenant] | None = None
) -> FastAPI:
    """The FastAPI app: chat (seed 001) under ``/api/chat``, the notebook under ``/api``,
    MCP at ``/mcp/`` (owner tools) and ``/mcp-guest/`` (guest tools), OpenAPI at ``/docs``,
    the web pages at ``/`` (:mod:`.web`); everything but ``/api/health``, the docs and the
    sign-in page needs a token. ``opened``: the notebooks :func:`open_tenants` opened before
    the server started (``serve`` does, so that a signal can stop a start-up that waits;
    their opener closes them); without it they are opened as the app starts."""
    settings = settings or ServerSettings()
    tenants = Tenants()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if opened is None:
                for home in settings.all_homes():
                    tenant = open_tenant(home, settings)
                    if tenant.tokens_created:
                        log.warning(
                            "created the owner token of %s: %s", home, tenant.tokens.owner_hint()
                        )
                    stack.callback(tenant.notebook.close)  # after the MCP servers below
                    tenants.items.append(tenant)
                _check_distinct(tenants)
            else:
                tenants.items.extend(opened)
            for tenant in tenants.items:
                await _start_mcp(tenant, settings, stack)
            app.state.tenants = tenants
            try:
                yield
            finally:
                tenants.items.clear()

    app = FastAPI(
        title="agent-notebook",
        version=__version__,
        summary="Memory for LLM agents: chat threads, the session notebook, the long-term "
        "notebook.",
        lifespan=lifespan,
        license_info={"name": "Apache-2.0", "identifier": "Apache-2.0"},
        servers=[{"url": "/", "description": "this server"}],
        docs_url=None,  # served by .web.docs over local assets: no CDN
        redoc_url=None,
    )
    errors.install(app, web_error=web.error_page)
    app.add_middleware(
        errors.BodySizeLimit,
        limit=lambda: body_limit(settings, tenants),
        read_timeout_s=settings.read_timeout_s,
    )
    app.add_middleware(BearerAuth, tenants=tenants)  # outermost: nothing runs before it
    for module in (chat, notebook_api, facts_api, sections_api, export):
        app.include_router(module.router, dependencies=[BEARER], responses=errors.API_ERRORS)

    @app.get(
        "/api/health",
        tags=["notebook"],
        response_model=Health,
        dependencies=[BEARER],
        responses=errors.documented_errors(401, 503),
    )
    def health(request: Request) -> Response:
        """Liveness and readiness; open without a token (an owner's token also gets the
        notebook's path). 503, with the reason and Retry-After, while a notebook's
        database cannot be reached."""
        access: Access | None = request.scope.get(ACCESS_KEY)
        where = None
        if access is not None and not access.is_guest:
            where = access.tenant.notebook.location
        reason = _unreachable(tenants)
        if reason is not None:
            if access is None or access.is_guest:  # no server paths to a stranger
                reason = "a notebook's database cannot be reached"
            body = Health(status="unavailable", version=__version__, notebook=where, reason=reason)
            return JSONResponse(
                body.model_dump(exclude_none=True),
                status_code=503,
                headers={"Retry-After": str(errors.RETRY_AFTER_S)},
            )
        body = Health(status="ok", version=__version__, notebook=where)
        return JSONResponse(body.model_dump(exclude={"reason"}))

    web.install(app)  # after the API: its routes never shadow one
    if settings.mcp:
        app.mount("/mcp", McpByToken(tenants, owner=True))
        app.mount("/mcp-guest", McpByToken(tenants, owner=False))
    return app


def open_tenants(settings: ServerSettings) -> list[Tenant]:
    """Open every home's notebook for the server (closing those opened when one fails)."""
    opened = Tenants()
    try:
        for home in settings.all_homes():
            opened.items.append(open_tenant(home, settings))
        _check_distinct(opened)
    except BaseException:
        for tenant in opened.items:
            tenant.notebook.close()
        raise
    return opened.items


def open_tenant(home: Path, settings: ServerSettings) -> Tenant:
    """One home's notebook, its tokens and its chat, with every table of a PostgreSQL
    notebook made now (no request waits on a migration: issue 28). Blocking: each wait in
    it is bounded and ends in a StorageError."""
    from ..chat.models import offline_models

    nb = Notebook.open(home, backend=settings.backend, background_embedding=True)
    try:
        nb.langgraph.set_up()
        nb.langgraph.start_ttl_sweeper()  # expired store items go while it serves (store: settings)
        tokens = nb.access_tokens()  # the database's for a Postgres notebook
        _, created = tokens.ensure_owner()
        chat = ChatService(
            nb,
            model=settings.model or nb.config.chat.model,
            models={**offline_models(), **settings.models},
        )
        _judge_facts(chat)
        return Tenant(tokens_created=created, home=home, tokens=tokens, notebook=nb, chat=chat)
    except BaseException:
        nb.close()
        raise


def _judge_facts(chat: ChatService) -> None:
    """``facts.judge``: ``facts.judge_model``, else the server's chat model, judges what the
    fact rules propose; with no model that can be made, the rules decide alone (and the log
    says why)."""
    from ..chat.models import attach_fact_judge

    facts = chat.nb.config.facts
    if not (facts.enabled and facts.judge):
        return
    try:
        attach_fact_judge(chat.nb, chat.models)
    except Exception as err:  # noqa: BLE001 - no model, no provider package, no key…
        log.warning("facts.judge is on but no chat model can judge: %s", err)


async def _start_mcp(tenant: Tenant, settings: ServerSettings, stack: AsyncExitStack) -> None:
    if settings.mcp:
        nb = tenant.notebook
        owner = build_mcp(nb, owner=True, host=settings.host)
        guest = build_mcp(nb, owner=False, host=settings.host)
        tenant.owner_mcp = owner.streamable_http_app()  # also makes its session manager
        tenant.guest_mcp = guest.streamable_http_app()
        for server in (owner, guest):
            await stack.enter_async_context(server.session_manager.run())


def _unreachable(tenants: Tenants) -> str | None:
    """Why a notebook's database cannot be reached now (None: each answers)."""
    for tenant in tenants.items:
        try:
            tenant.notebook.check_reachable()
        except StorageError as err:
            return str(err)
    return None


def body_limit(settings: ServerSettings, tenants: Tenants) -> int:
    """``--max-body``, else room for one moment as long as the notebooks' text limit allows."""
    if settings.max_body_bytes is not None:
        return settings.max_body_bytes
    texts = [t.notebook.config.moments.max_text_bytes for t in tenants.items]
    return body_limit_for(max(texts, default=DEFAULT_MAX_TEXT_BYTES))


def _check_distinct(tenants: Tenants) -> None:
    """Two homes with one owner token (a copied home) would make the token ambiguous."""
    seen: dict[str, str] = {}
    for tenant in tenants.items:
        token, _ = tenant.tokens.ensure_owner()  # made already: this only reads it
        if token is None:  # a database's, made elsewhere: its hash is this notebook's own
            continue
        if token in seen:
            raise InvalidInput(
                f"{tenant.home} and {seen[token]} have the same owner token: delete "
                f"its owner token ({tenant.tokens.owner_hint()}) and start again to make a new one"
            )
        seen[token] = str(tenant.home)
