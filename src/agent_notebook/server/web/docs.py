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
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"
#: ReDoc's bundle draws its footer's logo from cdn.redoc.ly: served with that address
#: changed to this server's icon, nothing the docs load leaves the machine.
REDOC_JS = "/docs-local/redoc.standalone.js"
_REDOC_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
#: The docs pages load only from this server (their inline start-up script aside).
DOCS_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self' 'unsafe-inline'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
    "worker-src 'self' blob:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}


def _assets() -> Path | None:
    try:
        found = Path(str(resources.files("fastapi_offline") / "static"))
    except ModuleNotFoundError:
        return None
    return found if (found / "swagger-ui-bundle.js").is_file() else None


#: Above Swagger UI: "Try it out" needs the bearer token (the sign-in cookie is not sent to
#: the API), and where the token is.
_HOW_TO_AUTHORIZE = (
    "<p id='how-to-authorize' style='font:14px/1.4 system-ui,sans-serif;margin:0;"
    "padding:.6rem 1rem;background:#fff6d5;color:#1d232a;border-bottom:1px solid #d8c77a'>"
    "To try a call: press <strong>Authorize</strong> and paste your token, the one you "
    "sign in to the web pages with. The owner's token is in "
    "<code>&lt;home&gt;/secrets/owner-token</code> (<code>cat ~/.agent-notebook/secrets/"
    "owner-token</code> for the default home); a guest's was printed once by "
    "<code>agent-notebook token create --guest NAME</code>. Your browser keeps it for this "
    "page only; <a href='/sessions'>back to the notebook</a>.</p>"
)


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
        html = get_swagger_ui_html(
            openapi_url=openapi,
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url="/docs/oauth2-redirect",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url="/static/favicon.svg",
            swagger_ui_parameters={"persistAuthorization": True, "validatorUrl": None},
        )
        body = bytes(html.body).decode().replace("<body>", "<body>" + _HOW_TO_AUTHORIZE, 1)
        return HTMLResponse(body, headers=DOCS_HEADERS)

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    def oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        if assets is None:
            return _fallback(app, "ReDoc")
        html = get_redoc_html(
            openapi_url=openapi,
            title=f"{app.title} - ReDoc",
            redoc_js_url=REDOC_JS,
            redoc_favicon_url="/static/favicon.svg",
            with_google_fonts=False,
        )
        return HTMLResponse(bytes(html.body), headers=DOCS_HEADERS)

    redoc_js: list[bytes] = []  # read and changed once, on the first request

    @app.get(REDOC_JS, include_in_schema=False)
    def redoc_bundle() -> Response:
        if assets is None:
            return Response(status_code=404)
        if not redoc_js:
            bundle = (assets / "redoc.standalone.js").read_bytes()
            redoc_js.append(bundle.replace(_REDOC_LOGO, b"/static/favicon.svg"))
        headers = {"Cache-Control": "public, max-age=3600"}
        return Response(redoc_js[0], media_type="text/javascript", headers=headers)
