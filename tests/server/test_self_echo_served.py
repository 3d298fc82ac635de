"""Self-echo through a real ``agent-notebook serve`` (issue 31): two chat turns about a fact
(``/api/chat/execute``, the offline ``fake:echo`` model), then a search for the fact. A plain
search ranks the question just asked and the model's echo first (they match best, and an
owner searching the notebook may want them); a search asked from that conversation
(``current_session_id``: the HTTP API, the web search page the session page links, the
agent tools) leaves its latest turns out, so the fact comes first. An unknown session is a
clear error, nothing searched."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.support.server import Server, assert_error, new_session, signed_in

FACT = "The door code of the Elm Street flat is 4512."
QUERY = "door code Elm Street flat"


@pytest.fixture(scope="module")
def chatted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str, str]]:
    """The server, the fact's id and the chat's notebook session after two turns."""
    root = tmp_path_factory.mktemp("echo")
    server = Server(root / "home", root / "server.log")
    with server.client() as api:
        earlier = new_session(api, "moving in")
        made = api.post(f"/api/sessions/{earlier}/moments", json={"text": FACT})
        assert made.status_code == 201, made.text
        api.post(f"/api/sessions/{earlier}/moments", json={"text": "The landlord is Mr Okafor."})
        chat = api.post("/api/chat/sessions", json={"title": "the flat"})
        assert chat.status_code == 201, chat.text
        for asked in ("What is the door code of the Elm Street flat?", "Is the door code 4512?"):
            turn = api.post(
                "/api/chat/execute", json={"session_id": chat.json()["id"], "message": asked}
            )
            assert turn.status_code == 200, turn.text
    yield server, made.json()["id"], chat.json()["notebook_session"]
    server.stop()


def _ids(api: httpx.Client, **params: str) -> list[str]:
    answer = api.get("/api/search", params={"q": QUERY, "limit": "5", **params})
    assert answer.status_code == 200, answer.text
    return [hit["moment"]["id"] for hit in answer.json()["items"]]


def test_a_search_from_the_conversation_puts_the_fact_above_the_echo(
    chatted: tuple[Server, str, str],
) -> None:
    server, fact, thread = chatted
    with server.client() as api:
        echo = {m["id"] for m in api.get(f"/api/sessions/{thread}/moments").json()["items"]}
        assert len(echo) == 4  # two questions, two answers
        plain = _ids(api)
        assert plain[0] in echo  # what the issue saw: the echo first
        asked_from = _ids(api, current_session_id=thread)
        assert asked_from[0] == fact
        assert not set(asked_from) & echo
        assert_error(
            api.get("/api/search", params={"q": QUERY, "current_session_id": "s_2020-01-01_009"}),
            404,
            "s_2020-01-01_009",
        )


def test_the_web_search_asked_from_a_session_page_leaves_its_turns_out(
    chatted: tuple[Server, str, str],
) -> None:
    server, fact, thread = chatted
    with signed_in(server, server.token) as browser:
        page = browser.get(f"/sessions/{thread}").text
        assert 'name="current_session_id" value="' + thread + '"' in page  # the form's link
        found = browser.get("/search", params={"q": QUERY, "current_session_id": thread}).text
        shown = re.findall(r'class="mid">(m_\d+)<', found)
        assert shown and shown[0] == fact, shown
        assert "its latest turns, which that conversation has in view, are left out" in found
        everything = browser.get("/search", params={"q": QUERY}).text
        assert re.findall(r'class="mid">(m_\d+)<', everything)[0] != fact
