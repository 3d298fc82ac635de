"""The long-term notebook over HTTP: sessions, moments, decisions, pending items,
escalations, a guest's write-back, search, slices, stats and export.

Session writes take ``If-Match`` (the ETag of the last read): the check and the write run in
one backend transaction, so two writers cannot overwrite each other blindly (409)."""

from __future__ import annotations

import mimetypes
import shutil
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from fastapi import APIRouter, Depends, File, Form, Query, Request, Response, UploadFile
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict, Field

from ..errors import InvalidInput, NotFound
from ..model import (
    Decision,
    Escalation,
    Moment,
    MomentDraft,
    NotebookStats,
    PendingItem,
    Session,
    TaskStatus,
    Text,
)
from ..notebook.checks import MAX_QUERY_CHARS, MAX_SEARCH_LIMIT
from ..notebook.facade import Notebook
from ..notebook.redaction import ForgetReport
from ..notebook.sessions import WriteBackKind
from ..search.hits import SearchHit
from ..search.request import Mode
from ..search.slice import MAX_SLICE_TOKENS, Slice
from .auth import access_of
from .deps import (
    FactsPage,
    IfMatch,
    Limit,
    Offset,
    Page,
    etag_of,
    facts_page,
    notebook,
    page,
    set_etag,
)
from .errors import Forbidden, documented_errors

router = APIRouter(prefix="/api")
Nb = Annotated[Notebook, Depends(notebook)]
_T = TypeVar("_T")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewSession(_Body):
    task: Text = Field("", max_length=10_000, description="What the session is about.")


class SessionChange(_Body):
    task: Text | None = Field(None, max_length=10_000)
    task_status: TaskStatus | None = None


class MomentBatch(_Body):
    moments: list[MomentDraft] = Field(min_length=1, max_length=1000)


class NewDecision(_Body):
    what: Text = Field(min_length=1)
    why: Text = ""
    who: Text = Field("owner", min_length=1, max_length=100)


class NewPending(_Body):
    what: Text = Field(min_length=1)


class Closing(_Body):
    resolution: Text = ""


class NewEscalation(_Body):
    to: Text = Field(min_length=1, max_length=200, description="The agent handed the task.")
    why: Text = ""
    slice: Text = Field("", description="The slice it was given (see GET /api/slice).")


class Outcome(_Body):
    outcome: Text = Field(min_length=1)


class WriteBack(_Body):
    guest: Text = Field(min_length=1, max_length=100, description="The guest agent's name.")
    kind: WriteBackKind
    text: Text = Field(min_length=1)
    why: Text = ""
    escalation_id: str | None = Field(None, description="For kind escalation_outcome.")


class Redaction(_Body):
    reason: Text = Field(min_length=1, max_length=10_000, description="Why, for the tombstone.")


class Forgetting(_Body):
    concept: Text = Field(min_length=1, max_length=200, description="What to forget.")
    reason: Text = Field("", max_length=10_000)
    dry_run: bool = Field(False, description="Only report what would be forgotten.")
    words_only: bool = Field(
        False,
        description="Redact only the concept's words within the moments, keeping the rest "
        "(the default redacts whole moments: what else they say about it gives it away).",
    )


class SliceResponse(BaseModel):
    slice: Slice
    rendered: str


def _guarded(
    nb: Notebook,
    session_id: str,
    if_match: str | None,
    response: Response,
    write: Callable[[], _T],
) -> _T:
    """Check ``If-Match`` against the session and write, in one transaction; the response
    carries the session's new ETag."""
    result, tag = nb.write_if_match(session_id, if_match, write)
    set_etag(response, tag)
    return result


def _utc(when: datetime | None) -> datetime | None:
    """A time without a zone is UTC, as on the command line."""
    return when if when is None or when.tzinfo is not None else when.replace(tzinfo=UTC)


# -- sessions -------------------------------------------------------------------------------


@router.get("/sessions", tags=["sessions"])
def list_sessions(nb: Nb, offset: Offset = 0, limit: Limit = 50) -> Page[Session]:
    """Sessions, oldest first."""
    return page(nb.sessions(offset, limit), offset, limit)


@router.post("/sessions", status_code=201, tags=["sessions"])
def start_session(body: NewSession, nb: Nb, response: Response) -> Session:
    """Start a session; its id is ``s_<day>_<NNN>``."""
    session = nb.start_session(body.task)
    set_etag(response, etag_of(session))
    return session


@router.get("/sessions/{session_id}", tags=["sessions"])
def get_session(session_id: str, nb: Nb, response: Response) -> Session:
    """One session whole; its ``ETag`` goes in ``If-Match`` of your next write to it."""
    session = nb.get_session(session_id)
    set_etag(response, etag_of(session))
    return session


@router.patch("/sessions/{session_id}", tags=["sessions"])
def change_session(
    session_id: str, body: SessionChange, nb: Nb, response: Response, if_match: IfMatch = None
) -> Session:
    """Change a session's task or status."""
    session = _guarded(
        nb,
        session_id,
        if_match,
        response,
        lambda: nb.update_session(session_id, task=body.task, task_status=body.task_status),
    )
    return session


# -- moments --------------------------------------------------------------------------------


@router.get("/sessions/{session_id}/moments", tags=["moments"])
def session_moments(session_id: str, nb: Nb, offset: Offset = 0, limit: Limit = 50) -> Page[Moment]:
    """A session's moments in order."""
    return page(nb.moments(session_id, offset, limit), offset, limit)


@router.post("/sessions/{session_id}/moments", status_code=201, tags=["moments"])
def record(session_id: str, body: MomentDraft, nb: Nb) -> Moment:
    """Record one moment; concepts, retrieval keys and importance are derived when left out.
    To attach an image or audio clip, upload it to ``POST .../moments/media``."""
    return nb.record_many(session_id, _no_server_files([body]))[0]


@router.post("/sessions/{session_id}/moments/batch", status_code=201, tags=["moments"])
def record_batch(session_id: str, body: MomentBatch, nb: Nb) -> list[Moment]:
    """Record up to 1000 moments in one transaction: all of them or none."""
    return nb.record_many(session_id, _no_server_files(body.moments))


def _no_server_files(drafts: list[MomentDraft]) -> list[MomentDraft]:
    """A client names no file of the server's disk to attach: it uploads the file."""
    for n, d in enumerate(drafts):
        if d.image_file is not None or d.audio_file is not None:
            raise InvalidInput(
                f"moment {n}: image_file/audio_file name files on the server; upload the file "
                "with POST /api/sessions/{session_id}/moments/media instead"
            )
    return drafts


@router.post("/sessions/{session_id}/moments/media", status_code=201, tags=["moments"])
def record_media(
    session_id: str,
    nb: Nb,
    file: Annotated[UploadFile, File(description="An image (PNG, JPEG, WebP) or audio clip.")],
    text: Annotated[Text, Form(description="Text recorded with it.")] = "",
    speaker: Annotated[Text, Form()] = "",
    role: Annotated[Text, Form()] = "user",
) -> Moment:
    """Record one moment with an uploaded image or audio clip (multipart form), signed and
    kept in the notebook's media store. The upload obeys the server's ``--max-body``
    (1 MiB by default): raise it to take larger files."""
    from ..media.decode import media_kind

    # The upload goes to a private temp dir, then is signed and copied in by the notebook;
    # its client-side name is kept nowhere (only a known suffix, to help the decoders).
    suffix = Path(file.filename or "").suffix.lower()
    suffix = suffix if len(suffix) <= 6 and suffix[1:].isalnum() else ""
    with tempfile.TemporaryDirectory(prefix="agent-notebook-upload-") as scratch:
        upload = Path(scratch) / f"upload{suffix}"
        with upload.open("wb") as out:
            shutil.copyfileobj(file.file, out)
        kind = media_kind(upload)
        return nb.record(
            session_id,
            text,
            speaker=speaker,
            role=role,
            **({"image": upload} if kind == "image" else {"audio": upload}),
        )


@router.get("/moments/{moment_id}/media", tags=["moments"], response_class=FileResponse)
def moment_media(
    moment_id: str,
    nb: Nb,
    kind: Annotated[
        Literal["image", "audio"] | None, Query(description="When it has both.")
    ] = None,
) -> FileResponse:
    """The image or audio file attached to a moment; owner only."""
    return media_file(nb, moment_id, kind)


def media_file(
    nb: Notebook, moment_id: str, kind: Literal["image", "audio"] | None
) -> FileResponse:
    """The moment's image (or ``kind``) from the media store, for the API and the pages."""
    moment = nb.get_moment(moment_id)
    stored = moment.image_path if kind != "audio" else moment.audio_path
    if stored is None and kind is None:
        stored = moment.audio_path
    if stored is None:
        raise NotFound(f"moment {moment_id} has no {kind or 'media'} file attached")
    path = nb.media_store().path_of(stored)
    media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return FileResponse(path, media_type=media_type)


@router.get("/moments", tags=["moments"])
def list_moments(nb: Nb, offset: Offset = 0, limit: Limit = 50) -> Page[Moment]:
    """Every moment, in order of id."""
    return page(nb.moments(None, offset, limit), offset, limit)


@router.get("/moments/{moment_id}", tags=["moments"])
def get_moment(moment_id: str, nb: Nb, response: Response) -> Moment:
    moment = nb.get_moment(moment_id)
    set_etag(response, etag_of(moment))
    return moment


@router.post("/moments/{moment_id}/redact", tags=["moments"])
def redact(moment_id: str, body: Redaction, nb: Nb) -> Moment:
    """Remove a moment's content for good, leaving a tombstone (who, when, why) and an
    audit-log entry; owner only. Redacting it again changes nothing."""
    return nb.redact(moment_id, body.reason, who="owner")


@router.post("/forget", tags=["moments"])
def forget(body: Forgetting, nb: Nb) -> ForgetReport:
    """Forget a concept: redact every moment, rollup and session-notebook line tied to it
    (``dry_run``: only say what would go); owner only."""
    return nb.forget(
        body.concept, body.reason, who="owner", dry_run=body.dry_run, words_only=body.words_only
    )


# -- the audit log, pending items, escalations ----------------------------------------------


@router.get("/sessions/{session_id}/decisions", tags=["decisions"])
def decisions(
    session_id: str, nb: Nb, offset: Offset = 0, limit: Limit = 50
) -> FactsPage[Decision]:
    """The session's audit log, oldest first; with the fact rules off, ``note`` says that
    only what was entered by hand is there, and how to turn them on."""
    found = nb.get_session(session_id).decisions[offset : offset + limit]
    return facts_page(nb, found, offset, limit)


@router.post("/sessions/{session_id}/decisions", status_code=201, tags=["decisions"])
def decide(
    session_id: str, body: NewDecision, nb: Nb, response: Response, if_match: IfMatch = None
) -> Decision:
    """Append a decision to the audit log."""
    decision = _guarded(
        nb,
        session_id,
        if_match,
        response,
        lambda: nb.decide(session_id, body.what, body.why, body.who),
    )
    return decision


@router.get("/sessions/{session_id}/pending", tags=["pending"])
def pending(
    session_id: str,
    nb: Nb,
    offset: Offset = 0,
    limit: Limit = 50,
    open_only: Annotated[bool, Query(description="Only items not closed yet.")] = False,
) -> FactsPage[PendingItem]:
    """The session's pending threads, oldest first; with the fact rules off, ``note`` says
    that only what was entered by hand is there, and how to turn them on."""
    items = nb.get_session(session_id).pending
    if open_only:
        items = [p for p in items if p.closed is None]
    return facts_page(nb, items[offset : offset + limit], offset, limit)


@router.post("/sessions/{session_id}/pending", status_code=201, tags=["pending"])
def open_pending(
    session_id: str, body: NewPending, nb: Nb, response: Response, if_match: IfMatch = None
) -> PendingItem:
    """Open a pending thread (``p_N``)."""
    item = _guarded(
        nb, session_id, if_match, response, lambda: nb.open_pending(session_id, body.what)
    )
    return item


@router.post("/sessions/{session_id}/pending/{pending_id}/close", tags=["pending"])
def close_pending(
    session_id: str,
    pending_id: str,
    body: Closing,
    nb: Nb,
    response: Response,
    if_match: IfMatch = None,
) -> PendingItem:
    """Close a pending thread; closing it twice is a 409."""
    item = _guarded(
        nb,
        session_id,
        if_match,
        response,
        lambda: nb.close_pending(session_id, pending_id, body.resolution),
    )
    return item


@router.get("/sessions/{session_id}/escalations", tags=["escalations"])
def escalations(session_id: str, nb: Nb, offset: Offset = 0, limit: Limit = 50) -> Page[Escalation]:
    return page(nb.get_session(session_id).escalations[offset : offset + limit], offset, limit)


@router.post("/sessions/{session_id}/escalations", status_code=201, tags=["escalations"])
def escalate(
    session_id: str, body: NewEscalation, nb: Nb, response: Response, if_match: IfMatch = None
) -> Escalation:
    """Record a hand-off to a bigger agent, with the slice it was given."""
    item = _guarded(
        nb,
        session_id,
        if_match,
        response,
        lambda: nb.escalate(session_id, body.to, body.why, slice=body.slice),
    )
    return item


@router.post("/sessions/{session_id}/escalations/{escalation_id}/resolve", tags=["escalations"])
def resolve_escalation(
    session_id: str,
    escalation_id: str,
    body: Outcome,
    nb: Nb,
    response: Response,
    if_match: IfMatch = None,
) -> Escalation:
    """Record an escalation's outcome; a second outcome is a 409."""
    item = _guarded(
        nb,
        session_id,
        if_match,
        response,
        lambda: nb.resolve_escalation(session_id, escalation_id, body.outcome),
    )
    return item


@router.post(
    "/sessions/{session_id}/write-back",
    status_code=201,
    tags=["guests"],
    responses=documented_errors(413, 429),
)
def write_back(
    session_id: str,
    body: WriteBack,
    nb: Nb,
    request: Request,
    response: Response,
    if_match: IfMatch = None,
) -> Decision:
    """A guest agent's one write: a decision, a pending item or an escalation's outcome,
    entered in the audit log under ``guest:<name>``; with a guest token, ``guest`` must be
    that token's name. A guest's write-backs are capped (``guests:`` in config.yaml): 413
    past a size cap, 429 past a count cap, each naming the cap and its value."""
    access = access_of(request)
    if access.is_guest and body.guest != access.grant.name:
        raise Forbidden(
            f"this guest token is {access.grant.name!r}: write back as guest "
            f"{access.grant.name!r}, not {body.guest!r}"
        )
    entry = _guarded(
        nb,
        session_id,
        if_match,
        response,
        lambda: nb.write_back(
            body.guest,
            session_id,
            body.kind,
            body.text,
            why=body.why,
            escalation_id=body.escalation_id,
        ),
    )
    return entry


# -- search, slices, stats ------------------------------------------------------------------


_CAP = f"at most {MAX_QUERY_CHARS:,} characters"


class SearchPage(Page[SearchHit]):
    """A page of search hits; ``hint`` says why there is none when nothing matched well."""

    hint: str | None = None


@router.get("/search", tags=["search"])
def search(
    nb: Nb,
    # The length cap is the facade's (one check, one message for every front end).
    q: Annotated[str, Query(min_length=1, description=f"What to look for ({_CAP}).")],
    session: str | None = None,
    since: Annotated[datetime | None, Query(description="From this time (no zone: UTC).")] = None,
    until: Annotated[datetime | None, Query(description="Before this time.")] = None,
    speaker: str | None = None,
    concept: str | None = None,
    mode: Mode = "hybrid",
    explain: Annotated[
        bool, Query(description="Keep each hit's explain (signals, priors).")
    ] = True,
    offset: Annotated[int, Query(ge=0, lt=MAX_SEARCH_LIMIT)] = 0,
    limit: Limit = 10,
    min_score: Annotated[
        float | None,
        Query(
            ge=0,
            le=1,
            description="Leave out hits less relevant than this (0 to 1; default the "
            "notebook's search.min_score, 0.3; 0 keeps every match).",
        ),
    ] = None,
    current_session_id: Annotated[
        str | None,
        Query(
            description="The session of the conversation you are in: its latest turns, "
            "which you have already, are left out (your question and the answer to it "
            "would otherwise come first)."
        ),
    ] = None,
    current: Annotated[
        bool,
        Query(description="Only what holds now: no fact a later one replaced, nothing expired."),
    ] = False,
    as_of: Annotated[
        datetime | None,
        Query(
            description="Read the notebook as it stood then (no zone: UTC): what was said by "
            "then and still held then."
        ),
    ] = None,
    asked_at: Annotated[
        datetime | None,
        Query(
            description="When the question is asked (no zone: UTC): its time words "
            '("yesterday", "last week", "in March") are read against it; default as_of, '
            "else now."
        ),
    ] = None,
) -> SearchPage:
    """Moments by words and meaning, best first; ``explain`` says what found each hit.
    ``offset + limit`` may reach 1000. When no hit is relevant enough, ``items`` is empty
    and ``hint`` says so."""
    if offset + limit > MAX_SEARCH_LIMIT:
        raise InvalidInput(f"search: offset + limit must be at most {MAX_SEARCH_LIMIT}")
    found = nb.search(
        q,
        session=session,
        since=_utc(since),
        until=_utc(until),
        speaker=speaker,
        concept=concept,
        limit=offset + limit,
        mode=mode,
        min_score=min_score,
        current_session_id=current_session_id,
        current=current,
        as_of=_utc(as_of),
        asked_at=_utc(asked_at),
    )
    hint = found.hint("min_score")
    hits = found[offset:]
    if not explain:
        hits = [h.without_explain() for h in hits]
    shown = page(hits, offset, limit)
    return SearchPage(
        items=shown.items,
        offset=offset,
        limit=limit,
        next_offset=shown.next_offset,
        hint=hint,
    )


@router.get("/slice", tags=["search"])
def slice_(
    nb: Nb,
    request: Request,
    q: Annotated[str, Query(description=f"What the guest needs to know ({_CAP}).")],
    budget: Annotated[int, Query(ge=1, le=MAX_SLICE_TOKENS)] = 4000,
    audience: Annotated[str, Query(min_length=1, max_length=100)] = "guest",
    session: str | None = None,
    format: Literal["markdown", "yaml"] = "markdown",
    asked_at: Annotated[
        datetime | None,
        Query(description="When the question is asked (no zone: UTC); default now."),
    ] = None,
) -> SliceResponse:
    """A read-only, provenance-tagged slice of the notebook within a token budget; a guest
    token's within its scope (sessions, concepts, a time window, a budget per call)."""
    scope = access_of(request).grant.scope
    found = nb.slice(
        q,
        budget,
        audience=audience,
        session=session,
        fmt=format,
        scope=scope,
        asked_at=_utc(asked_at),
    )
    return SliceResponse(slice=found, rendered=found.render())


@router.get("/stats", tags=["notebook"])
def stats(nb: Nb) -> NotebookStats:
    return nb.stats()
