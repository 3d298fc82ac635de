"""``create_app(settings)``: the HTTP server over one notebook.

The notebook is opened when the app starts (embedding new moments in the background) and
closed when it stops; the chat graph, the routers and the MCP servers share it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI
from pydantic import BaseModel

from .. import __version__
from ..notebook import Notebook
from . import chat, errors, export, notebook_api, sections_api
from .chat_service import ChatService
from .mcp_tools import build_mcp
from .settings import ServerSettings


class Health(BaseModel):
    status: str
    version: str
    notebook: str


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    """The FastAPI app: chat (seed 001) under ``/api/chat``, the notebook under ``/api``,
    MCP at ``/mcp/`` (owner tools) and ``/mcp-guest/`` (guest tools), OpenAPI at ``/docs``."""
    settings = settings or ServerSettings()
    owner_mcp = guest_mcp = None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from ..graph.models import offline_models

        nb = Notebook.open(settings.home, backend=settings.backend, background_embedding=True)
        try:
            app.state.notebook = nb
            app.state.chat = ChatService(
                nb,
                model=settings.model or nb.config.chat.model,
                models={**offline_models(), **settings.models},
            )
            async with AsyncExitStack() as stack:
                for server in (owner_mcp, guest_mcp):
                    if server is not None:
                        await stack.enter_async_context(server.session_manager.run())
                yield
        finally:
            nb.close()

    app = FastAPI(
        title="agent-notebook",
        version=__version__,
        summary="Memory for LLM agents: chat threads, the session notebook, the long-term "
        "notebook.",
        lifespan=lifespan,
    )
    errors.install(app)
    app.add_middleware(errors.BodySizeLimit, limit=settings.max_body_bytes)
    for module in (chat, notebook_api, sections_api, export):
        app.include_router(module.router, responses={"default": {"model": errors.ApiError}})

    @app.get("/api/health", tags=["notebook"])
    def health() -> Health:
        nb: Notebook = app.state.notebook
        return Health(status="ok", version=__version__, notebook=nb.backend.location)

    if settings.mcp:
        owner_mcp = build_mcp(lambda: app.state.notebook, owner=True, host=settings.host)
        guest_mcp = build_mcp(lambda: app.state.notebook, owner=False, host=settings.host)
        app.mount("/mcp", owner_mcp.streamable_http_app())
        app.mount("/mcp-guest", guest_mcp.streamable_http_app())
    return app
