"""Conflicts: the statements the fact rules flagged as contradicting each other, side by
side, each pair with a form to keep one side or dismiss the conflict (issue 30)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from .common import Checked, Nb, back_to
from .render import page

router = APIRouter(include_in_schema=False)


@router.get("/conflicts", response_class=HTMLResponse)
def conflicts(request: Request, nb: Nb, session: str | None = None) -> HTMLResponse:
    return page(request, "conflicts.html", pairs=nb.facts.conflicts(session), session=session)


@router.post("/conflicts/resolve", dependencies=[Checked])
def resolve(
    nb: Nb,
    a: Annotated[str, Form()],
    b: Annotated[str, Form()],
    choice: Annotated[str, Form(description="keep:m_N or dismiss")],
    reason: Annotated[str, Form()] = "",
) -> RedirectResponse:
    """``choice`` is the button pressed: ``keep:m_N`` or ``dismiss``."""
    keep = choice.removeprefix("keep:") if choice.startswith("keep:") else None
    nb.facts.resolve_conflict(a, b, keep=keep, dismiss=choice == "dismiss", reason=reason)
    return back_to("/conflicts")
