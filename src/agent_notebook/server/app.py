"""``create_app(settings)``: the HTTP server over one notebook, or several owners' notebooks.

Each notebook is opened when the app starts (embedding new moments in the background) and
closed when it stops; its chat graph, its MCP servers and its tokens go with it. Every
request's bearer token selects the notebook it sees (see :mod:`.auth`)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from pydantic import BaseModel

from .. import __version__
from ..config import DEFAULT_MAX_TEXT_BYTES
from ..errors import InvalidInput
from ..notebook.facade import Notebook
from ..privacy.tokens import tokens_of
from . import chat, errors, export, notebook_api, sections_api, web
from .auth import ACCESS_KEY, Access, BearerAuth, McpByToken, Tenant, Tenants
from .chat_service import ChatService
from .mcp_tools import build_mcp
from .settings import ServerSettings, body_limit_for

log = logging.getLogger(__name__)


class Health(BaseModel):
    status: str
    version: str
    #: The notebook's location, for its owner's token only (the endpoint needs none).
    notebook: str | None = None


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    """The FastAPI app: chat (seed 001) under ``/api/chat``, the notebook under ``/api``,
    MCP at ``/mcp/`` (owner tools) and ``/mcp-guest/`` (guest tools), OpenAPI at ``/docs``,
    the web pages at ``/`` (:mod:`.web`); everything but ``/api/health``, the docs and the
    sign-in page needs a token."""
    settings = settings or ServerSettings()
    tenants = Tenants()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for home in settings.all_homes():
                tenants.items.append(await _open_tenant(home, settings, stack))
            _check_distinct(tenants)
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
        docs_url=None,  # served by .web.docs over local assets: no CDN
        redoc_url=None,
    )
    errors.install(app, web_error=web.error_page)
    app.add_middleware(errors.BodySizeLimit, limit=lambda: body_limit(settings, tenants))
    app.add_middleware(BearerAuth, tenants=tenants)  # outermost: nothing runs before it
    for module in (chat, notebook_api, sections_api, export):
        app.include_router(module.router, responses={"default": {"model": errors.ApiError}})

    @app.get("/api/health", tags=["notebook"])
    def health(request: Request) -> Health:
        """Liveness; open without a token (an owner's token also gets the notebook's path)."""
        access: Access | None = request.scope.get(ACCESS_KEY)
        where = None
        if access is not None and not access.is_guest:
            where = access.tenant.notebook.backend.location
        return Health(status="ok", version=__version__, notebook=where)

    web.install(app)  # after the API: its routes never shadow one
    if settings.mcp:
        app.mount("/mcp", McpByToken(tenants, owner=True))
        app.mount("/mcp-guest", McpByToken(tenants, owner=False))
    return app


async def _open_tenant(home: Path, settings: ServerSettings, stack: AsyncExitStack) -> Tenant:
    from ..chat.models import offline_models

    nb = Notebook.open(home, backend=settings.backend, background_embedding=True)
    stack.callback(nb.close)  # after the MCP servers below have stopped
    tokens = tokens_of(home, nb.backend)  # the database's for a Postgres notebook
    _, created = tokens.ensure_owner()
    if created:
        log.warning("created the owner token of %s: %s", home, tokens.owner_hint())
    tenant = Tenant(
        home=home,
        tokens=tokens,
        notebook=nb,
        chat=ChatService(
            nb,
            model=settings.model or nb.config.chat.model,
            models={**offline_models(), **settings.models},
        ),
    )
    if settings.mcp:
        owner = build_mcp(nb, owner=True, host=settings.host)
        guest = build_mcp(nb, owner=False, host=settings.host)
        tenant.owner_mcp = owner.streamable_http_app()  # also makes its session manager
        tenant.guest_mcp = guest.streamable_http_app()
        for server in (owner, guest):
            await stack.enter_async_context(server.session_manager.run())
    return tenant


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
