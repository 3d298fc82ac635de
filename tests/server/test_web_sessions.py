"""The web sign-in cookie holds a server-side session id, never the token: sign-out ends the
session on the server (a copied cookie stops working), and revoking the token ends the
sessions made with it. Over a real ``agent-notebook serve``."""

from __future__ import annotations

import re
from contextlib import closing

import httpx

from tests.support.server import Server


def sign_in(url: str, token: str) -> tuple[httpx.Client, str]:
    """A browser-like client signed in with ``token``, and its cookie's value."""
    client = httpx.Client(base_url=url, timeout=30)
    answer = client.post("/signin", data={"token": token, "next": "/sessions"})
    assert answer.status_code == 303, answer.text
    (value,) = client.cookies.values()
    return client, value


def csrf_of(client: httpx.Client) -> str:
    found = re.search(r'name="csrf-token" content="([0-9a-f]+)"', client.get("/sessions").text)
    assert found
    return found.group(1)


def test_the_cookie_is_a_session_that_sign_out_ends(server: Server) -> None:
    browser, cookie = sign_in(server.url, server.token)
    with closing(browser):
        assert cookie != server.token and server.token not in cookie
        stored = "".join(p.read_text() for p in (server.home / "secrets").glob("*.json"))
        assert cookie not in stored  # kept hashed
        assert browser.get("/sessions").status_code == 200
        copy = httpx.Client(base_url=server.url, timeout=30, cookies={"x": "y"})
        copy.cookies.clear()
        copy.cookies.update(browser.cookies)
        with copy:
            assert copy.get("/sessions").status_code == 200  # a copied cookie works...
            out = browser.post("/signout", data={"csrf": csrf_of(browser)})
            assert out.status_code == 303
            gone = copy.get("/sessions")  # ...until sign-out ends the session
            assert gone.status_code == 303 and gone.headers["location"].startswith("/signin")
            assert copy.post("/sessions/s_x/pending", data={"what": "x"}).status_code == 401
        # the token itself still works, and a new sign-in gets a new session
        with server.client() as script:
            assert script.get("/sessions").status_code == 200
    again, second = sign_in(server.url, server.token)
    with closing(again):
        assert second != cookie and again.get("/sessions").status_code == 200


def test_a_token_as_the_cookie_is_not_taken(server: Server) -> None:
    for name in ("agent_notebook_session", "agent_notebook_token"):
        with httpx.Client(base_url=server.url, timeout=30, cookies={name: server.token}) as raw:
            assert raw.get("/sessions").status_code == 303


def test_revoking_a_guest_token_ends_its_sessions(server: Server) -> None:
    with server.client() as owner:
        made = owner.post("/housekeeping/tokens", data={"name": "visitor"})
        found = re.search(r'<code class="secret"[^>]*>([^<]+)</code>', made.text)
        assert found
    guest, _ = sign_in(server.url, found.group(1))
    with closing(guest):
        assert guest.get("/slice", params={"q": "x"}).status_code == 200
        with server.client() as owner:
            asked = owner.post("/housekeeping/tokens/visitor/revoke")  # a confirmation first
            assert asked.status_code == 200 and "Revoke visitor for good" in asked.text
            assert guest.get("/slice", params={"q": "x"}).status_code == 200  # not yet
            revoked = owner.post("/housekeeping/tokens/visitor/revoke", data={"confirm": "yes"})
            assert revoked.status_code in (200, 303), revoked.text
        assert guest.get("/slice", params={"q": "x"}).status_code == 303
