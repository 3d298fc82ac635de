"""One SQLite home used the way docs/storage.md shows it: ``serve`` running, and the CLI, an MCP
client and Python beside it. Every process keeps its SQLite locks, every acknowledged write
is in the file once, and each process sees the others' writes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from agent_notebook import Notebook
from tests.support.clirun import cli as in_process_cli
from tests.support.server import Server
from tests.support.shared_run import Run, cli
from tests.support.sqlite_locks import assert_holds_its_locks


def integrity(database: Path) -> str:
    """``PRAGMA integrity_check`` through SQLite, read-only (never the file by hand)."""
    conn = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def test_opening_the_langgraph_store_and_saver_keeps_the_connections_locks(
    tmp_path: Path,
) -> None:
    """The store and the checkpointer live in ``notebook.db`` beside the notebook's own
    connections; opening them must not drop those connections' locks."""
    import os

    with Notebook.open(tmp_path / "home", background_embedding=False) as nb:
        database = Path(nb.backend.location)
        assert_holds_its_locks(os.getpid(), database, "the notebook, just opened")
        assert nb.store is not None and nb.checkpointer is not None
        nb.backend.get_session("s_2026-01-01_001")  # the reader connection reads too
        assert_holds_its_locks(os.getpid(), database, "the notebook, store and saver open")


def test_a_path_to_the_live_database_is_refused_not_opened(tmp_path: Path) -> None:
    """A user's path that names the notebook's own database (or its log) as an image, a
    clip or a conversation is refused by stat alone: opening it would drop the locks."""
    import os

    from agent_notebook.errors import InvalidInput
    from agent_notebook.ingest.source import read_text

    with Notebook.open(tmp_path / "home", background_embedding=False) as nb:
        database = Path(nb.backend.location)
        session = nb.start_session("attachments").id
        nb.record(session, "something to put in the log")
        for target in (database, Path(f"{database}-wal")):
            for kind in ("image", "audio"):
                with pytest.raises(InvalidInput, match="own database"):
                    nb.record(session, "see attached", **{kind: target})
            with pytest.raises(InvalidInput, match="own database"):
                read_text(target)
        assert_holds_its_locks(os.getpid(), database, "the notebook, after the refusals")


@pytest.mark.longest
@pytest.mark.slow
def test_serve_and_the_cli_on_one_home_lose_no_acknowledged_write(tmp_path: Path) -> None:
    """The documented way of working (docs/storage.md): ``serve`` and CLI commands on one home, alternately."""
    home = tmp_path / "home"
    server = Server(home, tmp_path / "server.log")
    database = home / "notebook.db"
    try:
        with server.client() as api:
            sid = api.post("/api/sessions", json={"task": "shared"}).json()["id"]
            assert_holds_its_locks(server.process.pid, database, "serve")
            acknowledged: dict[str, str] = {}
            # Two rounds: in the second, serve writes after a CLI process wrote (and took a
            # moment number) and the CLI after serve wrote again: what a stale counter, a
            # stale cache or a dropped lock would get wrong shows there already.
            for i in range(2):
                text = f"server write {i}"
                answer = api.post(f"/api/sessions/{sid}/moments", json={"text": text})
                assert answer.status_code == 201, answer.text
                acknowledged[answer.json()["id"]] = text
                text = f"cli write {i}"
                done = cli(
                    home, "record", "--session", sid, "-f", "json", stdin=json.dumps({"text": text})
                )
                assert done.returncode == 0, done.stderr
                (moment,) = json.loads(done.stdout)
                assert moment["id"] not in acknowledged, f"{moment['id']} given out twice"
                acknowledged[moment["id"]] = text
                seen = cli(home, "moments", sid, "-f", "json")
                assert seen.returncode == 0, seen.stderr
                assert {m["id"] for m in json.loads(seen.stdout)} == set(acknowledged)
                assert cli(home, "stats").returncode == 0
                assert_holds_its_locks(server.process.pid, database, "serve, after the CLI")
            stats = api.get("/api/stats")
            assert stats.status_code == 200, stats.text
            listed = api.get(f"/api/sessions/{sid}/moments", params={"limit": 100}).json()
            items = listed["items"] if isinstance(listed, dict) else listed
            assert {m["id"]: m["content"]["text"] for m in items} == acknowledged
    finally:
        server.stop()
    assert integrity(database) == "ok"
    with Notebook.open(home, background_embedding=False) as nb:
        stored = {m.id: m.content.text for m in nb.backend.list_moments(sid)}
    assert stored == acknowledged


def test_serve_and_an_mcp_client_on_one_home(tmp_path: Path) -> None:
    """``agent-notebook mcp`` (stdio) beside ``serve``: the MCP process opens the home with
    its LangGraph store as the server does; the server keeps its locks and both see every
    write."""
    from tests.support.mcp_stdio import over_stdio, text_of

    home = tmp_path / "home"
    server = Server(home, tmp_path / "server.log")
    database = home / "notebook.db"
    try:
        with server.client() as api:
            sid = api.post("/api/sessions", json={"task": "shared"}).json()["id"]
            first = api.post(f"/api/sessions/{sid}/moments", json={"text": "from http"})
            assert first.status_code == 201

            async def work(session):  # type: ignore[no-untyped-def]
                result = await session.call_tool("record", {"text": "from mcp", "session_id": sid})
                section = {"thread_id": "t-1", "section": "Current State", "content": "x"}
                await session.call_tool("update_section", section)  # opens the store
                return text_of(result)

            over_stdio(home, work)
            assert_holds_its_locks(server.process.pid, database, "serve, after MCP")
            second = api.post(f"/api/sessions/{sid}/moments", json={"text": "http again"})
            assert second.status_code == 201
            listed = api.get(f"/api/sessions/{sid}/moments", params={"limit": 100}).json()
            items = listed["items"] if isinstance(listed, dict) else listed
            texts = sorted(m["content"]["text"] for m in items)
            assert texts == ["from http", "from mcp", "http again"]
            assert len({m["id"] for m in items}) == 3
    finally:
        server.stop()
    assert integrity(database) == "ok"


# -- the torture run: every front end at once (see shared_run) -----------------------------

#: Seconds of mixed load per run at least: enough for every front end to write several
#: times and for each chore (compact, redact, forget, export, a server kill) to land
#: mid-run. The run goes on past it until every chore ran and every front end wrote three
#: times (see ``Run._run``), so a loaded machine makes it longer, never weaker.
TORTURE_S = 5.0


def encrypted_home(tmp_path: Path) -> tuple[Path, Path]:
    """A new home with encryption at rest on, and a second key file to rotate to (the keys
    made by ``key new`` in this process: no other process is there yet)."""
    home, keys = tmp_path / "home", tmp_path / "keys"
    keys.mkdir()
    for name in ("key-1", "key-2"):
        made = in_process_cli(home, "key", "new", "--file", str(keys / name))
        assert made.returncode == 0, made.stderr
    use_key(home, keys / "key-1")
    return home, keys


def use_key(home: Path, key_file: Path) -> None:
    home.mkdir(exist_ok=True)
    text = f"privacy:\n  encryption:\n    enabled: true\n    key_file: {key_file}\n"
    (home / "config.yaml").write_text(text)


def rotate(home: Path, key_file: Path) -> subprocess.CompletedProcess[str]:
    return cli(home, "key", "rotate", "--new-key-file", str(key_file))


@pytest.mark.slow
def test_key_rotate_refuses_while_a_server_has_the_notebook_open(tmp_path: Path) -> None:
    """A server beside a rotation would go on sealing under the retired key: the rotation
    says so and changes nothing; with the server stopped it runs."""
    home, keys = encrypted_home(tmp_path)
    server = Server(home, tmp_path / "server.log")
    try:
        with server.client() as api:
            sid = api.post("/api/sessions", json={"task": "keys"}).json()["id"]
            first = api.post(f"/api/sessions/{sid}/moments", json={"text": "before"})
            assert first.status_code == 201
            refused = rotate(home, keys / "key-2")
            assert refused.returncode != 0
            assert "needs the notebook to itself" in refused.stderr, refused.stderr
            assert f"pid {server.process.pid}" in refused.stderr, refused.stderr
            second = api.post(f"/api/sessions/{sid}/moments", json={"text": "after"})
            assert second.status_code == 201, second.text
    finally:
        server.stop()
    done = rotate(home, keys / "key-2")
    assert done.returncode == 0, done.stderr
    use_key(home, keys / "key-2")
    with Notebook.open(home, background_embedding=False) as nb:
        assert [m.content.text for m in nb.backend.list_moments(sid)] == ["before", "after"]


@pytest.mark.longest
@pytest.mark.slow
def test_every_front_end_on_one_encrypted_sqlite_home_at_once(tmp_path: Path) -> None:
    home, keys = encrypted_home(tmp_path)
    run = Run(home, tmp_path / "server.log", TORTURE_S, seed=28)

    def rotate_refused() -> None:
        # Never while the server is down for its restart: with no process holding the
        # notebook, rotating is allowed, and every front end would then lack the new key.
        with run.server_up:
            refused = rotate(home, keys / "key-2")
        if refused.returncode == 0 or "needs the notebook to itself" not in refused.stderr:
            run.ledger.problem(f"key rotate beside the others: {refused.stderr[-500:]}")

    run.run([rotate_refused])
    done = rotate(home, keys / "key-2")  # everyone stopped: now it runs
    assert done.returncode == 0, done.stderr
    use_key(home, keys / "key-2")
    run.assert_sound()
    assert integrity(home / "notebook.db") == "ok"


@pytest.mark.longest
@pytest.mark.slow
def test_every_front_end_on_one_yaml_home_at_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    made = cli(home, "init", "--backend", "yaml")
    assert made.returncode == 0, made.stderr
    run = Run(home, tmp_path / "server.log", TORTURE_S, seed=29)
    run.run()
    run.assert_sound()
