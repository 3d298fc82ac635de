"""The HTTP server (FastAPI) and the MCP server: memory as a service for any agent.

``create_app(settings)`` builds the HTTP app: the chat endpoints of seed 001 under
``/api/chat``, the notebook's under ``/api``, OpenAPI at ``/docs`` and the MCP server mounted
at ``/mcp`` (owner tools) and ``/mcp-guest`` (guest tools). ``agent-notebook serve`` runs it
with uvicorn; ``agent-notebook mcp`` serves the MCP tools over stdio. Every request but
``/api/health`` and the docs carries a bearer token, which picks the notebook (one server may
hold several owners') and says owner or guest; see :mod:`.auth`.
"""

from __future__ import annotations

from .app import create_app
from .settings import ServerSettings

__all__ = ["ServerSettings", "create_app"]
