"""Edges every front end must meet alike, on a real ``agent-notebook serve`` (and the CLI and
MCP where they apply): a web form's value that is not a number, a concept whose name holds
"/", a query over the one length cap, and a moment of exactly ``moments.max_text_bytes``
posted over HTTP (the body limit must leave room for it, JSON-escaped)."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import httpx

from agent_notebook.config import DEFAULT_MAX_TEXT_BYTES
from agent_notebook.notebook.checks import MAX_QUERY_CHARS
from tests.support.clirun import text_cli
from tests.support.server import Server, assert_error, new_session, over_mcp


def assert_page_error(answer: httpx.Response, status: int, *words: str) -> str:
    """A web page's error: an HTML page (not JSON, not a 5xx) naming what was wrong."""
    assert answer.status_code == status, answer.text
    assert "text/html" in answer.headers["content-type"]
    text = unescape(answer.text)
    for word in words:
        assert word in text, text
    return text


def test_a_web_min_score_that_is_not_a_number_gets_a_readable_422(api: httpx.Client) -> None:
    for params in ({"q": "lake", "min_score": "abc"}, {"min_score": "abc"}):
        assert_page_error(api.get("/search", params=params), 422, "min_score", "'abc'")
    assert_page_error(api.get("/search", params={"q": "lake", "min_score": "7"}), 422, "min_score")
    assert api.get("/search", params={"q": "lake", "min_score": "0.5"}).status_code == 200


def links_to(html: str, name: str) -> set[str]:
    """The hrefs and form actions of ``html`` that lead to the concept ``name``."""
    found = set(re.findall(r'(?:href|action)="(/concepts/[^"]+)"', html))
    return {unescape(url) for url in found if "tcp" in url}


def test_a_concept_with_a_slash_opens_and_is_forgotten_on_the_pages(api: httpx.Client) -> None:
    sid = new_session(api, "Networking notes")
    made = api.post(
        f"/api/sessions/{sid}/moments",
        json={"text": "Ana read the TCP/IP book", "concepts": ["tcp/ip"]},
    )
    assert made.status_code == 201, made.text
    mid = made.json()["id"]

    index = api.get("/concepts").text  # the index and the moment's tag link to the concept
    moment = api.get(f"/moments/{mid}").text
    links = links_to(index, "tcp/ip") | links_to(moment, "tcp/ip")
    assert links == {"/concepts/tcp%2Fip"}, links
    opened = api.get("/concepts/tcp%2Fip")
    assert opened.status_code == 200, opened.text
    assert "Ana read the TCP/IP book" in opened.text
    (forget,) = {u for u in links_to(opened.text, "tcp/ip") if u.endswith("/forget")}
    dry = api.post(forget, data={"reason": "test"})
    assert dry.status_code == 200, dry.text
    assert api.get("/concepts/tcp%2Fip").status_code == 200  # a dry run changed nothing
    (confirm,) = {u for u in links_to(dry.text, "tcp/ip") if u.endswith("/forget")}
    done = api.post(confirm, data={"reason": "test", "confirm": "yes"})
    assert done.status_code == 200, done.text
    assert_page_error(api.get("/concepts/tcp%2Fip"), 404, "tcp/ip")
    assert "TCP/IP" not in api.get(f"/moments/{mid}").text


def test_one_query_length_cap_on_every_front_end(
    server: Server, api: httpx.Client, tmp_path: Path
) -> None:
    long = "lake " * (MAX_QUERY_CHARS // 5) + "x"  # one character over the cap
    assert len(long) == MAX_QUERY_CHARS + 1
    cap = f"{MAX_QUERY_CHARS:,}"
    assert_error(api.get("/api/search", params={"q": long}), 422, "query", cap)
    assert_error(api.get("/api/slice", params={"q": long}), 422, "query", cap)
    assert_page_error(api.get("/search", params={"q": long}), 422, "query", cap)
    for tool in ("search", "slice"):
        failed, text = over_mcp(server, tool, {"query": long})
        assert failed and "query" in text and cap in text, text
    quiet = {"AGENT_NOTEBOOK_EMBEDDER": "none"}
    assert text_cli(tmp_path / "home", "init", env=quiet).returncode == 0
    done = text_cli(tmp_path / "home", "search", long, "--mode", "lexical", env=quiet)
    assert done.returncode == 1 and "query" in done.stderr and cap in done.stderr, done.stderr
    assert api.get("/search", params={"q": long[:MAX_QUERY_CHARS]}).status_code == 200


def test_a_text_of_exactly_max_text_bytes_fits_in_a_request(api: httpx.Client) -> None:
    sid = new_session(api, "Long texts")
    limit = DEFAULT_MAX_TEXT_BYTES
    # Control characters: each is one byte of UTF-8 and six of JSON (\u0001), the worst case.
    escaped = "\x01" * (limit - 1) + "z"
    body = json.dumps({"text": escaped}).encode()
    assert len(body) > 6 * (limit - 1)
    headers = {"content-type": "application/json"}
    stored = api.post(f"/api/sessions/{sid}/moments", content=body, headers=headers)
    assert stored.status_code == 201, stored.text[:300]
    plain = api.post(f"/api/sessions/{sid}/moments", json={"text": "a" * limit})
    assert plain.status_code == 201, plain.text[:300]
    one_more = api.post(f"/api/sessions/{sid}/moments", json={"text": "a" * (limit + 1)})
    assert_error(one_more, 422, "max_text_bytes")
    one_more = json.dumps({"text": "\x01" * (limit + 1)}).encode()
    answer = api.post(f"/api/sessions/{sid}/moments", content=one_more, headers=headers)
    assert_error(answer, 422, "max_text_bytes")


def test_a_chat_turn_longer_than_the_query_cap_still_finds_its_context(api: httpx.Client) -> None:
    """The chat searches the notebook with the turn's message: one over the query cap (a
    pasted document) is searched by its start and end, not refused."""
    sid = new_session(api, "Pasted notes")
    made = api.post(f"/api/sessions/{sid}/moments", json={"text": "The heron nests by the weir"})
    assert made.status_code == 201, made.text
    created = api.post("/api/chat/sessions", json={"title": "Long", "thread_id": "long-1"})
    assert created.status_code == 201, created.text
    message = "where does the heron nest? " + "filler " * MAX_QUERY_CHARS + " and the weir?"
    turn = api.post("/api/chat/execute", json={"session_id": "long-1", "message": message})
    assert turn.status_code == 200, turn.text[:500]
    context = api.post("/api/chat/context", json={"session_id": "long-1", "message": message})
    assert context.status_code == 200 and "heron nests" in context.text, context.text[:500]
