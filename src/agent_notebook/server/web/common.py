"""What the page routes share: the notebook, the CSRF check, paging."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

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


@dataclass(frozen=True)
class Pager:
    """Links to the previous and next page of a list read ``PAGE`` at a time."""

    offset: int
    shown: int
    limit: int = PAGE

    @property
    def previous(self) -> int | None:
        return max(0, self.offset - self.limit) if self.offset > 0 else None

    @property
    def next(self) -> int | None:
        return self.offset + self.limit if self.shown >= self.limit else None


def back_to(url: str) -> RedirectResponse:
    """After a form's change: back to a page that shows it (POST, redirect, GET)."""
    return RedirectResponse(url, status_code=303)
