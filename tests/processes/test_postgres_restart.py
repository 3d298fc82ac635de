"""Issue 28: eight clients write and search through four servers while one server is
SIGKILLed and PostgreSQL itself restarts (``-m immediate``). The servers recover without a
restart of their own, every acknowledged write is stored exactly once, a request that fails
gets a 503 with Retry-After (never a 500), and nothing hangs.

It restarts the server every PostgreSQL test uses: ``PG_EXCLUSIVE`` makes it run alone
(see :func:`pg.sharing_the_server`); set ``AGENT_NOTEBOOK_TEST_PG_RESTART`` to the command
restarting the server ``AGENT_NOTEBOOK_TEST_PG`` names when it is not the local cluster."""

from __future__ import annotations

import signal
import threading
import uuid
from collections import Counter

import httpx
import pytest

from tests.support import pg
from tests.support.pg_servers import PgServer, assert_each_acknowledged_write_once, cli
from tests.support.waiting import HANG_GUARD_S, wait_until

PG_EXCLUSIVE = True
SERVERS = 4
CLIENTS = 8
#: Writes acknowledged before the kill, and before the restart.
KILL_AFTER, RESTART_AFTER = 40, 80
#: Writes each surviving server must acknowledge after the restart (it recovered).
AFTER_RESTART = 5


class Run:
    def __init__(self, servers: list[PgServer]) -> None:
        self.servers = servers
        self.alive = list(range(len(servers)))
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.restarted = threading.Event()
        self.acked: dict[str, str] = {}
        self.after_restart: Counter[int] = Counter()
        self.unavailable = 0  # 503s seen (with Retry-After)
        self.failures: list[str] = []

    def pick(self, n: int) -> int:
        with self.lock:
            return self.alive[n % len(self.alive)]

    def fail(self, what: str) -> None:
        with self.lock:
            self.failures.append(what)

    def check(self, via: int, what: str, answer: httpx.Response, ok: int) -> bool:
        """True when ``answer`` is ``ok``; a 503 must say why and when to retry."""
        if answer.status_code == ok:
            return True
        if answer.status_code == 503:
            body = answer.json()
            if int(answer.headers.get("retry-after", "0")) <= 0 or not body.get("fix"):
                self.fail(f"{what} via {via}: a 503 without Retry-After or fix: {answer.text}")
            with self.lock:
                self.unavailable += 1
            return False
        self.fail(f"{what} via {via}: {answer.status_code} {answer.text}")
        return False

    def call(self, via: int, method: str, path: str, **kwargs: object) -> httpx.Response | None:
        """The request through server ``via``; None when that server is the killed one."""
        try:
            with self.servers[via].client() as api:
                return api.request(method, path, **kwargs)  # type: ignore[arg-type]
        except httpx.TransportError as err:
            if via in self.alive:
                self.fail(f"server {via} (alive) dropped a request: {err!r}")
            return None

    def client_loop(self, me: int) -> None:
        sid = None
        n = 0
        while not self.stop.is_set():
            n += 1
            via = self.pick(me + n)
            if sid is None:
                made = self.call(via, "POST", "/api/sessions", json={"task": f"client {me}"})
                if made is not None and self.check(via, "session", made, 201):
                    sid = made.json()["id"]
                continue
            marker = f"mark{uuid.uuid4().hex[:12]}"
            text = f"client {me} note {n} about {marker}"
            answer = self.call(via, "POST", f"/api/sessions/{sid}/moments", json={"text": text})
            if answer is None or not self.check(via, "record", answer, 201):
                continue  # not acknowledged: not owed (it may or may not be stored)
            with self.lock:
                self.acked[answer.json()["id"]] = text
                if self.restarted.is_set():
                    self.after_restart[via] += 1
            reader = self.pick(me + n + 1)
            params = {"q": marker, "mode": "lexical", "min_score": 0}
            found = self.call(reader, "GET", "/api/search", params=params)
            if found is not None:
                self.check(reader, "search", found, 200)


@pytest.mark.slow
def test_clients_lose_nothing_while_a_server_dies_and_postgres_restarts(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    url = pg.url_with_schema(tmp_path_factory.mktemp("pg-restart"))
    root = tmp_path_factory.mktemp("machines")
    (root / "machine-0").mkdir()
    made = cli(root / "machine-0", url, "token", "rotate-owner")  # the owner's token, once
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    servers: list[PgServer] = []
    try:
        for n in range(SERVERS):
            servers.append(PgServer(root / f"machine-{n}", url, token))
        run = Run(servers)
        clients = [threading.Thread(target=run.client_loop, args=(me,)) for me in range(CLIENTS)]
        for thread in clients:
            thread.start()
        try:
            wait_until(lambda: len(run.acked) >= KILL_AFTER, "writes before the kill")
            victim = SERVERS - 1
            with run.lock:
                run.alive.remove(victim)
            servers[victim].process.send_signal(signal.SIGKILL)
            wait_until(lambda: len(run.acked) >= RESTART_AFTER, "writes before the restart")
            pg.restart_server()
            run.restarted.set()
            wait_until(
                lambda: all(run.after_restart[s] >= AFTER_RESTART for s in run.alive),
                "every surviving server's writes after the restart",
                alive=lambda: not run.failures,
            )
        finally:
            run.stop.set()
            for thread in clients:
                thread.join(HANG_GUARD_S)
        assert not any(t.is_alive() for t in clients), "a client hung"
        assert servers[victim].process.wait(HANG_GUARD_S) == -signal.SIGKILL
        assert run.failures == []
        for s in run.alive:  # recovered without a restart of their own
            assert servers[s].running()
            assert run.after_restart[s] >= AFTER_RESTART
        print(f"\n{len(run.acked)} writes acknowledged, {run.unavailable} answers were 503")

        with servers[0].client() as api:  # every acknowledged write, exactly once
            assert_each_acknowledged_write_once(api, run.acked)
    finally:
        for server in servers:
            server.stop()
