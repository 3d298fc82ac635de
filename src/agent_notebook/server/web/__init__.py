"""The web pages: see and tend the notebook in a browser, served by ``agent-notebook serve``
at ``/``.

Server-rendered Jinja2 templates with a little vanilla JavaScript and one stylesheet, all
shipped in the package (no build step, no CDN): every page works offline and without
script; the script only adds drag-and-drop and keyboard shortcuts. Each page reads one page
of data through the facade (:class:`~agent_notebook.notebook.Notebook`), which does every
check; the pages only show what it says. Modules: :mod:`.signin` (the cookie), :mod:`.csrf`
(the forms' CSRF token), :mod:`.render` (the templates), :mod:`.sessions`, :mod:`.moments`,
:mod:`.search`, :mod:`.concepts`, :mod:`.conflicts`, :mod:`.subjects`, :mod:`.threads` (the session notebooks),
:mod:`.housekeeping`, :mod:`.plots`, :mod:`.guest`, :mod:`.docs`."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles

from . import (
    concepts,
    conflicts,
    docs,
    guest,
    housekeeping,
    moments,
    plots,
    search,
    sessions,
    signin,
    subjects,
    threads,
)

STATIC = Path(__file__).parent / "static"
_ROUTERS = (
    signin,
    sessions,
    moments,
    search,
    concepts,
    conflicts,
    subjects,
    threads,
    housekeeping,
    plots,
    guest,
)


def error_page(request: Request, status: int, detail: str) -> Response:
    """A page that says what went wrong (the API's errors stay JSON)."""
    from ..auth import ACCESS_KEY
    from .render import bare, page

    if request.scope.get(ACCESS_KEY) is None:
        return bare("error.html", status=status, code=status, detail=detail)
    return page(request, "error.html", status=status, code=status, detail=detail)


def install(app: FastAPI) -> None:
    """Add the pages, their static files and the offline API docs to ``app``."""
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    docs.install(app)
    for module in _ROUTERS:
        app.include_router(module.router)
