"""What the routers share: the notebook of the request's token, paging, ETags."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Generic, TypeVar

from fastapi import Header, Query, Request, Response
from pydantic import BaseModel, Field

from ..notebook.etags import check_if_match as check_if_match  # the routers' ETags
from ..notebook.etags import etag_of as etag_of
from ..notebook.facade import Notebook
from .auth import access_of

MAX_PAGE = 1000
MAX_OFFSET = 2**53  # past any real list; keeps the database's integers in range

Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Skip this many items.")]
Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Return at most this many items.")]
IfMatch = Annotated[
    str | None,
    Header(
        description="The ETag of your last read; the write is refused with 409 if the "
        "record changed since."
    ),
]

_T = TypeVar("_T")


class Page(BaseModel, Generic[_T]):
    """One page of a list: ``items``, and ``next_offset`` when there may be more."""

    items: list[_T]
    offset: int
    limit: int
    next_offset: int | None = None


class FactsPage(Page[_T], Generic[_T]):
    """A page of what the fact rules read from the conversation (decisions, pending items,
    conflicts); ``note`` says when the rules are off and how to turn them on."""

    note: str | None = Field(
        None,
        description="Set when the fact rules are off: only what was entered by hand is "
        "listed, and how to turn them on (null when they are on).",
    )


def page(items: Sequence[_T], offset: int, limit: int) -> Page[_T]:
    more = len(items) >= limit
    return Page[_T](
        items=list(items), offset=offset, limit=limit, next_offset=offset + limit if more else None
    )


def facts_page(nb: Notebook, items: Sequence[_T], offset: int, limit: int) -> FactsPage[_T]:
    """:func:`page` with the notebook's word on the fact rules being off
    (:meth:`~agent_notebook.notebook.owner_facts.OwnerFacts.off_hint`)."""
    shown = page(items, offset, limit)
    return FactsPage[_T](**dict(shown), note=nb.facts.off_hint())


def notebook(request: Request) -> Notebook:
    """The notebook of the request's bearer token (see :mod:`.auth`)."""
    return access_of(request).tenant.notebook


def set_etag(response: Response, tag: str) -> None:
    response.headers["ETag"] = tag
