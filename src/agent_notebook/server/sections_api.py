"""A thread's session notebook over HTTP: the whole notebook and its sections.

ETags: the whole notebook's is its revision (``"rev-N"``); a section's is a hash of its text,
so writers of different sections do not conflict. ``PUT`` with a stale ``If-Match`` is a 409;
the check and the write run under the session notebook's own write lock."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict, Field

from ..errors import InvalidInput, NotFound
from ..model import Text
from ..notebook.facade import Notebook
from ..session import sections
from .deps import IfMatch, check_if_match, etag_of, notebook, set_etag

router = APIRouter(prefix="/api/threads", tags=["session notebook"])
Nb = Annotated[Notebook, Depends(notebook)]


class SessionNotebookView(BaseModel):
    thread_id: str
    revision: int
    content: str
    sections: dict[str, str]


class SectionView(BaseModel):
    thread_id: str
    section: str
    content: str
    #: Sections cut to fit the budget by this write, and where the cut text went.
    condensed: dict[str, str] = Field(default_factory=dict)


class SectionUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: Text = Field(max_length=200_000)


def _revision_tag(revision: int) -> str:
    return f'"rev-{revision}"'


def checked_thread(thread_id: str) -> str:
    """Control characters (a NUL) are refused here: the store cannot hold them in a key."""
    if any(ord(c) < 32 or ord(c) == 127 for c in thread_id):
        raise InvalidInput(f"invalid thread id {thread_id!r}: it holds a control character")
    return thread_id


def checked_section(name: str) -> str:
    try:
        return sections.check_section(name)
    except InvalidInput as err:  # in a path, an unknown section is not found
        raise NotFound(str(err)) from None


@router.get("/{thread_id}/notebook")
def read_notebook(thread_id: str, nb: Nb, response: Response) -> SessionNotebookView:
    """The thread's session notebook (the template when it has none yet)."""
    revision, content = nb.session_notebook(checked_thread(thread_id)).sync.revision()
    set_etag(response, _revision_tag(revision))
    return SessionNotebookView(
        thread_id=thread_id, revision=revision, content=content, sections=sections.parse(content)
    )


@router.get("/{thread_id}/notebook/sections/{section}")
def read_section(thread_id: str, section: str, nb: Nb, response: Response) -> SectionView:
    """One section's text; its ETag goes in ``If-Match`` of your next PUT."""
    name = checked_section(section)
    text = nb.session_notebook(checked_thread(thread_id)).sync.get_section(name)
    set_etag(response, etag_of(text))
    return SectionView(thread_id=thread_id, section=name, content=text)


@router.put("/{thread_id}/notebook/sections/{section}")
def update_section(
    thread_id: str,
    section: str,
    body: SectionUpdate,
    nb: Nb,
    response: Response,
    if_match: IfMatch = None,
) -> SectionView:
    """Replace one section; then sections over budget are condensed (cut text is kept as
    moments of the thread's session, and ``condensed`` says where)."""
    name = checked_section(section)
    notes = nb.session_notebook(checked_thread(thread_id)).sync

    def check(current: str) -> None:
        check_if_match(if_match, etag_of(current), f"section {name!r} of {thread_id}")

    notes.update_section(name, body.content, check=check)  # checked and written as one change
    condensed = notes.enforce_budget()
    text = notes.get_section(name)
    set_etag(response, etag_of(text))
    return SectionView(thread_id=thread_id, section=name, content=text, condensed=condensed)
