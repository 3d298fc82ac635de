"""When a question is asked (issue 42) on every front end: the same words, "what did we
decide yesterday", find the decision of the day before ``asked_at``, a year apart; a bad
``asked_at`` is each front end's clear error and changes nothing. A real notebook, the
command line (one real process), a real server process: its HTTP API, its MCP client on
``/mcp/`` and its web search page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.types import TextContent

from agent_notebook import config as cfg
from tests.support.clirun import cli, cli_process, counts, data
from tests.support.server import Server, mcp_session, signed_in

ENV = {cfg.EMBEDDER_ENV: "none"}
QUESTION = "what did we decide yesterday"
LAKE = "We decided to book the lake house."
CITY = "We decided on the city flat."
BAD = ("yesterday", "2026-13-01")


def _days(year: int, decision: str) -> list[dict[str, str]]:
    """20 to 29 November of ``year``, a turn a day: the decision on the 25th, filler else."""
    start = datetime(year, 11, 20, 10, tzinfo=UTC)
    return [
        {
            "text": decision if day == 5 else f"Filler about groceries and the weather, {day}.",
            "speaker": "ana",
            "timestamp": (start + timedelta(days=day)).isoformat(),
        }
        for day in range(10)
    ]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("asked") / "home"
    root.mkdir(mode=0o700)
    assert cli(root, "init", env=ENV).returncode == 0
    for year, decision in ((2026, LAKE), (2027, CITY)):
        said = json.dumps(_days(year, decision))
        done = cli(root, "record", "--task", f"Holidays {year}", "-f", "json", stdin=said, env=ENV)
        assert done.returncode == 0, done.stderr
    return root


def _first(hits: list[dict[str, Any]]) -> str:
    assert hits, "no hit"
    return str(hits[0]["moment"]["content"]["text"])


def test_the_command_line_reads_yesterday_from_asked_at(home: Path) -> None:
    before = counts(home)
    # the real process for one, the entry point in this process for the rest
    done = cli_process(home, "search", QUESTION, "--asked-at", "2026-11-26", "-f", "json", env=ENV)
    assert _first(data(done)) == LAKE
    later = cli(home, "search", QUESTION, "--asked-at", "2027-11-26T09:00", "-f", "json", env=ENV)
    assert _first(data(later)) == CITY
    for bad in BAD:
        refused = cli(home, "search", QUESTION, "--asked-at", bad, env=ENV)
        assert refused.returncode == 1, refused.stderr  # as --as-of: an invalid input
        message = refused.stderr.decode()
        assert "--asked-at" in message and repr(bad) in message, message
        assert refused.stdout == b""
    sliced = cli(home, "slice", "what did we decide", "--asked-at", "nonsense", env=ENV)
    assert sliced.returncode == 1 and "--asked-at" in sliced.stderr.decode()
    assert counts(home) == before


@pytest.fixture(scope="module")
def served(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(home, tmp_path_factory.mktemp("asked-log") / "server.log")
    yield server
    server.stop()


def test_http_reads_yesterday_from_asked_at_and_refuses_a_bad_one(served: Server) -> None:
    with served.client() as api:
        moments = api.get("/api/stats").json()["moments"]

        def first(asked_at: str) -> str:
            answer = api.get("/api/search", params={"q": QUESTION, "asked_at": asked_at})
            assert answer.status_code == 200, answer.text
            return _first(answer.json()["items"])

        assert first("2026-11-26") == LAKE
        assert first("2027-11-26T09:00:00+01:00") == CITY
        for bad in BAD:
            refused = api.get("/api/search", params={"q": QUESTION, "asked_at": bad})
            assert refused.status_code == 422, refused.text
            assert "asked_at" in refused.text
        sliced = api.get("/api/slice", params={"q": QUESTION, "asked_at": "2026-11-26"})
        assert sliced.status_code == 200, sliced.text
        assert LAKE in sliced.json()["rendered"]
        assert api.get("/api/stats").json()["moments"] == moments


def test_mcp_search_reads_yesterday_from_asked_at_and_refuses_a_bad_one(
    served: Server,
) -> None:
    async def work(session: ClientSession) -> dict[str, Any]:
        async def call(asked_at: str) -> tuple[bool, list[str]]:
            result = await session.call_tool("search", {"query": QUESTION, "asked_at": asked_at})
            texts = [c.text for c in result.content if isinstance(c, TextContent)]
            return bool(result.isError), texts

        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        return {
            "schema": tools["search"].inputSchema["properties"],
            "earlier": await call("2026-11-26"),
            "later": await call("2027-11-26"),
            "bad": [await call(bad) for bad in BAD],
        }

    found = mcp_session(served, work)
    assert "asked_at" in found["schema"]
    for key, decision in (("earlier", LAKE), ("later", CITY)):
        error, texts = found[key]
        assert not error, texts
        assert json.loads(texts[0])["text"] == decision
    for error, texts in found["bad"]:
        assert error and "asked_at" in " ".join(texts), texts


def test_the_web_search_form_asks_at_a_day(served: Server) -> None:
    with signed_in(served, served.token) as browser:
        form = browser.get("/search").text
        assert 'name="asked_at"' in form and "Asked at" in form
        page = browser.get("/search", params={"q": QUESTION, "asked_at": "2026-11-26"}).text
        first = re.search(r'<li class="hit">.*?</li>', page, re.S)
        assert first is not None and LAKE in first[0], page
        later = browser.get("/search", params={"q": QUESTION, "asked_at": "2027-11-26"}).text
        first = re.search(r'<li class="hit">.*?</li>', later, re.S)
        assert first is not None and CITY in first[0]
        refused = browser.get("/search", params={"q": QUESTION, "asked_at": "yesterday"})
        assert refused.status_code == 422 and "asked at" in refused.text, refused.text
