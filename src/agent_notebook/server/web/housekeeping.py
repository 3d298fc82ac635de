"""Housekeeping: a compaction preview (``compact --dry-run``), the doctor's report, guest
tokens (create, list, revoke) and the privacy settings in force."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from html import escape
from typing import TYPE_CHECKING, Annotated, Final

import anyio
from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse

from ...errors import NotebookError
from ...notebook.doctor import doctor
from ..auth import access_of
from .common import Checked, Nb, back_to
from .plots import bar_chart
from .render import SECURITY_HEADERS, page, page_text

if TYPE_CHECKING:
    from ...compaction import CompactionReport
    from ...notebook import Notebook

router = APIRouter(include_in_schema=False)


def _page(request: Request, nb: Nb, created: tuple[str, str] | None = None) -> HTMLResponse:
    tokens = access_of(request).tenant.tokens
    return page(
        request,
        "housekeeping.html",
        report=doctor(nb),
        privacy=nb.config.privacy,
        tokens=tokens.listing(),
        created=created,
    )


@router.get("/housekeeping", response_class=HTMLResponse)
def housekeeping(request: Request, nb: Nb) -> HTMLResponse:
    return _page(request, nb)


#: Where a streamed page's first part ends: what comes before is sent at once.
_SPLIT = "<!--results-->"
#: How often the preview looks at the dry run's progress and at the browser (seconds), and
#: at most how often it sends a step of progress (a new stage is sent at once).
_TICK_S: Final = 0.2
_STEP_EVERY_S: Final = 0.5
_STAGES: Final = {
    "copy": ("Copying the notebook", "moments"),
    "daily": ("Daily rollups", "due"),
    "weekly": ("Weekly rollups", "due"),
    "monthly": ("Monthly rollups", "due"),
}


class _Stopped(Exception):
    """The browser left: the preview's dry run stops (on its copy: nothing to undo).
    Private: raised by the preview's progress report and caught by its worker thread, it
    never leaves a public call."""


class _DryRun:
    """A dry run in a worker thread, with what it has done so far; :meth:`stop` ends it
    at its next progress report (after each rollup, and a few a second while a summary is
    picked: see compaction.pacing)."""

    def __init__(self, nb: Notebook) -> None:
        self.nb = nb
        self.step: tuple[str, int, int] = ("", 0, 0)
        self.report: CompactionReport | None = None
        self.error: NotebookError | None = None
        self.failure: BaseException | None = None
        self.finished = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="compaction-preview", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _progress(self, stage: str, done: int, total: int) -> None:
        if self._stop.is_set():
            raise _Stopped
        self.step = (stage, done, total)

    def _run(self) -> None:
        try:
            self.report = self.nb.archive.compact(dry_run=True, progress=self._progress)
        except _Stopped:
            pass
        except NotebookError as error:
            self.error = error
        except BaseException as failure:  # noqa: BLE001 - raised again in the request
            self.failure = failure
        finally:
            self.finished.set()


def _step_html(step: tuple[str, int, int], n: int) -> str:
    """One step of progress: the stage in words and a bar. Each step is a new element
    (a streamed page can only grow); the page's style shows the last one only."""
    stage, done, total = step
    name, unit = _STAGES.get(stage, (stage, ""))
    said = f"{done:,} of {total:,} {unit}" if total else "none due"
    bar = f'<progress id="preview-bar-{n}" max="{max(total, 1)}" value="{done}"></progress>'
    return (
        f'<p class="preview-step" role="status"><label for="preview-bar-{n}">'
        f"{escape(name)}: {escape(said)}</label> {bar}</p>\n"
    )


@router.get("/housekeeping/compact", response_class=HTMLResponse)
def compact_preview(request: Request, nb: Nb) -> StreamingResponse:
    """What ``compact`` would do now: run on a copy, nothing changed. The dry run takes
    seconds on a large notebook, so the page is streamed: its header and a progress note
    at once, then a step of progress as the dry run goes (the stage and a bar), then the
    summary, the plots and the rollups that would drop something. The dry run runs in a
    worker thread; when the browser leaves, it stops."""
    waiting = page_text(request, "compact.html", report=None).split(_SPLIT)[0]

    async def parts() -> AsyncIterator[str]:
        yield waiting
        run = _DryRun(nb)
        run.start()
        try:
            shown, sent_at, steps = ("", 0, 0), 0.0, 0
            while not run.finished.is_set():
                await anyio.sleep(_TICK_S)
                if await request.is_disconnected():
                    return
                step = run.step
                fresh = step[0] != shown[0] or time.monotonic() - sent_at >= _STEP_EVERY_S
                if step != shown and step[0] and fresh:
                    steps += 1
                    yield _step_html(step, steps)
                    shown, sent_at = step, time.monotonic()
        finally:
            run.stop()  # the browser left (or the server stops): the dry run ends too
        if run.failure is not None:
            raise run.failure
        if run.error is not None or run.report is None:
            said = escape(str(run.error or "the dry run stopped"))
            yield f'<p role="alert" class="error">{said}</p></main></body></html>'
            return
        yield await anyio.to_thread.run_sync(_results, request, run.report)  # long tables

    return StreamingResponse(parts(), media_type="text/html", headers=SECURITY_HEADERS)


def _results(request: Request, report: CompactionReport) -> str:
    charts = [
        bar_chart(
            [("before", report.active_before), ("after", report.active_after)],
            "Active moments, before and after",
            "moments",
        ),
        bar_chart(
            [("before", report.tokens_before), ("after", report.tokens_after)],
            "Active tokens, before and after",
            "tokens",
        ),
    ]
    losing = [i for i in report.manifest if i.dropped]
    done = page_text(request, "compact.html", report=report, charts=charts, losing=losing)
    return done.split(_SPLIT, 1)[1]


@router.post("/housekeeping/tokens", response_class=HTMLResponse, dependencies=[Checked])
def create_token(request: Request, nb: Nb, name: Annotated[str, Form()]) -> HTMLResponse:
    """The new token is shown once, on this page; only its hash is kept."""
    token = access_of(request).tenant.tokens.create_guest(name)
    return _page(request, nb, created=(name, token))


@router.post("/housekeeping/tokens/{name}/revoke", dependencies=[Checked])
def revoke_token(request: Request, name: str, confirm: Annotated[str, Form()] = "") -> Response:
    """First a confirmation (the guest is refused from then on); with ``confirm=yes``, done."""
    if confirm != "yes":
        return page(request, "revoke_confirm.html", name=name)
    access_of(request).tenant.tokens.revoke(name)
    return back_to("/housekeeping#tokens")
