"""The API docs (Swagger UI at ``/docs``, ReDoc at ``/redoc``) with every asset served
from this server, so they work offline. The assets come from the ``fastapi-offline``
package; without it the docs are a small local page that links to ``/openapi.json``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"


def _assets() -> Path | None:
    try:
        found = Path(str(resources.files("fastapi_offline") / "static"))
    except ModuleNotFoundError:
        return None
    return found if (found / "swagger-ui-bundle.js").is_file() else None


def _fallback(app: FastAPI, what: str) -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{app.title} - "
        f"{what}</title><link rel='stylesheet' href='/static/app.css'></head><body><main>"
        f"<h1>{app.title} API</h1><p>{what} needs the <code>fastapi-offline</code> package "
        "(it ships Swagger UI and ReDoc); the API's description is at "
        "<a href='/openapi.json'>/openapi.json</a>.</p></main></body></html>"
    )


def install(app: FastAPI) -> None:
    """``/docs``, ``/docs/oauth2-redirect`` and ``/redoc``, over local assets (the app is
    made with ``docs_url=None, redoc_url=None``)."""
    assets = _assets()
    if assets is not None:
        app.mount(ASSETS, StaticFiles(directory=assets), name="docs-assets")
    openapi = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        if assets is None:
            return _fallback(app, "Swagger UI")
        return get_swagger_ui_html(
            openapi_url=openapi,
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url="/docs/oauth2-redirect",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url="/static/favicon.svg",
        )

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    def oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        if assets is None:
            return _fallback(app, "ReDoc")
        return get_redoc_html(
            openapi_url=openapi,
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{ASSETS}/redoc.standalone.js",
            redoc_favicon_url="/static/favicon.svg",
            with_google_fonts=False,
        )
