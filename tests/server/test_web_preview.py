"""The compaction preview in Debian's Chromium on a real server (issue 41, item 3): on a
notebook large enough that its dry run takes seconds, the page streams its progress (the
stage and a bar) and then the figures, with JavaScript off; a browser that leaves it (the
tab closed, or another page opened) stops the dry run: the server's CPU falls back to idle
and it still answers."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from agent_notebook import Notebook
from agent_notebook.model import now_utc
from tests.support.server import Server
from tests.support.waiting import HANG_GUARD_S

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext

PREVIEW = "/housekeeping/compact"
SIZE = 4000  # moments: a dry run of seconds on two cores
PER_SESSION = 40
#: After the browser leaves: time for the dry run to stop, then the window measured.
STOP_S, WINDOW_S = 1.5, 2.0
IDLE_SHARE = 0.1  # of one core (idle is 0; a dry run takes what it can get)
TEXTS = (
    "Booked seat {n} on the TGV to Lyon; the receipt EXP-{k} is in the shared folder.",
    "Deploy of build {k} failed with HTTP 502 at step {n}, rolled back, logs kept.",
    "Ana moved the design review to {n} June; Bo will send the slides before then.",
    "The hotel Bellecour costs {n} EUR a night, breakfast included, near the station.",
    "ok thanks, noted for the {n}th",
)

#: Slow as a whole: a notebook of thousands of moments to build, dry runs of seconds.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A notebook of :data:`SIZE` moments over the last 170 days, served."""
    root = tmp_path_factory.mktemp("preview")
    home = root / "home"
    start = now_utc().replace(microsecond=0) - timedelta(days=170)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
        with Notebook.open(home, background_embedding=False) as nb:
            for s in range(SIZE // PER_SESSION):
                when = start + timedelta(days=s * 170 / (SIZE // PER_SESSION))
                session = nb.start_session(f"chat {s}", started=when)
                drafts = [
                    {
                        "text": TEXTS[i % len(TEXTS)].format(n=i + 1, k=1000 + s * 7 + i),
                        "speaker": "Ana" if i % 2 else "Bo",
                        "timestamp": when + timedelta(minutes=i),
                    }
                    for i in range(PER_SESSION)
                ]
                nb.record_many(session.id, drafts)
    server = Server(home, root / "server.log")
    yield server
    server.stop()


def owner(served: Server, browser: Browser, **options: object) -> BrowserContext:
    auth = {"Authorization": f"Bearer {served.token}"}
    return browser.new_context(base_url=served.url, extra_http_headers=auth, **options)  # type: ignore[arg-type]


def cpu_share(served: Server, seconds: float) -> float:
    """The share of one core the server used over the next ``seconds``."""
    before, t0 = served.cpu_seconds(), time.monotonic()
    time.sleep(seconds)
    return (served.cpu_seconds() - before) / (time.monotonic() - t0)


@pytest.mark.parametrize("leave", ["close the tab", "open another page"])
def test_leaving_the_preview_stops_its_dry_run(
    served: Server, browser: Browser, leave: str
) -> None:
    context = owner(served, browser)
    page = context.new_page()
    page.goto(PREVIEW, wait_until="commit")
    page.wait_for_selector(".preview-step", state="attached", timeout=HANG_GUARD_S * 1000)
    assert not page.locator("dl.grid").count(), "the dry run ended before the browser left"
    if leave == "close the tab":
        page.close()
    else:
        page.goto("about:blank")
    time.sleep(STOP_S)
    share = cpu_share(served, WINDOW_S)
    assert share < IDLE_SHARE, f"the server used {share:.0%} of a core after the browser left"
    with served.client() as api:
        assert api.get("/api/health").status_code == 200
    context.close()


def test_the_preview_streams_its_progress_then_the_figures_without_javascript(
    served: Server, browser: Browser
) -> None:
    context = owner(served, browser, java_script_enabled=False)
    page = context.new_page()
    page.goto(PREVIEW, wait_until="commit")
    step = page.wait_for_selector(".preview-step", state="attached", timeout=HANG_GUARD_S * 1000)
    assert step is not None and step.get_attribute("role") == "status"
    said = step.text_content() or ""
    assert any(said.startswith(s) for s in ("Copying the notebook: ", "Daily rollups: ")), said
    assert step.query_selector("progress") is not None  # the bar, labelled by the text
    page.wait_for_selector("text=Nothing was changed", timeout=HANG_GUARD_S * 1000)
    assert page.locator(".preview-step").count() >= 1
    assert all(not s.is_visible() for s in page.locator(".preview-step").all())
    assert page.locator("#preview-progress").is_hidden()
    terms = page.locator("dl.grid dt").all_inner_texts()
    values = dict(zip(terms, page.locator("dl.grid dd").all_inner_texts(), strict=True))
    before, after = values["Active moments"].split(" → ")
    assert int(before) == SIZE and 0 < int(after) < SIZE
    assert values["Originals leave"].startswith("from 20")  # the last weeks wait for it
    assert values["Originals leave"].endswith("when the monthly tier archives them")
    context.close()
