"""What the notebook knows about someone (issue 39, item 6): each fact's current values with
the moment each came from, its history and the open conflicts, as of a day the owner may
pick. Linked from a speaker's name on every moment and from a concept's page."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from ...errors import InvalidInput
from .common import Nb
from .render import page

router = APIRouter(include_in_schema=False)


def _as_of(value: str) -> datetime | None:
    if not value.strip():
        return None
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput(
            f"as of: {value!r} is not a date or time (e.g. 2026-06-07 or 2026-06-07T10:00)"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


@router.get("/subjects/{name:path}", response_class=HTMLResponse)
def subject(request: Request, name: str, nb: Nb, as_of: str = "") -> HTMLResponse:
    view = nb.facts.about(name, as_of=_as_of(as_of))
    return page(request, "subject.html", view=view, as_of=as_of)
