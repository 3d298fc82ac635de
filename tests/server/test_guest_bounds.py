"""A guest within bounds on a real ``agent-notebook serve``: its write-backs capped alike
over HTTP, MCP and the web page (413 past a size cap, 429 past a count cap, each naming the
cap and its value) with the owner's notebook bounded, measured by its records."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession

from agent_notebook import Notebook
from tests.support.clirun import text_cli
from tests.support.mcp_stdio import text_of
from tests.support.server import (
    Server,
    assert_error,
    csrf_of,
    mcp_session,
    new_session,
    signed_in,
)

CAPS = """guests:
  write_back_max_bytes: 200
  write_backs_per_session: 6
  write_backs_per_hour: 8
  write_back_total_bytes: 1000
"""


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return text_cli(home, *args, env={"AGENT_NOTEBOOK_EMBEDDER": "none"})


def make_guest(home: Path, name: str, *options: str) -> str:
    made = cli(home, "token", "create", "--guest", name, *options)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


class Served:
    """A served notebook with small caps and a guest per front end."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        assert cli(self.home, "init").returncode == 0
        (self.home / "config.yaml").write_text(
            (self.home / "config.yaml").read_text() + CAPS, encoding="utf-8"
        )
        self.server = Server(self.home, root / "server.log")
        with self.server.client() as api:
            self.trip = new_session(api, "Trip to Lyon")
            self.other = new_session(api, "Another trip")
            self.third = new_session(api, "A third trip")

    def guest_mcp(self, token: str, work: Callable[[ClientSession], Awaitable[Any]]) -> Any:
        return mcp_session(self.server, work, token=token, path="/mcp-guest/")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    running = Served(tmp_path_factory.mktemp("guests"))
    yield running
    running.server.stop()


def write(api: httpx.Client, session: str, guest: str, text: str) -> httpx.Response:
    body = {"guest": guest, "kind": "decision", "text": text}
    return api.post(f"/api/sessions/{session}/write-back", json=body)


def stored_size(served: Served, session: str) -> tuple[int, int]:
    """The session's record as stored (its JSON's length) and its audit entries."""
    with served.server.client() as api:
        found = api.get(f"/api/sessions/{session}")
    assert found.status_code == 200, found.text
    return len(found.text), len(found.json()["decisions"])


def test_http_413_and_429_name_the_cap_and_the_session_stays_bounded(served: Served) -> None:
    token = make_guest(served.home, "http-guest")
    with served.server.client(token) as api:
        big = write(api, served.trip, "http-guest", "x" * 900_000)  # under --max-body
        assert_error(big, 413, "guests.write_back_max_bytes", "200 bytes")
        assert "config.yaml" in big.json()["fix"]
        for n in range(6):
            assert write(api, served.trip, "http-guest", f"d{n} " + "y" * 100).status_code == 201
        full = write(api, served.trip, "http-guest", "one more")
        assert_error(full, 429, "guests.write_backs_per_session is 6")
        size, entries = stored_size(served, served.trip)
        for _ in range(3):  # refused again and again: nothing grows
            assert write(api, served.trip, "http-guest", "z" * 190).status_code == 429
        assert stored_size(served, served.trip) == (size, entries) and entries == 6
        assert size < 6 * (200 + 300)
        for _ in range(2):  # the 7th and 8th of the hour
            assert write(api, served.other, "http-guest", "a" * 100).status_code == 201
        hourly = write(api, served.other, "http-guest", "a" * 10)
        assert_error(hourly, 429, "guests.write_backs_per_hour is 8")
        assert 0 < int(hourly.headers["Retry-After"]) <= 3600


def test_mcp_write_back_meets_the_same_caps(served: Served) -> None:
    token = make_guest(served.home, "mcp-guest")

    async def work(session: ClientSession) -> list[str]:
        answers = []
        for text in ["m" * 201, *["m" * 190] * 6]:
            args = {"session_id": served.third, "kind": "pending", "text": text}
            result = await session.call_tool("write_back", args)
            answers.append(text_of(result) if result.isError else "ok")
        return answers

    answers = served.guest_mcp(token, work)
    assert "guests.write_back_max_bytes" in answers[0] and "200 bytes" in answers[0]
    assert answers[1:6] == ["ok"] * 5
    assert "guests.write_back_total_bytes is 1000" in answers[6], answers
    assert stored_size(served, served.third)[1] == 5


def test_the_web_page_write_back_meets_the_same_caps(served: Served) -> None:
    token = make_guest(served.home, "web-guest")
    with signed_in(served.server, token) as page:
        csrf = csrf_of(page, "/slice")
        form = {"session": served.other, "kind": "decision", "why": "", "csrf": csrf}
        big = page.post("/slice/write-back", data={**form, "text": "w" * 300})
        assert big.status_code == 413 and "guests.write_back_max_bytes" in big.text
        ok = page.post("/slice/write-back", data={**form, "text": "fine"})
        assert ok.status_code == 200, ok.text


def test_the_counts_are_two_counters_a_guest(served: Served) -> None:
    make_guest(served.home, "idle")  # a guest that never wrote back has none
    with Notebook.open(served.home) as nb:
        names = [k for k in nb.backend.counters() if k.startswith("write-back")]
    assert not any(name.endswith(":idle") for name in names)
    assert len(names) <= 2 * 3, names


# -- a guest token's scope ------------------------------------------------------------------


class Scoped:
    """Moments in two sessions, a scoped guest token and the ids of what it may read."""

    def __init__(self, served: Served) -> None:
        with served.server.client() as api:
            self.inside = new_session(api, "Heron watch at the lake")
            self.outside = new_session(api, "Heron secrets of the owner")
            for sid, words in [(self.inside, "lake"), (self.outside, "vault")]:
                for n in range(3):
                    body = {
                        "text": f"Heron sighting {n} near the {words}",
                        "timestamp": f"2026-05-0{n + 1}T10:00:00Z",
                        "concepts": ["heron", words, f"day{n}"],
                    }
                    made = api.post(f"/api/sessions/{sid}/moments", json=body)
                    assert made.status_code == 201, made.text
            api.post(f"/api/sessions/{self.outside}/pending", json={"what": "Heron vault code"})
            self.ids = {
                sid: [m["id"] for m in api.get(f"/api/sessions/{sid}/moments").json()["items"]]
                for sid in (self.inside, self.outside)
            }
        self.token = make_guest(
            served.home,
            "scoped",
            "--session",
            self.inside,
            "--concept",
            "day1",
            "--concept",
            "day2",
            "--since",
            "2026-05-02T00:00:00Z",
            "--max-budget",
            "300",
        )
        self.allowed = set(self.ids[self.inside][1:])  # day1 and day2, in the window

    def moments_in(self, text: str) -> set[str]:
        everything = {m for ids in self.ids.values() for m in ids}
        return {m for m in everything if f"moment:{m}" in text}


@pytest.fixture(scope="module")
def scoped(served: Served) -> Scoped:
    return Scoped(served)


def test_a_scoped_token_reads_nothing_outside_its_scope_over_http(
    served: Served, scoped: Scoped
) -> None:
    with served.server.client() as owner:  # the owner's slice reads both sessions
        whole = owner.get("/api/slice", params={"q": "heron sighting", "budget": 4000}).json()
    assert scoped.moments_in(whole["rendered"]) == {m for ids in scoped.ids.values() for m in ids}
    with served.server.client(scoped.token) as api:
        got = api.get("/api/slice", params={"q": "heron sighting code", "budget": 100_000})
        assert got.status_code == 200, got.text
        body = got.json()
        assert scoped.moments_in(body["rendered"]) == scoped.allowed
        assert (
            "the vault" not in body["rendered"]
            and "vault code" not in body["rendered"]
            and scoped.outside not in body["rendered"]
        )
        assert body["slice"]["budget_tokens"] == 300
        elsewhere = api.get("/api/slice", params={"q": "heron", "session": scoped.outside})
        assert_error(elsewhere, 403, "outside this guest token's scope")


def test_a_scoped_token_reads_nothing_outside_its_scope_over_mcp(
    served: Served, scoped: Scoped
) -> None:
    async def work(session: ClientSession) -> list[str]:
        wide = await session.call_tool("slice", {"query": "heron sighting code"})
        other = await session.call_tool("slice", {"query": "heron", "session_id": scoped.outside})
        return [text_of(wide), text_of(other) if other.isError else "answered"]

    wide, other = served.guest_mcp(scoped.token, work)
    assert (
        scoped.moments_in(wide) == scoped.allowed
        and "the vault" not in wide
        and "vault code" not in wide
    )
    assert "outside this guest token's scope" in other


def test_a_scoped_token_reads_nothing_outside_its_scope_on_the_web_page(
    served: Served, scoped: Scoped
) -> None:
    with signed_in(served.server, scoped.token) as page:
        shown = page.get("/slice", params={"q": "heron sighting code", "budget": 4000})
    assert shown.status_code == 200, shown.text
    assert scoped.moments_in(shown.text) == scoped.allowed and "the vault" not in shown.text


def test_the_owner_sees_each_tokens_scope_on_the_token_lists(
    served: Served, scoped: Scoped
) -> None:
    make_guest(served.home, "plain")
    listed = cli(served.home, "token", "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    wanted = (
        f"sessions {scoped.inside}; concepts day1, day2; since 2026-05-02T00:00:00+00:00; "
        "budget 300"
    )
    assert rows["scoped"]["scope"] == wanted and rows["plain"]["scope"] == "everything"
    with signed_in(served.server, served.server.token) as owner:
        page = owner.get("/housekeeping")
    assert wanted in page.text


def test_a_bad_scope_is_refused_and_nothing_is_created(served: Served) -> None:
    made = cli(served.home, "token", "create", "--guest", "bad", "--session", "../etc")
    assert made.returncode != 0 and "sessions" in made.stderr and not made.stdout
    late = ["--since", "2026-06-01T00:00:00Z", "--until", "2026-05-01T00:00:00Z"]
    made = cli(served.home, "token", "create", "--guest", "bad", *late)
    assert made.returncode != 0 and "after until" in made.stderr
    assert "bad" not in cli(served.home, "token", "list").stdout
