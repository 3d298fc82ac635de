"""The web pages in Debian's Chromium on a notebook with lists longer than a page (issue 32,
items 1-7): paging by clicking through every list, colour contrast checked by axe-core in
light and dark, a phone viewport, search hits that say where and how strongly they were
found, the owner's actions, the compaction preview and API docs that never leave the
machine. One served notebook and one browser for the module; each test is short."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agent_notebook import Notebook
from tests.support.server import Server
from tests.support.web_browser import in_ci

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

AXE = Path(__file__).parents[2] / "tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
BIG = 120  # moments in the big session: three pages of its timeline and of "lyon"
SESSIONS = 55  # two pages of sessions
THREADS = 52  # two pages of session notebooks
PHONE = {"width": 390, "height": 844}

#: Slow as a whole: the module's notebook takes seconds to build and serve, and a walk over
#: every page (axe, the phone) takes over ten.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("pages")
    home = root / "home"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
        with Notebook.open(home) as nb:
            big = nb.start_session("Plan the Lyon trip", started=T0)
            nb.record_many(
                big.id,
                [
                    {
                        "text": f"Lyon note {i}: book the train and museum tickets",
                        "speaker": "Ana" if i % 2 else "Bo",
                        "timestamp": T0 + timedelta(minutes=i),
                        "concepts": ["lyon", f"topic {i:03d}"],
                    }
                    for i in range(BIG)
                ],
            )
            for i in range(1, SESSIONS):
                small = nb.start_session(f"Errand {i}", started=T0 + timedelta(days=i))
                nb.record(small.id, f"Errand {i}: buy paint", speaker="Bo")
            # a fact for /subjects/Ana, under a concept the list has already
            nb.record(small.id, "I work at Tesco.", speaker="Ana", concepts=["errand"])
    server = Server(home, root / "server.log")
    with server.client() as api:
        for i in range(THREADS):
            put = api.put(
                f"/api/threads/t-{i:02d}/notebook/sections/Current State",
                json={"content": f"Thread {i}"},
            )
            assert put.status_code == 200, put.text
    yield server
    server.stop()


@pytest.fixture(scope="module")
def signed_in_state(served: Server, browser: Browser) -> dict[str, Any]:
    """The cookies of a browser signed in as the owner, through the sign-in page."""
    context = browser.new_context(base_url=served.url)
    page = context.new_page()
    page.goto("/sessions")
    page.fill("#token", served.token)
    page.click("text=Sign in >> nth=-1")
    page.wait_for_url("**/sessions")
    state: dict[str, Any] = context.storage_state()
    context.close()
    return state


def owner(
    served: Server, browser: Browser, state: dict[str, Any], **options: Any
) -> BrowserContext:
    return browser.new_context(base_url=served.url, storage_state=state, **options)  # type: ignore[arg-type]


def through_every_page(page: Page, start: str, item: str) -> list[str]:
    """Click Next from ``start`` until there is none: every item's text, in order."""
    page.goto(start)
    seen = page.locator(item).all_inner_texts()
    while page.locator("a[rel=next]").count():
        page.click("a[rel=next]")
        page.wait_for_load_state()
        assert page.locator("h1").count() == 1, page.content()[:500]  # a page, not a 422
        seen += page.locator(item).all_inner_texts()
    return seen


def test_every_list_pages_through_by_clicking(
    served: Server, browser: Browser, signed_in_state: dict[str, Any]
) -> None:
    context = owner(served, browser, signed_in_state)
    page = context.new_page()
    sessions = through_every_page(page, "/sessions", "tbody tr td:first-child a")
    assert len(sessions) == len(set(sessions)) == SESSIONS
    page.click("a[rel=prev]")
    assert page.locator("tbody tr").count() == 50 and "offset=0" in page.url
    concepts = through_every_page(page, "/concepts", "tbody tr td:first-child a")
    assert {"lyon", "topic 000", "topic 119", "errand"} <= set(concepts)
    assert len(concepts) == len(set(concepts)) == BIG + 3  # and "buy paint"
    lyon = through_every_page(page, "/concepts/lyon", "article.moment")
    assert len(lyon) == BIG
    timeline = through_every_page(page, "/sessions/s_2025-03-01_001/moments", "article.moment")
    assert len(timeline) == BIG and "Lyon note 119" in timeline[-1]
    threads = through_every_page(page, "/notebooks", "ul.log li a")
    assert len(threads) == THREADS
    page.goto("/sessions/s_2025-03-02_001/moments")  # one moment: no page links
    assert page.locator("article.moment").count() == 1
    assert page.locator("nav.pager").count() == 0
    context.close()


#: Every page the owner reaches from the navigation, and the pages one click further.
PAGES = [
    "/sessions",
    "/sessions/s_2025-03-01_001",
    "/sessions/s_2025-03-01_001/moments",
    "/search?q=train+tickets",
    "/search?q=train+tickets&asked_at=2025-03-02",  # the filters open, "Asked at" set
    "/concepts",
    "/concepts/lyon",
    "/conflicts",
    "/subjects/Ana",
    "/notebooks",
    "/notebooks/t-00",
    "/plots",
    "/housekeeping",
    "/moments/m_1",
    "/housekeeping/compact",
    "/slice",
]


def axe_violations(page: Page, rule: str) -> list[dict[str, Any]]:
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        "rule => axe.run(document, {runOnly: [rule]}).then(r => r.violations)", rule
    )
    return [{"page": page.url, "id": v["id"], "nodes": len(v["nodes"])} for v in found]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_colour_contrast_problem(
    served: Server, browser: Browser, signed_in_state: dict[str, Any], scheme: str
) -> None:
    if not AXE.exists():
        why = f"axe-core is not installed: npm ci --prefix {AXE.parents[2]}"
        if in_ci():
            pytest.fail(why)
        pytest.skip(why)
    # bypass_csp: axe is put into the page as a script of its own
    context = owner(served, browser, signed_in_state, color_scheme=scheme, bypass_csp=True)
    page = context.new_page()
    problems = []
    for path in PAGES:
        page.goto(path)
        assert page.locator("button").count() >= 1, path  # every page has a button
        problems += axe_violations(page, "color-contrast")
    assert problems == []
    context.close()


def test_axe_finds_no_table_header_without_a_name(
    served: Server, browser: Browser, signed_in_state: dict[str, Any]
) -> None:
    """Issue 43: the guest tokens' table on /housekeeping had an empty header cell."""
    if not AXE.exists():
        why = f"axe-core is not installed: npm ci --prefix {AXE.parents[2]}"
        if in_ci():
            pytest.fail(why)
        pytest.skip(why)
    context = owner(served, browser, signed_in_state, bypass_csp=True)
    page = context.new_page()
    problems = []
    for path in PAGES:
        page.goto(path)
        problems += axe_violations(page, "empty-table-header")
    assert problems == []
    assert page.goto("/housekeeping") and page.locator("thead th").count() == 5
    context.close()


def test_a_phone_gets_pages_that_fit(
    served: Server, browser: Browser, signed_in_state: dict[str, Any]
) -> None:
    context = owner(served, browser, signed_in_state, viewport=PHONE, is_mobile=True)
    page = context.new_page()
    for path in PAGES:
        page.goto(path)
        width = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], (path, width)
        assert page.locator("header.top").bounding_box()["height"] <= 64, path  # type: ignore[index]
        small = page.evaluate(TOO_SMALL)  # WCAG 2.2 AA 2.5.8: targets of 24 x 24 px or more
        assert small == [], (path, small)
    page.goto("/sessions")
    row = page.locator("tbody tr >> nth=0")
    assert row.evaluate("tr => getComputedStyle(tr).display") == "block"  # a card per session
    label = row.locator("td >> nth=2").evaluate("td => getComputedStyle(td, '::before').content")
    assert label == '"Status: "'  # each cell says what it is
    page.goto("/search?q=train+tickets")
    first = page.locator(".hit >> nth=0 >> article.moment").bounding_box()
    assert first is not None and first["y"] < PHONE["height"] / 2  # above the fold
    page.goto("/plots")
    overlaps = page.evaluate(OVERLAPPING_LABELS)
    assert overlaps == [], overlaps
    context.close()


#: Links, buttons and fields smaller than 24 x 24 px, except links inside a sentence
#: (WCAG's "inline" exception).
TOO_SMALL = """() => [...document.querySelectorAll('a, button, input, select, summary')]
  .filter(e => e.getClientRects().length && !e.closest('p:not(.concepts), li.empty, dd'))
  .filter(e => getComputedStyle(e).visibility !== 'hidden' && e.type !== 'hidden')
  .filter(e => !e.classList.contains('skip'))
  .map(e => [e, e.getBoundingClientRect()])
  .filter(([e, r]) => r.width > 0 && (r.width < 24 || r.height < 24))
  .map(([e, r]) => `${e.tagName} ${e.textContent.trim().slice(0, 20)} ${r.width}x${r.height}`)"""

#: Text labels of the plots whose boxes overlap another's.
OVERLAPPING_LABELS = """() => {
  const out = [];
  for (const svg of document.querySelectorAll('svg.plot')) {
    const boxes = [...svg.querySelectorAll('text')].map(t => [t.textContent, t.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, r] = boxes[i], [b, s] = boxes[j];
      if (r.left < s.right - 0.5 && s.left < r.right - 0.5 && r.top < s.bottom - 0.5 && s.top < r.bottom - 0.5)
        out.push(`${a} / ${b}`);
    }
  }
  return out;
}"""


def test_search_hits_say_where_and_how_strongly_and_offer_more(
    served: Server, browser: Browser, signed_in_state: dict[str, Any]
) -> None:
    context = owner(served, browser, signed_in_state)
    page = context.new_page()
    page.goto("/search?q=train+tickets&min_score=0")
    hits = page.locator(".hit")
    assert hits.count() == 20
    first = hits.nth(0)
    assert first.locator("a.sid").inner_text() == "s_2025-03-01_001"  # the session
    assert re.fullmatch(r"2025-03-01 \d\d:\d\d", first.locator("time").inner_text())  # date
    assert first.locator(".hit-rank").inner_text() == "#1"
    # its lexical rank (the turns beside a better one may lift a lower one to the top)
    rank = first.locator(".signal-value >> nth=0").inner_text()
    assert re.fullmatch(r"#[12]", rank)
    strengths = [
        float(hits.nth(i).locator(".signal .bar >> nth=0").get_attribute("aria-valuenow") or 0)
        for i in (0, 19)
    ]
    # a strength (1 for the signal's best, less below it), not a share summing to 1
    assert (strengths[0] == 1.0) == (rank == "#1") and strengths[0] > strengths[1]
    page.click("text=More results")  # the next page, put under the first in place
    page.wait_for_selector(".hit >> nth=39")
    assert page.locator(".hit").count() == 40 and "offset" not in page.url
    assert page.locator(".hit >> nth=20 >> .hit-rank").inner_text() == "#21"
    assert page.evaluate("document.activeElement.closest('.hit') !== null")  # focus on #21
    assert page.locator(".hit >> nth=20 >> a.mid").evaluate("a => a === document.activeElement")
    assert page.locator("a[rel=next]").count() == 1  # the next "More results"
    context.close()


def test_more_results_are_only_the_next_page(
    served: Server, browser: Browser, signed_in_state: dict[str, Any]
) -> None:
    """Issue 43: "More results" asked for every earlier hit again (page 32: 1,258 rows)."""
    ranks = re.compile(r'<span class="hit-rank">#(\d+)</span>')
    with served.client() as http:
        url = "/search?q=train+tickets&min_score=0"
        pages = []
        while url:
            answer = http.get(url)
            assert answer.status_code == 200, answer.text
            pages.append([int(r) for r in ranks.findall(answer.text)])
            more = re.search(r'<a href="([^"]+)" rel="next"', answer.text)
            url = more.group(1).replace("&amp;", "&") if more else ""
        too_far = http.get("/search", params={"q": "train", "offset": 990, "limit": 20})
        assert too_far.status_code == 422 and "at most 1000" in too_far.text
    assert pages == [list(range(i * 20 + 1, i * 20 + 21)) for i in range(BIG // 20)]
    # without JavaScript the link is a page of its own, with a way back
    context = owner(served, browser, signed_in_state, java_script_enabled=False)
    page = context.new_page()
    page.goto("/search?q=train+tickets&min_score=0")
    page.click("text=More results")
    assert "offset=20" in page.url and page.locator(".hit").count() == 20
    assert page.locator(".hit >> nth=0 >> .hit-rank").inner_text() == "#21"
    assert page.locator("h2 >> nth=0").inner_text() == "Results 21 to 40"
    page.click("a[rel=prev]")
    assert page.locator(".hit >> nth=0 >> .hit-rank").inner_text() == "#1"
    context.close()


def test_api_docs_stay_on_this_machine_and_can_authorize(served: Server, browser: Browser) -> None:
    context = browser.new_context(base_url=served.url)  # not signed in: the docs are open
    page = context.new_page()
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto("/redoc")
    page.wait_for_selector("h1")  # ReDoc rendered the description
    page.wait_for_load_state("networkidle")
    page.goto("/docs")
    page.wait_for_selector("button.authorize")
    page.wait_for_load_state("networkidle")
    assert "owner-token" in page.inner_text("#how-to-authorize")
    outside = [u for u in requested if not u.startswith((served.url, "data:", "blob:"))]
    assert outside == [] and len(requested) > 3
    page.click("button.authorize")
    page.fill(".modal-ux input", served.token)
    page.click(".modal-ux button.authorize")
    page.click(".modal-ux button.close-modal")
    listing = page.locator(".opblock-get:has(.opblock-summary-path[data-path='/api/sessions'])")
    listing.locator(".opblock-summary-control").click()
    listing.locator("text=Try it out").click()
    listing.locator("text=Execute").click()
    status = listing.locator(".live-responses-table tbody .response-col_status >> nth=0")
    assert status.inner_text().strip() == "200"
    context.close()


def test_the_owner_filters_sorts_marks_and_deletes(
    served: Server, browser: Browser, signed_in_state: dict[str, Any]
) -> None:
    context = owner(served, browser, signed_in_state)
    page = context.new_page()
    page.goto("/sessions")  # filter and sort the sessions
    page.fill("#sq", "errand 1")
    page.select_option("#sorder", "-started")
    page.click("text=Show")
    tasks = page.locator("tbody td[data-label=Task]").all_inner_texts()
    assert tasks == [f"Errand {i}" for i in (19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 1)]
    errands = through_every_page(page, "/sessions?q=errand&order=activity", "td[data-label=Task]")
    assert len(errands) == SESSIONS - 1 and errands[0] == "Errand 54"  # Next keeps the filter
    page.goto("/sessions?q=errand+1")
    page.select_option("#sstatus", "done")
    page.click("text=Show")
    assert page.inner_text("tbody") == "No session matches."
    page.goto("/concepts")  # find a concept among three pages of them
    page.fill("#cq", "topic 11")
    page.press("#cq", "Enter")
    found = page.locator("tbody td:first-child a").all_inner_texts()
    assert found == [f"topic {i}" for i in range(110, 120)]
    assert page.locator("nav.pager").count() == 0

    page.goto("/moments/m_1")  # importance and pin; the text stays as recorded
    assert "text is immutable" in page.inner_text("#h-marks + p")
    page.fill("#importance", "0.9")
    page.check("input[name=pinned]")
    with page.expect_navigation():  # the form posts, then the page is shown again
        page.click("text=Save marks")
    assert page.locator("article.moment .tag", has_text="pinned").count() == 1
    assert "0.90" in page.inner_text("dl.grid")
    assert "Lyon note 0" in page.inner_text("article.moment .text")

    with served.client() as api:  # delete a session: a confirmation first
        made = api.post("/api/sessions", json={"task": "Throwaway"})
        assert made.status_code == 201, made.text
        doomed = made.json()["id"]
    page.goto(f"/sessions/{doomed}")
    page.click("text=Delete session…")
    assert "cannot be undone" in page.inner_text("[role=alert]")
    page.click(f"text=Delete {doomed} for good")
    assert "Removed 0 moments" in page.inner_text("[role=status]")
    assert page.goto(f"/sessions/{doomed}").status == 404  # type: ignore[union-attr]
    context.close()


def test_the_compaction_preview_shows_progress_then_a_summary(
    served: Server, browser: Browser, signed_in_state: dict[str, Any]
) -> None:
    context = owner(served, browser, signed_in_state)
    page = context.new_page()
    page.goto("/housekeeping/compact", wait_until="commit")
    # the first part, streamed before the dry run ends (attached: a quick run may hide it
    # again before the browser looks)
    page.wait_for_selector("#preview-progress", state="attached")
    page.wait_for_selector("text=Nothing was changed")
    assert page.locator("#preview-progress").is_hidden()
    assert page.locator("dl.grid dt >> nth=0").inner_text() == "Active moments"  # summary first
    titles = page.locator("svg.plot > title").all_text_contents()
    assert titles == ["Active moments, before and after", "Active tokens, before and after"]
    dropped = page.locator("td[data-label=Dropped]").all_inner_texts()
    assert all(not d.startswith("0 of") for d in dropped)  # only rollups that drop something
    context.close()


#: Every target in the page's header (the brand, the navigation's links, sign-out) that
#: overlaps another, is under 24 x 24 px or is narrower than its own text, each box clipped
#: to what the navigation shows when it scrolls sideways (issue 43, item 1).
HEADER_CLASHES = """() => {
  const nav = document.querySelector('header.top nav').getBoundingClientRect();
  const out = [];
  const text = e => { const r = document.createRange(); r.selectNodeContents(e); return r.getBoundingClientRect(); };
  const clip = (r, c) => ({left: Math.max(r.left, c.left), right: Math.min(r.right, c.right),
                           top: Math.max(r.top, c.top), bottom: Math.min(r.bottom, c.bottom)});
  const hit = (r, s) => r.left < s.right - 0.5 && s.left < r.right - 0.5 && r.top < s.bottom - 0.5 && s.top < r.bottom - 0.5;
  const links = [...document.querySelectorAll('header.top nav a')];
  for (const a of links) {
    const r = a.getBoundingClientRect(), t = text(a);
    if (r.width < 24 || r.height < 24) out.push(`${a.textContent} is ${r.width}x${r.height}`);
    if (t.left < r.left - 0.5 || t.right > r.right + 0.5) out.push(`${a.textContent}: its text overflows`);
  }
  for (let i = 0; i < links.length; i++) for (let j = i + 1; j < links.length; j++) {
    if (hit(links[i].getBoundingClientRect(), links[j].getBoundingClientRect()))
      out.push(`${links[i].textContent} / ${links[j].textContent}`);
    if (hit(text(links[i]), text(links[j])))
      out.push(`${links[i].textContent} / ${links[j].textContent}: their text`);
  }
  const shown = [...document.querySelectorAll('header.top .brand, header.top nav a, header.top button')]
    .map(e => [e.textContent.trim(), e.closest('nav') ? clip(e.getBoundingClientRect(), nav) : e.getBoundingClientRect()])
    .filter(([, r]) => r.right - r.left > 0.5);
  for (let i = 0; i < shown.length; i++) for (let j = i + 1; j < shown.length; j++)
    if (hit(shown[i][1], shown[j][1])) out.push(`${shown[i][0]} / ${shown[j][0]} as shown`);
  return out;
}"""


def test_the_header_links_keep_their_text_width_on_a_phone(
    served: Server, browser: Browser, signed_in_state: dict[str, Any]
) -> None:
    context = owner(served, browser, signed_in_state, viewport=PHONE, is_mobile=True)
    page = context.new_page()
    for path in ("/sessions", "/search?q=train+tickets", "/notebooks/t-00", "/housekeeping"):
        page.goto(path)
        assert page.evaluate(HEADER_CLASHES) == [], path
        assert page.locator("header.top nav a").count() == 8
    # the page's own link is scrolled into the navigation's view
    current = page.locator("header.top nav a[aria-current=page]")
    assert current.inner_text() == "Housekeeping"
    nav = page.locator("header.top nav").bounding_box()
    box = current.bounding_box()
    assert (
        nav
        and box
        and nav["x"] - 0.5 <= box["x"]
        and box["x"] + box["width"] <= nav["x"] + nav["width"] + 0.5
    )
    context.close()


def test_a_stale_edit_says_so_at_the_top_in_plain_words(
    served: Server, browser: Browser, signed_in_state: dict[str, Any]
) -> None:
    """Issue 43: the 409 page opened at its top, the message far below, with raw ETags."""
    context = owner(served, browser, signed_in_state, viewport=PHONE, is_mobile=True)
    page = context.new_page()
    page.goto("/notebooks/t-51")
    page.click("text=Edit Worklog")
    page.fill("#ed-7", "- 9:00 booked the train")
    with served.client() as other:  # another client writes the section meanwhile
        put = other.put(
            "/api/threads/t-51/notebook/sections/Worklog", json={"content": "- 8:55 museum"}
        )
        assert put.status_code == 200, put.text
    with page.expect_response(lambda r: r.request.method == "POST") as posted:
        page.click("text=Save Worklog")
    assert posted.value.status == 409
    alert = page.locator("[role=alert] >> nth=0")
    box = alert.bounding_box()
    assert box and box["y"] >= 0 and box["y"] + box["height"] <= PHONE["height"]  # in view
    said = alert.inner_text()
    assert "Worklog" in said and "changed" in said
    shown = page.inner_text("main")
    assert not re.search(r"If-Match|ETag|[0-9a-f]{20}", shown), shown  # no raw ETags
    assert page.input_value("#ed-7") == "- 9:00 booked the train"  # the unsaved text kept
    assert "- 8:55 museum" in page.inner_text(".section.conflict pre")  # theirs, to compare
    page.click("text=Save Worklog")  # saved again on purpose: it replaces theirs
    assert page.locator("[role=alert]").count() == 0
    assert "- 9:00 booked the train" in page.inner_text("#Worklog pre")
    context.close()
