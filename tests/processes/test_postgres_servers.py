"""Many stateless ``agent-notebook serve`` processes over one PostgreSQL notebook: tokens made
or rotated on one machine are honoured by every server, ``If-Match`` conflicts are seen
across servers, one maintenance run at a time, and four servers with eight clients lose no
acknowledged write, even with one server SIGKILLed mid-run."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent_notebook import Notebook
from agent_notebook.errors import Conflict
from agent_notebook.storage.postgres import PostgresBackend
from tests.support import pg
from tests.support.pg_servers import PgServer, assert_each_acknowledged_write_once, cli
from tests.support.server import ENV
from tests.support.waiting import HANG_GUARD_S, wait_until

#: Slow as a whole: its tests share four servers (a module fixture), kept together.
pytestmark = pytest.mark.slow
SERVERS = 4
CLIENTS = 8
WRITES_PER_CLIENT = 25
#: Read-your-writes: a moment acknowledged by one server is found through another within
#: this many polls of 50 ms (one second).
FRESH_POLLS = 20


@pytest.fixture(scope="module")
def notebook_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return pg.url_with_schema(tmp_path_factory.mktemp("pg-servers"))


@pytest.fixture(scope="module")
def servers(
    tmp_path_factory: pytest.TempPathFactory, notebook_url: str
) -> Iterator[list[PgServer]]:
    root = tmp_path_factory.mktemp("machines")
    first = root / "machine-0"
    first.mkdir()
    made = cli(first, notebook_url, "token", "rotate-owner")  # the owner's token, made once
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    running: list[PgServer] = []
    try:
        for n in range(SERVERS):
            running.append(PgServer(root / f"machine-{n}", notebook_url, token))
        yield running
    finally:
        for server in running:
            server.stop()


def test_the_database_keeps_only_hashes_and_every_server_honours_them(
    servers: list[PgServer], notebook_url: str
) -> None:
    a, b = servers[0], servers[1]
    assert not (b.home / "secrets" / "owner-token").exists()  # made on machine 0, not here
    listed = cli(b.home, notebook_url, "token", "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert '"owner"' in listed.stdout and "the database" in listed.stdout

    made = cli(b.home, notebook_url, "token", "create", "--guest", "planner")
    assert made.returncode == 0, made.stderr
    guest = made.stdout.strip()
    with a.client(guest) as api:  # made on machine 1, honoured by server 0
        assert api.get("/api/slice", params={"q": "anything"}).status_code == 200
        assert api.get("/api/sessions").status_code == 403
    probe = PostgresBackend(pg.database_url(), schema_name=notebook_url.rsplit("%3D", 1)[1])
    try:
        stored = {(role, name): digest for role, name, digest, *_ in probe.api_tokens()}
    finally:
        probe.close()
    assert set(stored) == {("owner", "owner"), ("guest", "planner")}
    assert guest not in stored.values() and a.token not in stored.values()

    revoked = cli(a.home, notebook_url, "token", "revoke", "planner")
    assert revoked.returncode == 0, revoked.stderr
    with b.client(guest) as api:
        assert api.get("/api/slice", params={"q": "anything"}).status_code == 401

    old = a.token
    rotated = cli(b.home, notebook_url, "token", "rotate-owner")  # on machine 1
    assert rotated.returncode == 0, rotated.stderr
    new = rotated.stdout.strip()
    assert (b.home / "secrets" / "owner-token").read_text().strip() == new
    for server in servers:  # every server, at its next request, no restart
        with server.client(old) as api:
            assert api.get("/api/sessions").status_code == 401
        with server.client(new) as api:
            assert api.get("/api/sessions").status_code == 200
        server.token = new


def test_if_match_conflicts_are_seen_across_servers(servers: list[PgServer]) -> None:
    a, b = servers[0], servers[2]
    with a.client() as api:
        created = api.post("/api/sessions", json={"task": "Shared plan"})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        tag = api.get(f"/api/sessions/{sid}").headers["etag"]
    with b.client() as api:  # server B writes first, with the tag A handed out
        first = api.post(
            f"/api/sessions/{sid}/decisions", json={"what": "go"}, headers={"If-Match": tag}
        )
        assert first.status_code == 201, first.text
    with a.client() as api:  # A's reader comes back with the stale tag: a conflict
        second = api.post(
            f"/api/sessions/{sid}/decisions", json={"what": "stop"}, headers={"If-Match": tag}
        )
        assert second.status_code == 409, second.text
        assert [d["what"] for d in api.get(f"/api/sessions/{sid}/decisions").json()["items"]] == [
            "go"
        ]


def test_one_maintenance_run_at_a_time_across_processes(
    notebook_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = notebook_url.rsplit("%3D", 1)[1]
    one = PostgresBackend(pg.database_url(), schema_name=schema)
    two = PostgresBackend(pg.database_url(), schema_name=schema)
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
    try:
        with one.maintenance_lock("compaction"):
            # another machine's compaction (its own home, so not its lock file) is refused
            refused = pytest.raises(Conflict, match="another process is running compaction")
            with Notebook.open(tmp_path / "machine-x", backend=notebook_url) as nb, refused:
                nb.compact()
            refused = pytest.raises(Conflict, match="another process is running compaction")
            with refused, two.maintenance_lock("compaction", wait_s=0.2):
                pass
            with two.maintenance_lock("key-rotation", wait_s=0.2):  # another run's name
                pass
        with two.maintenance_lock("compaction", wait_s=0.2):  # released: admitted now
            pass
    finally:
        one.close()
        two.close()


class Run:
    """What the clients saw: acknowledged writes, server errors, stale reads."""

    def __init__(self, servers: list[PgServer]) -> None:
        self.servers = servers
        self.alive = list(range(len(servers)))
        self.lock = threading.Lock()
        self.acked: dict[str, str] = {}  # moment id -> its text
        self.failures: list[str] = []
        self.acked_at_kill = 0

    def pick(self, n: int, avoid: int | None = None) -> int:
        with self.lock:
            choices = [s for s in self.alive if s != avoid] or list(self.alive)
        return choices[n % len(choices)]

    def fail(self, what: str) -> None:
        with self.lock:
            self.failures.append(what)

    def client_loop(self, me: int) -> None:
        clients = [server.client() for server in self.servers]
        try:
            writer = self.pick(me)
            created = clients[writer].post("/api/sessions", json={"task": f"client {me}"})
            if created.status_code != 201:
                self.fail(f"client {me}: session: {created.status_code} {created.text}")
                return
            sid = created.json()["id"]
            for n in range(WRITES_PER_CLIENT):
                self._write_then_read(clients, me, n, sid)
        finally:
            for client in clients:
                client.close()

    def _write_then_read(self, clients: list[httpx.Client], me: int, n: int, sid: str) -> None:
        marker = f"mark{uuid.uuid4().hex[:12]}"
        text = f"client {me} note {n} about {marker}"
        writer = self.pick(me + n)
        try:
            answer = clients[writer].post(f"/api/sessions/{sid}/moments", json={"text": text})
        except httpx.TransportError:  # the killed server: not acknowledged, so not owed
            if writer in self.alive:
                self.fail(f"server {writer} (alive) dropped a write")
            return
        if answer.status_code >= 500 or answer.status_code != 201:
            self.fail(f"record via {writer}: {answer.status_code} {answer.text}")
            return
        mid = answer.json()["id"]
        with self.lock:
            self.acked[mid] = text
        reader = self.pick(me + n + 1, avoid=writer)
        for _ in range(FRESH_POLLS):
            try:
                found = clients[reader].get(
                    "/api/search", params={"q": marker, "mode": "lexical", "min_score": 0}
                )
            except httpx.TransportError:
                reader = self.pick(me + n + 2, avoid=writer)
                continue
            if found.status_code >= 500:
                self.fail(f"search via {reader}: {found.status_code} {found.text}")
                return
            if mid in [hit["moment"]["id"] for hit in found.json()["items"]]:
                return
            time.sleep(0.05)
        self.fail(f"{mid}, written via {writer}, not found via {reader} within a second")

    def kill_one(self, victim: int, after: int) -> None:
        """SIGKILL ``victim`` once ``after`` writes are acknowledged."""
        wait_until(lambda: len(self.acked) >= after, "writes before the kill")
        with self.lock:
            self.alive.remove(victim)
            self.acked_at_kill = len(self.acked)
        self.servers[victim].process.send_signal(signal.SIGKILL)


def test_four_servers_eight_clients_one_killed_lose_nothing(servers: list[PgServer]) -> None:
    run = Run(servers)
    victim = SERVERS - 1
    threads = [threading.Thread(target=run.client_loop, args=(me,)) for me in range(CLIENTS)]
    killer = threading.Thread(target=run.kill_one, args=(victim, CLIENTS * WRITES_PER_CLIENT // 3))
    for thread in [*threads, killer]:
        thread.start()
    for thread in [*threads, killer]:
        thread.join(HANG_GUARD_S)
    assert servers[victim].process.wait(HANG_GUARD_S) == -signal.SIGKILL
    assert run.failures == []
    assert len(run.acked) > CLIENTS * WRITES_PER_CLIENT // 2
    assert 0 < run.acked_at_kill < len(run.acked)  # killed mid-run; the others went on

    with servers[0].client() as api:
        assert_each_acknowledged_write_once(api, run.acked)


def test_init_on_another_machine_makes_no_second_owner_token(
    servers: list[PgServer], notebook_url: str, tmp_path: Path
) -> None:
    home = tmp_path / "machine-new"
    command = [sys.executable, "-m", "agent_notebook", "init", "--home", str(home)]
    made = subprocess.run(
        [*command, "--backend", notebook_url],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert made.returncode == 0, made.stderr
    assert "only the owner token's hash" in " ".join(made.stderr.split())
    assert not (home / "secrets" / "owner-token").exists()
    with servers[0].client() as api:  # the owner's token is still the one it was
        assert api.get("/api/sessions").status_code == 200


def test_a_web_sign_in_on_one_server_is_honoured_and_ended_on_the_others(
    servers: list[PgServer],
) -> None:
    """The cookie's session is kept (hashed) in the database beside the tokens."""
    a, b = servers[0], servers[1]
    with httpx.Client(base_url=a.url, timeout=HANG_GUARD_S) as browser:
        signed = browser.post("/signin", data={"token": a.token, "next": "/sessions"})
        assert signed.status_code == 303, signed.text
        cookies = dict(browser.cookies)
    assert a.token not in cookies.values()
    with httpx.Client(base_url=b.url, timeout=HANG_GUARD_S, cookies=cookies) as other:
        assert other.get("/sessions").status_code == 200  # made on server 0
        page = other.get("/sessions").text
        csrf = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
        assert other.post("/signout", data={"csrf": csrf}).status_code == 303
    with httpx.Client(base_url=a.url, timeout=HANG_GUARD_S, cookies=cookies) as again:
        assert again.get("/sessions").status_code == 303  # ended on server 1


def test_a_guest_tokens_scope_made_on_one_machine_holds_on_every_server(
    servers: list[PgServer], notebook_url: str
) -> None:
    a, b = servers[0], servers[2]  # (the last one is killed by another test)
    with a.client() as api:
        inside = api.post("/api/sessions", json={"task": "Herons"}).json()["id"]
        outside = api.post("/api/sessions", json={"task": "Vault"}).json()["id"]
        for sid, text in ((inside, "A heron by the lake."), (outside, "The heron vault code.")):
            done = api.post(f"/api/sessions/{sid}/moments", json={"text": text})
            assert done.status_code == 201, done.text
    made = cli(b.home, notebook_url, "token", "create", "--guest", "birder", "--session", inside)
    assert made.returncode == 0, made.stderr
    guest = made.stdout.strip()
    listed = cli(a.home, notebook_url, "token", "list", "--format", "json")
    assert inside in listed.stdout  # the owner sees what the guest may read
    for server in (a, b):
        with server.client(guest) as api:
            got = api.get("/api/slice", params={"q": "heron", "budget": 4000})
            assert got.status_code == 200, got.text
            assert "by the lake" in got.json()["rendered"]
            assert "vault" not in got.json()["rendered"]
            other = api.get("/api/slice", params={"q": "heron", "session": outside})
            assert other.status_code == 403, other.text
    assert cli(a.home, notebook_url, "token", "revoke", "birder").returncode == 0
