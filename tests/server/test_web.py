"""The web pages on a real ``agent-notebook serve`` over an ingested LoCoMo conversation:
sign-in, the cookie and CSRF rules over plain HTTP, then the owner's and a guest's walk
through the pages in headless Chromium (every request to 127.0.0.1, no console error)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.support.media import make_image
from tests.support.server import ENV, Server, csrf_of, signed_in
from tests.support.web_browser import ingest, locomo_file

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

THREAD = "t-web"
SECTION = "Current State"


#: Slow as a whole: its tests share an ingested notebook's server and a browser (module
#: fixtures), kept together.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("web")
    home = root / "home"
    ingest(home, locomo_file(root / "locomo.json"), ENV)
    server = Server(home, root / "server.log")
    with server.client() as api:
        with make_image(root / "sunset.png", 3).open("rb") as image:  # m_6, with its image
            made = api.post(
                "/api/sessions/s_2023-05-12_001/moments/media",
                files={"file": ("sunset.png", image, "image/png")},
                data={"text": "A photo of my sunset painting", "speaker": "Ana"},
            )
        assert made.status_code == 201, made.text
        put = api.put(
            f"/api/threads/{THREAD}/notebook/sections/{SECTION}",
            json={"content": "Planning the lake paintings."},
        )
        assert put.status_code == 200, put.text
    yield server
    server.stop()


def test_cookie_sign_in_csrf_and_guests_over_http(served: Server) -> None:
    with httpx.Client(base_url=served.url, timeout=30) as anonymous:
        first = anonymous.get("/sessions")
        assert first.status_code == 303 and first.headers["location"].startswith("/signin")
        assert anonymous.get("/").status_code == 303
        wrong = anonymous.post("/signin", data={"token": "nope"})
        assert wrong.status_code == 401 and "not valid" in wrong.text
        docs = anonymous.get("/docs").text + anonymous.get("/redoc").text
        assert "/docs-assets/swagger-ui-bundle.js" in docs and "cdn" not in docs.lower()
        assert anonymous.get("/docs-assets/redoc.standalone.js").status_code == 200

    with signed_in(served, served.token) as owner:
        assert "s_2023-05-08_001" in owner.get("/sessions").text
        # the cookie is for the pages only: the API still needs the bearer header
        assert owner.get("/api/sessions").status_code == 401
        session = "/sessions/s_2023-05-08_001"
        refused = owner.post(f"{session}/pending", data={"what": "forged"})
        assert refused.status_code == 403 and "CSRF" in refused.text
        token = csrf_of(owner)
        foreign = owner.post(
            f"{session}/pending",
            data={"what": "forged", "csrf": token},
            headers={"Origin": "http://evil.example"},
        )
        assert foreign.status_code == 403
        assert "forged" not in owner.get(session).text  # nothing was changed
        done = owner.post(f"{session}/pending", data={"what": "frame the sunset", "csrf": token})
        assert done.status_code == 303 and "frame the sunset" in owner.get(session).text

    with served.client() as script:  # a bearer header needs no CSRF token (no browser adds it)
        made = script.post("/housekeeping/tokens", data={"name": "viewer"})
        assert made.status_code == 200
        guest_token = re.search(r'<code class="secret"[^>]*>([^<]+)</code>', made.text)
        assert guest_token
    with served.client(guest_token.group(1)) as guest:
        assert guest.get("/slice", params={"q": "painting"}).status_code == 200
        for path in ("/sessions", "/search?q=lake", "/moments/m_1", "/housekeeping"):
            answer = guest.get(path)
            assert answer.status_code == 403 and "text/html" in answer.headers["content-type"]
            assert "lake" not in answer.text
        assert guest.post("/housekeeping/tokens/viewer/revoke").status_code == 403


def watch(page: Page, base: str) -> tuple[list[str], list[str]]:
    """Every URL the page requests, and every console error or uncaught exception."""
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return requests, errors


def test_owner_and_guest_walk_through_the_pages(served: Server, browser: Browser) -> None:
    base = served.url
    context = browser.new_context(base_url=base)
    page = context.new_page()
    requests, errors = watch(page, base)

    # sign in, then the sessions of the ingested conversation and a timeline
    page.goto("/sessions")
    page.fill("#token", served.token)
    page.click("text=Sign in >> nth=-1")
    page.wait_for_url("**/sessions")
    assert page.locator("tbody tr").count() == 2
    page.click("text=s_2023-05-08_001")
    page.select_option("#task_status", "paused")
    page.click("text=Save")
    assert page.locator("#task_status").input_value() == "paused"
    page.click("text=Timeline")
    assert page.locator("article.moment").count() == 3
    assert "I started painting sunsets" in page.inner_text("main")
    assert "Ana" in page.inner_text("article.moment >> nth=0")
    page.goto("/sessions/s_2023-05-12_001/moments")  # the image from the media store
    image = page.locator("article.moment img")
    image.scroll_into_view_if_needed()
    page.wait_for_function("() => document.querySelector('article.moment img').complete")
    assert image.evaluate("img => img.naturalWidth") == 128

    # search, with the explain bars
    page.goto("/search")
    page.fill("#q", "painting")
    page.press("#q", "Enter")
    page.wait_for_url("**/search?q=painting*")
    assert page.locator(".hit").count() >= 1
    assert page.locator(".hit >> nth=0 >> .signal .bar").count() >= 1
    assert "lexical" in page.inner_text(".hit >> nth=0 >> .explain")
    page.set_input_files("#example", str(served.home.parent / "sunset.png"))  # by example
    page.click("text=Find similar")
    assert page.locator(".hit >> nth=0 >> a.mid").inner_text() == "m_6"
    assert "media" in page.inner_text(".hit >> nth=0 >> .explain")

    # the plots and the compaction preview
    page.goto("/plots")
    assert page.locator("svg.plot").count() == 2
    bars = page.locator("svg.plot >> nth=0 >> rect > title").all_text_contents()
    assert sum(not b.endswith(": 0 moments") for b in bars) >= 2  # 2023 and today
    page.goto("/housekeeping")
    page.click("text=Preview compaction (dry run)")  # streamed: progress, then the summary
    page.wait_for_selector("text=Nothing was changed")
    assert page.locator("#preview-progress").is_hidden()
    assert page.locator("svg.plot rect").count() == 4

    # edit a section; another client changes it meanwhile: a conflict, the typed text kept
    page.goto(f"/notebooks/{THREAD}")
    page.click(f"text=Edit {SECTION}")
    box = page.locator("textarea >> nth=0")
    box.fill("Mixing cobalt and orange.")
    with served.client() as other:
        changed = other.put(
            f"/api/threads/{THREAD}/notebook/sections/{SECTION}",
            json={"content": "Another client wrote this."},
        )
        assert changed.status_code == 200
    page.click(f"text=Save {SECTION}")
    alert = page.locator("[role=alert]")
    assert f"{SECTION} was changed elsewhere" in alert.inner_text()
    assert page.locator("textarea >> nth=0").input_value() == "Mixing cobalt and orange."
    assert "Another client wrote this." in page.inner_text(".section.conflict pre")
    page.fill("textarea >> nth=0", "   ")  # blank: refused by the facade, nothing changed
    page.click(f"text=Save {SECTION}")
    assert "empty" in page.inner_text("[role=alert]")
    assert "empty" in page.inner_text(".section.conflict .error")
    page.fill("textarea >> nth=0", "Mixing cobalt and orange.")
    page.click(f"text=Save {SECTION}")
    assert page.locator(".section.conflict").count() == 0
    assert "Mixing cobalt and orange." in page.inner_text("main")

    # redact a moment: a reason, a confirmation, then the tombstone; gone from search too
    page.goto("/search?q=alarm")
    page.click(".hit >> nth=0 >> a.mid")
    assert "4417" in page.inner_text("main")
    page.fill("#reason", "an alarm code")
    page.click("text=Redact…")
    assert "cannot be undone" in page.inner_text("main")
    page.click("text=Redact for good")
    assert "Redacted" in page.inner_text(".tombstone") and "an alarm code" in page.inner_text(
        ".tombstone"
    )
    assert "4417" not in page.content()
    for query in ("4417", "alarm code"):  # min_score 0: every match, however weak
        page.goto(f"/search?q={query}&min_score=0")
        assert all("4417" not in t for t in page.locator(".hit").all_inner_texts())
    assert page.locator(".hit").count() == 0 or "Redacted" in page.inner_text(".hit")

    # forget a concept after its preview
    page.goto("/concepts/biscuit")
    page.click("text=Preview what would go…")
    preview = page.inner_text("main")
    assert "dry run" in preview and "m_4" in preview and "m_5" in preview
    page.fill("#reason", "not about the dog")
    page.click("text=Forget for good")
    assert "Forgot" in page.inner_text("h1")
    page.goto("/search?q=Biscuit")
    assert page.locator(".hit").count() == 0

    # a guest token: created, its view only the slice, then revoked
    page.goto("/housekeeping")
    page.fill("#guest-name", "planner")
    page.click("text=Create token")
    guest_token = page.inner_text("code.secret").strip()
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
    page.click("text=Copy token")
    assert page.evaluate("navigator.clipboard.readText()") == guest_token
    assert page.locator("text=Revoke planner").count() == 1
    guest_context = browser.new_context(base_url=base)
    guest = guest_context.new_page()
    guest_requests, guest_errors = watch(guest, base)
    guest.goto("/")
    guest.fill("#token", guest_token)
    guest.click("text=Sign in >> nth=-1")
    guest.wait_for_url("**/slice")
    assert guest.locator("nav a").all_inner_texts() == ["Slice"]
    guest.fill("#q", "painting")
    guest.click("text=Get slice")
    assert "painting" in guest.inner_text("pre.slice")
    guest.fill("#wb-session", "s_2023-05-08_001")  # the guest's write-back form
    guest.select_option("#wb-kind", "decision")
    guest.fill("#wb-text", "Use the lake sketches for the poster")
    guest.click("button:has-text('Write back')")
    assert "guest:planner" in guest.inner_text("[role=status]")
    page.goto("/sessions/s_2023-05-08_001")
    assert "Use the lake sketches for the poster" in page.inner_text("#decisions")
    guest.goto("/sessions")
    assert "not for guests" in guest.inner_text("[role=alert]")
    page.goto("/housekeeping")
    page.click("text=Revoke planner…")  # a confirmation first
    assert "refuses this token" in page.inner_text("[role=alert]")
    page.click("text=Revoke planner for good")
    assert page.locator("text=Revoke planner").count() == 0
    guest.goto("/slice")
    assert "/signin" in guest.url  # the revoked token signs in no more

    # the API docs work offline too
    page.goto("/docs")
    page.wait_for_selector(".swagger-ui .info", timeout=15_000)

    for url in requests + guest_requests:
        assert url.startswith(base + "/") or url.startswith(("data:", "blob:")), url
    # Chromium logs each page answered 4xx; those this walk asks for (a conflict, a blank
    # section, a guest refused) are expected, any other error is not
    expected = re.compile(r"Failed to load resource: .* status of (401|403|409|422) ")
    assert [e for e in errors + guest_errors if not expected.match(e)] == []
    guest_context.close()
    context.close()
