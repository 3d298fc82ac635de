"""What the page routes share: the notebook, the CSRF check, paging."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, TypeVar

from fastapi import Depends, Query
from fastapi.responses import RedirectResponse

from ...notebook.facade import Notebook
from ..deps import MAX_OFFSET, notebook
from .csrf import csrf_checked

#: Items per page of every list: the pages read one page, never a whole table.
PAGE = 50

Nb = Annotated[Notebook, Depends(notebook)]
Checked = Depends(csrf_checked)
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET)]
T = TypeVar("T")


@dataclass(frozen=True)
class Pager:
    """Links to the previous and next page of a list read ``PAGE`` at a time. ``more``: the
    list goes on past this page (the routes read one item more than a page to know), so a
    list that fits one page shows no links. The templates get it as ``paging`` (the macro
    that draws it is ``pager``: the same name would shadow it)."""

    offset: int
    more: bool
    limit: int = PAGE

    @property
    def previous(self) -> int | None:
        return max(0, self.offset - self.limit) if self.offset > 0 else None

    @property
    def next(self) -> int | None:
        return self.offset + self.limit if self.more else None


def paged(offset: int, read: list[T]) -> tuple[list[T], Pager]:
    """A page of ``read`` (read with ``limit=PAGE + 1``) and its links."""
    return read[:PAGE], Pager(offset, len(read) > PAGE)


def back_to(url: str) -> RedirectResponse:
    """After a form's change: back to a page that shows it (POST, redirect, GET)."""
    return RedirectResponse(url, status_code=303)
