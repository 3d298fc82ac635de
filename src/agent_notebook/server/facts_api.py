"""The owner's hand on the facts over HTTP (issue 30): the audit log across sessions and a
decision's correction, pending items across sessions and an open one reworded, the
conflicts the fact rules flagged and their resolution, what is known about someone (issue
39), and the forgetting policy. Every
check is the facade's (:mod:`agent_notebook.notebook.owner_facts`,
:mod:`agent_notebook.notebook.forgetting`); session writes take ``If-Match`` as in
:mod:`.notebook_api`. Guests have none of these routes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from ..model import PendingItem, Text
from ..notebook.facade import Notebook
from ..notebook.forgetting import PolicyReport
from ..notebook.owner_facts import ConflictPair, ConflictResolution, LoggedDecision
from ..notebook.subjects import MAX_NAME, SubjectView
from .deps import FactsPage, IfMatch, Limit, Offset, facts_page, notebook, set_etag

router = APIRouter(prefix="/api")
Nb = Annotated[Notebook, Depends(notebook)]
SessionFilter = Annotated[str | None, Query(description="Only this session.")]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DecisionEdit(_Body):
    what: Text | None = Field(None, description="The corrected text (else the entry's).")
    why: Text | None = Field(None, description="The corrected reason (else the entry's).")
    who: Text = Field("owner", min_length=1, max_length=100)


class PendingEdit(_Body):
    what: Text = Field(min_length=1, description="The open item's new text.")
    who: Text = Field("owner", min_length=1, max_length=100)


class SessionPending(PendingItem):
    """A pending item with the session it belongs to."""

    session: str


class ConflictChoice(_Body):
    a: str = Field(description="One side, m_N.")
    b: str = Field(description="The other side, m_N.")
    keep: str | None = Field(None, description="The side that holds; the other is superseded.")
    dismiss: bool = Field(False, description="Not a conflict: both stand (instead of keep).")
    reason: Text = Field("", max_length=10_000, description="Why, for the audit log.")
    who: Text = Field("owner", min_length=1, max_length=100)


class PolicyForgetting(_Body):
    older_than: str | None = Field(
        None, max_length=20, description="Forget moments said before this long ago: 12h, 30d."
    )
    inactive_for: str | None = Field(
        None, max_length=20, description="Forget moments not said nor repeated for this long."
    )
    keep_top: int | None = Field(
        None, ge=0, description="Keep the N moments of highest decayed importance."
    )
    session: str | None = Field(None, description="Only this session's moments.")
    reason: Text = Field("", max_length=10_000, description="Why, for the tombstones.")
    dry_run: bool = Field(False, description="Only report what would be forgotten.")


@router.get("/decisions", tags=["decisions"])
def decision_log(
    nb: Nb, session: SessionFilter = None, offset: Offset = 0, limit: Limit = 50
) -> FactsPage[LoggedDecision]:
    """The audit log of every session (or one), each entry with its ``d_N`` and the entry
    it ``edits`` or that ``edited_by`` it. With the fact rules off, ``note`` says that only
    what was entered by hand is there, and how to turn them on."""
    return facts_page(nb, nb.facts.decision_log(session)[offset : offset + limit], offset, limit)


@router.post(
    "/sessions/{session_id}/decisions/{decision_id}/edit", status_code=201, tags=["decisions"]
)
def edit_decision(
    session_id: str,
    decision_id: str,
    body: DecisionEdit,
    nb: Nb,
    response: Response,
    if_match: IfMatch = None,
) -> LoggedDecision:
    """Correct decision ``d_N``: a new entry that ``edits`` it is appended; the log keeps
    both. An edit that changes nothing is a 422."""
    entry, tag = nb.write_if_match(
        session_id,
        if_match,
        lambda: nb.facts.edit_decision(
            session_id, decision_id, what=body.what, why=body.why, who=body.who
        ),
    )
    set_etag(response, tag)
    return entry


@router.get("/pending", tags=["pending"])
def pending_items(
    nb: Nb,
    session: SessionFilter = None,
    open_only: Annotated[bool, Query(description="Only items not closed yet.")] = False,
    offset: Offset = 0,
    limit: Limit = 50,
) -> FactsPage[SessionPending]:
    """Pending items of every session (or one), each with its session. With the fact rules
    off, ``note`` says that only what was entered by hand is there, and how to turn them
    on."""
    found = nb.facts.pending_items(session, open_only=open_only)[offset : offset + limit]
    rows = [SessionPending(session=s, **p.model_dump()) for s, p in found]
    return facts_page(nb, rows, offset, limit)


@router.patch("/sessions/{session_id}/pending/{pending_id}", tags=["pending"])
def edit_pending(
    session_id: str,
    pending_id: str,
    body: PendingEdit,
    nb: Nb,
    response: Response,
    if_match: IfMatch = None,
) -> PendingItem:
    """Reword an open pending item; the audit log notes the text it had. A closed item is
    a 409."""
    item, tag = nb.write_if_match(
        session_id,
        if_match,
        lambda: nb.facts.edit_pending(session_id, pending_id, body.what, who=body.who),
    )
    set_etag(response, tag)
    return item


@router.get("/conflicts", tags=["conflicts"])
def conflicts(
    nb: Nb, session: SessionFilter = None, offset: Offset = 0, limit: Limit = 50
) -> FactsPage[ConflictPair]:
    """Moments flagged ``conflicts_with`` each other, by pairs (``a`` said first), with
    their session, time, text and whether each still holds. With the fact rules off,
    ``note`` says that none is flagged, and how to turn them on."""
    return facts_page(nb, nb.facts.conflicts(session)[offset : offset + limit], offset, limit)


@router.post("/conflicts/resolve", tags=["conflicts"])
def resolve_conflict(body: ConflictChoice, nb: Nb) -> ConflictResolution:
    """Keep one side (the other gets ``superseded_by`` and ``valid_until``) or dismiss the
    conflict; the audit log of each session involved records it. A pair not flagged (or
    resolved already) is a 404."""
    return nb.facts.resolve_conflict(
        body.a, body.b, keep=body.keep, dismiss=body.dismiss, reason=body.reason, who=body.who
    )


@router.get("/subjects/{name}", tags=["subjects"])
def about(
    nb: Nb,
    name: Annotated[
        str,
        Path(
            max_length=MAX_NAME,
            description="A speaker (case aside), someone named in the turns, or 'me' for "
            "the owner.",
        ),
    ],
    as_of: Annotated[
        datetime | None, Query(description="What was known then (no zone: UTC).")
    ] = None,
) -> SubjectView:
    """What the notebook knows about someone: each fact (``employer``, ``home``,
    ``value:budget``…) with its current values and the moment each came from, its history
    (what held until when, and what replaced it), and the open conflicts among their
    moments. ``facts_enabled`` false: no supersession is known (``note`` says why and how
    to turn the fact rules on)."""
    when = as_of if as_of is None or as_of.tzinfo is not None else as_of.replace(tzinfo=UTC)
    return nb.facts.about(name, as_of=when)


@router.post("/forget/policy", tags=["moments"])
def forget_by_policy(body: PolicyForgetting, nb: Nb) -> PolicyReport:
    """Redact the moments the forgetting policy picks (``older_than``, ``inactive_for``,
    ``keep_top``; never a pinned moment nor one a decision was read from), each noted in
    its session's audit log; ``dry_run`` only lists them (ids, dates, an excerpt)."""
    return nb.forget_by_policy(
        older_than=body.older_than,
        inactive_for=body.inactive_for,
        keep_top=body.keep_top,
        session=body.session,
        reason=body.reason,
        dry_run=body.dry_run,
    )
