"""Input checks of issue 15, made once in the facade and met alike by every front end:
Python, the command line (in process), HTTP (the app over a real notebook) and MCP (the
tools of a real MCP server, over an in-memory client session).

- moment ids past SQLite's INTEGER (2^63 and up) are invalid ids, never an overflow;
- ``image_path``/``audio_path`` come from the media store alone, never from a caller;
- a moment holds something (text, a file or an action); a guest's write-back, a decision,
  a pending item and a session-notebook section are never blank;
- a moment's text is at most ``moments.max_text_bytes`` (1 MiB by default);
- deeply nested JSON is a clean error; an unknown field is named with the valid ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import TextContent
from pydantic import ValidationError
from typer.testing import CliRunner

from agent_notebook import InvalidId, InvalidInput, Notebook, NotFound
from agent_notebook.cli import app as cli_app
from agent_notebook.config import (
    DEFAULT_MAX_TEXT_BYTES,
    MomentLimits,
    NotebookConfig,
    load_config,
    write_config,
)
from agent_notebook.ingest import IngestPlan
from agent_notebook.ingest.plan import IngestSession
from agent_notebook.model import MAX_ID_NUMBER, MomentDraft
from agent_notebook.notebook.drafts import MAX_JSON_DEPTH
from agent_notebook.privacy.tokens import ensure_owner_token
from agent_notebook.server import ServerSettings, create_app
from agent_notebook.server.mcp_tools import build_mcp
from agent_notebook.storage import MemoryBackend, SqliteBackend
from tests.support.snapshots import snapshot

#: 2^63, one past SQLite's largest INTEGER: it overflowed there before.
PAST = f"m_{MAX_ID_NUMBER + 1}"
HUGE = "m_" + "9" * 5000
DEEP = "[" * 100_000 + "]" * 100_000
T0 = datetime(2026, 6, 7, 9, 30, tzinfo=UTC)


def nested(levels: int) -> Any:
    """``levels`` lists, one inside the other."""
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.fixture
def sqlite_nb(tmp_path: Path) -> Iterator[Notebook]:
    with Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=None) as nb:
        yield nb


# -- the facade -----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [PAST, HUGE], ids=["2^63", "5000-digits"])
def test_ids_past_sqlite_integer_are_invalid_ids(notebook: Notebook, bad: str) -> None:
    session = notebook.start_session("Plan the trip")
    first = notebook.record(session.id, "Book the train to Lyon")
    before = snapshot(notebook.backend)
    for call in (
        lambda: notebook.get_moment(bad),
        lambda: notebook.redact(bad, "a reason"),
        lambda: notebook.link(session.id, bad),
        lambda: notebook.archived_moment(bad),
    ):
        with pytest.raises(InvalidId, match=str(MAX_ID_NUMBER)):
            call()
    with pytest.raises(InvalidInput, match=f"parent: invalid moment id.*{MAX_ID_NUMBER}"):
        notebook.record(session.id, "a reply", parent=bad)
    assert snapshot(notebook.backend) == before
    # the largest number is a well-formed id: it names nothing, like any unknown id
    with pytest.raises(NotFound):
        notebook.get_moment(f"m_{MAX_ID_NUMBER}")
    assert notebook.get_moment(first.id) == first


def test_media_paths_are_refused_from_every_draft(notebook: Notebook) -> None:
    session = notebook.start_session()
    before = snapshot(notebook.backend)
    with pytest.raises(InvalidInput, match=r"image_path cannot be given.*image_file"):
        notebook.record(session.id, "x", image_path="../secrets/owner-token")
    with pytest.raises(InvalidInput, match="moment 1: audio_path cannot be given"):
        notebook.record_many(session.id, [{"text": "a"}, {"text": "b", "audio_path": "/etc"}])
    with pytest.raises(ValidationError, match="image_path and audio_path cannot be given"):
        MomentDraft(text="x", image_path="a.png", audio_path="b.wav")  # type: ignore[call-arg]
    assert snapshot(notebook.backend) == before


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n"])
def test_a_moment_holding_nothing_is_refused(notebook: Notebook, text: str) -> None:
    session = notebook.start_session()
    before = snapshot(notebook.backend)
    with pytest.raises(InvalidInput, match="moment 0: it holds nothing"):
        notebook.record(session.id, text)
    with pytest.raises(InvalidInput, match="moment 1: it holds nothing"):
        notebook.record_many(session.id, [{"text": "kept?"}, {"text": text, "role": "tool"}])
    assert snapshot(notebook.backend) == before
    # an action is something: a tool call with no words is a moment
    moment = notebook.record(session.id, text, role="assistant", actions=[{"tool": "run"}])
    assert moment.actions[0].tool == "run"


def test_blank_write_backs_decisions_and_items_are_refused(notebook: Notebook) -> None:
    session = notebook.start_session()
    escalation = notebook.escalate(session.id, "hermes", why="hard")
    before = snapshot(notebook.backend)
    for kind in ("decision", "pending", "escalation_outcome"):
        with pytest.raises(InvalidInput, match="write_back: the text is empty"):
            notebook.write_back("hermes", session.id, kind, " \n", escalation_id=escalation.id)  # type: ignore[arg-type]
    for call, what in (
        (lambda: notebook.decide(session.id, ""), "decision"),
        (lambda: notebook.open_pending(session.id, "  "), "pending item"),
        (lambda: notebook.escalate(session.id, " "), "escalation"),
        (lambda: notebook.resolve_escalation(session.id, escalation.id, ""), "outcome"),
    ):
        with pytest.raises(InvalidInput, match=f"{what}: the text is empty"):
            call()
    assert snapshot(notebook.backend) == before


def test_a_blank_section_is_refused(sqlite_nb: Notebook) -> None:
    notes = sqlite_nb.session_notebook("t1").sync
    notes.update_section("Current State", "Booking the train")
    for blank in ("", "  \n "):
        with pytest.raises(InvalidInput, match="'Current State': the new text is empty"):
            notes.update_section("Current State", blank)
    assert notes.get_section("Current State") == "Booking the train"


def test_a_text_over_the_limit_is_refused_naming_the_setting() -> None:
    nb = Notebook(MemoryBackend(), embedder=None)  # the default limit
    session = nb.start_session()
    before = snapshot(nb.backend)
    with pytest.raises(InvalidInput, match=r"moment 0: its text is 1 MiB \(1,048,577 bytes"):
        nb.record(session.id, "a" * (DEFAULT_MAX_TEXT_BYTES + 1))
    assert snapshot(nb.backend) == before

    small = Notebook(
        MemoryBackend(),
        embedder=None,
        config=NotebookConfig(moments=MomentLimits(max_text_bytes=100)),
    )
    session = small.start_session()
    assert small.record(session.id, "é" * 50).content.text == "é" * 50  # 100 bytes: at the limit
    with pytest.raises(InvalidInput, match=r"101 bytes of UTF-8\), over the limit of 100 bytes"):
        small.record(session.id, "é" * 50 + "!")
    with pytest.raises(InvalidInput, match=r"moments\.max_text_bytes in config\.yaml"):
        small.record_many(session.id, [{"text": "fine"}, {"text": "x" * 101}])
    assert small.backend.count_moments() == 1


def test_ingest_checks_every_draft_before_recording_any(sqlite_nb: Notebook) -> None:
    sqlite_nb.config = NotebookConfig(moments=MomentLimits(max_text_bytes=100))
    parts = [
        IngestSession(task=f"part {n}", started=T0, drafts=[MomentDraft(text=text)])
        for n, text in enumerate(["short", "y" * 101])
    ]
    with pytest.raises(InvalidInput, match="part 1: moment 0: its text is 101 bytes"):
        sqlite_nb.ingest(IngestPlan(format="messages-json", path="chat.json", sessions=parts))
    assert sqlite_nb.backend.count_sessions() == 0 and sqlite_nb.backend.count_moments() == 0


def test_the_limit_is_read_from_config_yaml(tmp_path: Path) -> None:
    write_config(tmp_path, NotebookConfig(moments=MomentLimits(max_text_bytes=2048)))
    assert load_config(tmp_path).moments.max_text_bytes == 2048
    (tmp_path / "config.yaml").write_text("moments:\n  max_text_byte: 10\n")
    with pytest.raises(
        InvalidInput, match=r"moments.max_text_byte: unknown field \(valid fields: max_text_bytes\)"
    ):
        load_config(tmp_path)


def test_unknown_fields_are_named_with_the_valid_ones(notebook: Notebook) -> None:
    session = notebook.start_session()
    with pytest.raises(InvalidInput) as info:
        notebook.record(session.id, "x", imgae_file="a.png")
    message = str(info.value)
    assert message.startswith("moment 0: imgae_file: unknown field (valid fields: text, role,")
    assert "image_file, audio_file, source_id)" in message and "image_path" not in message
    with pytest.raises(
        InvalidInput,
        match=r"actions.0.argz: unknown field \(valid fields: tool, arguments, result, ok\)",
    ):
        notebook.record(session.id, "x", actions=[{"tool": "t", "argz": {}}])


def test_deeply_nested_actions_are_refused(notebook: Notebook) -> None:
    session = notebook.start_session()
    ok = notebook.record(session.id, "x", actions=[{"tool": "t", "result": nested(MAX_JSON_DEPTH)}])
    assert ok.actions[0].result == nested(MAX_JSON_DEPTH)
    before = snapshot(notebook.backend)
    with pytest.raises(InvalidInput, match=f"actions.0: .*deeper than {MAX_JSON_DEPTH} levels"):
        notebook.record(session.id, "x", actions=[{"tool": "t", "result": nested(300)}])
    with pytest.raises(InvalidInput, match=r"actions\.0\.arguments\.a: nested too deeply"):
        notebook.record(session.id, "x", actions=[{"tool": "t", "arguments": {"a": nested(5000)}}])
    assert snapshot(notebook.backend) == before


# -- the command line, in process -----------------------------------------------------------


def run(home: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli_app, [*args, "--home", str(home)], input=stdin, catch_exceptions=False
    )
    return result.exit_code, result.stdout, result.stderr


def totals(home: Path) -> tuple[int, int]:
    with Notebook.open(home, create=False, background_embedding=False) as nb:
        return nb.backend.count_sessions(), nb.backend.count_moments()


@pytest.fixture
def cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
    home = tmp_path / "nb"
    code, _, err = run(home, "init")
    assert code == 0, err
    return home


@pytest.mark.parametrize(
    ("stdin", "words"),
    [
        (json.dumps({"text": "a reply", "parent": PAST}), f"N from 1 to {MAX_ID_NUMBER}"),
        (DEEP, "record: not JSON: nested too deeply"),
        (json.dumps({"text": "x", "actions": [{"tool": "t", "result": nested(300)}]}), "deeper"),
        (json.dumps({"text": ""}), "record: moment 0: it holds nothing"),
        (json.dumps({"text": "x", "image_path": "../secrets/owner-token"}), "image_path cannot"),
        (json.dumps({"txt": "x"}), "txt: unknown field (valid fields: text, role,"),
    ],
    ids=["id-past-2^63", "deep-json", "deep-action", "empty", "image_path", "unknown-field"],
)
def test_cli_record_refuses_bad_input_cleanly(cli_home: Path, stdin: str, words: str) -> None:
    code, out, err = run(cli_home, "record", "--task", "Trip", stdin=stdin)
    assert code == 1 and out == ""
    assert err.startswith("error: ") and words in " ".join(err.split())
    assert "Traceback" not in err
    assert totals(cli_home) == (0, 0)  # not even the session --task would have started


def test_cli_redact_of_an_id_past_2_63_is_a_clean_error(cli_home: Path) -> None:
    code, _, err = run(cli_home, "redact", PAST, "--reason", "leak")
    assert code == 1 and "invalid moment id" in err and "Traceback" not in err


# -- HTTP: the app over a real notebook -----------------------------------------------------


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
    home = tmp_path / "home"
    token, _ = ensure_owner_token(home)
    app = create_app(ServerSettings(home=home, model="fake:echo", mcp=False))
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as client:
        yield client


def detail(response: Any, status: int = 422) -> str:
    assert response.status_code == status, response.text
    return str(response.json()["detail"])


def test_http_ids_past_2_63_are_422_on_every_route(api: TestClient) -> None:
    sid = api.post("/api/sessions", json={"task": "Trip"}).json()["id"]
    for response in (
        api.get(f"/api/moments/{PAST}"),
        api.get(f"/api/moments/{PAST}/media"),
        api.post(f"/api/moments/{PAST}/redact", json={"reason": "leak"}),
        api.post(f"/api/sessions/{sid}/moments", json={"text": "reply", "parent": PAST}),
    ):
        assert str(MAX_ID_NUMBER) in detail(response)
    assert api.get(f"/api/sessions/{sid}/moments").json()["items"] == []


def test_http_refuses_media_paths_empty_moments_and_unknown_fields(api: TestClient) -> None:
    sid = api.post("/api/sessions", json={"task": "Trip"}).json()["id"]
    moments = f"/api/sessions/{sid}/moments"
    secret = {"text": "x", "image_path": "../secrets/owner-token"}
    assert "image_path cannot be given" in detail(api.post(moments, json=secret))
    batch = {"moments": [{"text": "a"}, {"text": "b", "audio_path": "../x.wav"}]}
    assert "audio_path cannot be given" in detail(api.post(f"{moments}/batch", json=batch))
    assert "it holds nothing" in detail(api.post(moments, json={"text": "  "}))
    unknown = detail(api.post(f"{moments}/batch", json={"moments": [{"text": "a", "tags": []}]}))
    assert unknown.startswith("body.moments.0.tags: unknown field (valid fields: text, role,")
    assert "valid fields: task" in detail(api.post("/api/sessions", json={"taks": "x"}))
    assert api.get(moments).json()["items"] == []
    blank = {"guest": "hermes", "kind": "decision", "text": "   "}
    assert "write_back: the text is empty" in detail(
        api.post(f"/api/sessions/{sid}/write-back", json=blank)
    )
    section = "/api/threads/t1/notebook/sections/Current State"
    assert "the new text is empty" in detail(api.put(section, json={"content": " \n"}))


def test_http_deeply_nested_json_is_not_a_server_error(api: TestClient) -> None:
    sid = api.post("/api/sessions", json={"task": "Trip"}).json()["id"]
    moments = f"/api/sessions/{sid}/moments"
    too_deep = {"text": "x", "actions": [{"tool": "t", "result": nested(300)}]}
    assert f"deeper than {MAX_JSON_DEPTH} levels" in detail(api.post(moments, json=too_deep))
    unparsable = api.post(
        moments,
        content=f'{{"text": "x", "actions": [{{"tool": "t", "result": {DEEP}}}]}}',
        headers={"Content-Type": "application/json"},
    )
    assert 400 <= unparsable.status_code < 500, unparsable.text
    assert set(unparsable.json()) == {"error", "detail", "fix"}
    assert api.get(moments).json()["items"] == []


# -- MCP: the tools of a real server, over an in-memory client session ------------------------


def call_tools(nb: Notebook, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    """(is an error, its text) of each tool call, in order, on one MCP session."""

    async def main() -> list[tuple[bool, str]]:
        results = []
        async with create_connected_server_and_client_session(build_mcp(nb)) as client:
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                first = result.content[0]
                assert isinstance(first, TextContent)
                results.append((result.isError, first.text))
        return results

    return anyio.run(main)


def test_mcp_refuses_blank_write_backs_sections_and_empty_records(sqlite_nb: Notebook) -> None:
    sid = sqlite_nb.start_session("Trip").id
    before = snapshot(sqlite_nb.backend)
    results = call_tools(
        sqlite_nb,
        [
            ("write_back", {"guest": "hermes", "session_id": sid, "kind": "decision", "text": " "}),
            ("update_section", {"thread_id": "t1", "section": "Worklog", "content": ""}),
            ("record", {"text": "", "task": "A new session"}),
            ("record", {"text": "  ", "session_id": sid}),
        ],
    )
    assert [error for error, _ in results] == [True] * 4
    assert "write_back: the text is empty" in results[0][1]
    assert "'Worklog': the new text is empty" in results[1][1]
    assert all("it holds nothing" in text for _, text in results[2:])
    assert all("To recover: correct the argument" in text for _, text in results)
    assert snapshot(sqlite_nb.backend) == before  # no moment, no session started for one
