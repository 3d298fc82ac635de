"""Search: the box with its filters, each hit's ``explain`` drawn as bars per signal, and
search by example (an image or audio file dropped on the page)."""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi.responses import HTMLResponse

from ...errors import InvalidInput
from ...notebook.checks import MAX_SEARCH_LIMIT
from ...notebook.facade import Notebook
from ...search.hits import SearchHit
from ...search.request import MODES, Mode
from .common import Checked, Nb
from .render import page

router = APIRouter(include_in_schema=False)
LIMIT = 20


def _time(text: str, name: str) -> datetime | None:
    """A date or time from the form (no zone: UTC), or None when left empty."""
    if not text.strip():
        return None
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidInput(
            f"search: {name} {text!r} is not a date or time; give it as 2024-05-08 or "
            "2024-05-08T13:56"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _score(text: str) -> float | None:
    """The form's min_score as a number (the facade checks its range), or None when empty."""
    if not text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        raise InvalidInput(
            f"search: min_score {text!r} is not a number; give one from 0 to 1 such as 0.3, "
            "or leave it empty for the notebook's default"
        ) from None


def explain_bars(hit: SearchHit, rrf_k: int) -> list[tuple[str, float, str]]:
    """What found the hit, as absolute strengths (0..1, not shares that sum to 1, so a weak
    hit looks weak): each signal's rank turned into what it gave relative to that signal's
    best hit, ``(k + 1) / (k + rank)``, labelled with the rank; then relevance."""
    bars = [
        (str(signal), (rrf_k + 1) / (rrf_k + part.rank), f"#{part.rank}")
        for signal, part in hit.explain.signals.items()
    ]
    relevance = hit.explain.relevance
    if relevance is not None:
        bars.append(("relevance", relevance, f"{relevance:.2f}"))
    return bars


def _results(
    request: Request,
    nb: Notebook,
    form: dict[str, Any],
    *,
    image: Path | None = None,
    audio: Path | None = None,
    example: str = "",
) -> HTMLResponse:
    q = form["q"].strip()
    hits: list[SearchHit] | None = None
    hint = None
    more = False
    offset, limit = form["offset"], form["limit"]
    min_score = _score(form["min_score"])  # checked with or without a query
    if q or image or audio:
        found = nb.search(
            q,
            session=form["session"].strip() or None,
            since=_time(form["since"], "since"),
            until=_time(form["until"], "until"),
            speaker=form["speaker"].strip() or None,
            concept=form["concept"].strip() or None,
            mode=form["mode"],
            # one more than the page: whether there is a next one
            limit=min(MAX_SEARCH_LIMIT, offset + limit + 1),
            min_score=min_score,
            image=image,
            audio=audio,
            current_session_id=form["current_session_id"].strip() or None,
            current=bool(form["current"]),
            as_of=_as_of(form["as_of"]),
            asked_at=_time(form["asked_at"], "asked at"),
        )
        # only this page's hits are drawn (issue 43: "More results" drew every earlier one)
        hits, hint = found[offset : offset + limit], found.hint("minimum score")
        # (an example's file is not in a link: its next page would be another search)
        more = len(found) > offset + limit and not (image or audio)
    return page(
        request,
        "search.html",
        form=form,
        hits=hits,
        hint=hint,
        example=example,
        bars=lambda hit: explain_bars(hit, nb.config.search.fusion.rrf_k),
        offset=offset,
        more=_page_url(form, offset + limit) if more else None,
        earlier=_page_url(form, max(0, offset - LIMIT)) if hits is not None and offset else None,
        vector=nb.vectors.semantic is not None,
        modes=MODES,
    )


def _as_of(text: str) -> datetime | None:
    """The form's "as of" day read as the end of that day (UTC), or None when empty."""
    day = _time(text, "as of")
    if day is None:
        return None
    return day + timedelta(days=1) if len(text.strip()) == 10 else day


def _page_url(form: dict[str, Any], offset: int) -> str | None:
    """The same search's ``LIMIT`` results from ``offset`` on (None past the most a search
    returns): a page of its own without JavaScript, put under the page shown with it."""
    if offset >= MAX_SEARCH_LIMIT:
        return None
    query = {k: v for k, v in form.items() if v not in ("", None) and k != "offset"}
    query["limit"] = min(LIMIT, MAX_SEARCH_LIMIT - offset)
    if offset:
        query["offset"] = offset
    return "/search?" + urlencode(query)


def _form(
    q: str,
    session: str,
    since: str,
    until: str,
    speaker: str,
    concept: str,
    mode: str,
    ms: str,
    limit: int = LIMIT,
    current_session_id: str = "",
    current: str = "",
    as_of: str = "",
    offset: int = 0,
    asked_at: str = "",
) -> dict[str, Any]:
    if offset + limit > MAX_SEARCH_LIMIT:
        raise InvalidInput(f"search: offset + limit must be at most {MAX_SEARCH_LIMIT}")
    return {
        "offset": offset,
        "current_session_id": current_session_id,
        "current": current,
        "as_of": as_of,
        "asked_at": asked_at,
        "limit": limit,
        "q": q,
        "session": session,
        "since": since,
        "until": until,
        "speaker": speaker,
        "concept": concept,
        "mode": mode,
        "min_score": ms,
    }


@router.get("/search", response_class=HTMLResponse)
def search(
    request: Request,
    nb: Nb,
    q: str = "",
    session: str = "",
    since: str = "",
    until: str = "",
    speaker: str = "",
    concept: str = "",
    mode: Mode = "hybrid",
    min_score: str = "",
    limit: Annotated[int, Query(ge=1, le=MAX_SEARCH_LIMIT)] = LIMIT,
    current_session_id: str = "",
    current: str = "",
    as_of: str = "",
    offset: Annotated[int, Query(ge=0, lt=MAX_SEARCH_LIMIT)] = 0,
    asked_at: str = "",
) -> HTMLResponse:
    """``current_session_id``: the thread the search is asked from (the session page's
    search links it): its latest turns are left out, as in the agent's own search.
    ``current``: only what holds now; ``as_of`` (a day): the notebook as it stood at its end;
    ``asked_at`` (a day or a time): when the question is asked, its time words read from it.
    ``offset``: the page of ``limit`` hits from there on ("More results")."""
    form = _form(
        q,
        session,
        since,
        until,
        speaker,
        concept,
        mode,
        min_score,
        limit,
        current_session_id,
        current,
        as_of,
        offset,
        asked_at,
    )
    return _results(request, nb, form)


@router.post("/search/example", response_class=HTMLResponse, dependencies=[Checked])
def search_by_example(
    request: Request,
    nb: Nb,
    file: Annotated[UploadFile, File()],
    q: Annotated[str, Form()] = "",
    mode: Annotated[Mode, Form()] = "hybrid",
) -> HTMLResponse:
    """The dropped file goes to a private temp dir for the search, then is deleted; its
    client-side name is kept nowhere (only a short known suffix, to help the decoders)."""
    from ...media.decode import media_kind

    suffix = Path(file.filename or "").suffix.lower()
    suffix = suffix if len(suffix) <= 6 and suffix[1:].isalnum() else ""
    form = _form(q, "", "", "", "", "", mode, "")
    with tempfile.TemporaryDirectory(prefix="agent-notebook-example-") as scratch:
        upload = Path(scratch) / f"example{suffix}"
        with upload.open("wb") as out:
            shutil.copyfileobj(file.file, out)
        kind = media_kind(upload)
        image, audio = (upload, None) if kind == "image" else (None, upload)
        return _results(request, nb, form, image=image, audio=audio, example=kind)
