"""``agent-notebook serve`` processes over one PostgreSQL notebook, each with a home of its
own (as on a machine of its own), the CLI on that notebook, and the check that every
acknowledged write is stored once."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import httpx

from tests.support.server import ENV, PORT_TRIES, free_port
from tests.support.waiting import HANG_GUARD_S, wait_until


def cli(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agent_notebook", *args, "--home", str(home)]
    command += ["--backend", url]
    return subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=HANG_GUARD_S)


class PgServer:
    """``agent-notebook serve`` over the notebook at ``url``, with a home of its own (as on
    a machine of its own): nothing but the database is shared."""

    def __init__(self, home: Path, url: str, token: str, env: dict[str, str] | None = None) -> None:
        self.home, self.log, self.token = home, home.with_suffix(".log"), token
        home.mkdir(exist_ok=True)
        for _ in range(PORT_TRIES):
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            command = [sys.executable, "-m", "agent_notebook", "serve", "--home", str(home)]
            command += ["--backend", url, "--port", str(self.port), "--model", "fake:echo"]
            command += ["--log-level", "warning"]
            with self.log.open("ab") as out:
                self.process = subprocess.Popen(
                    command, env={**ENV, **(env or {})}, stdout=out, stderr=out
                )
            if wait_until(self._healthy, "a server's start", alive=self.running, pause=0.1):
                return
            assert "address already in use" in self.log.read_text(), self.log.read_text()
        raise AssertionError(f"no free port in {PORT_TRIES} tries: {self.log.read_text()}")

    def _healthy(self) -> bool:
        try:
            answer = httpx.get(
                f"{self.url}/api/health",
                headers={"Authorization": f"Bearer {self.token}"},
                timeout=HANG_GUARD_S,
            )
        except httpx.TransportError:
            return False
        return answer.status_code == 200 and answer.json().get("notebook") is not None

    def running(self) -> bool:
        return self.process.poll() is None

    def client(self, token: str | None = None) -> httpx.Client:
        auth = {"Authorization": f"Bearer {token or self.token}"}
        return httpx.Client(base_url=self.url, timeout=HANG_GUARD_S, headers=auth)

    def stop(self) -> None:
        if self.running():
            self.process.terminate()
        self.process.wait(HANG_GUARD_S)


def assert_each_acknowledged_write_once(api: httpx.Client, acked: dict[str, str]) -> None:
    """Every acknowledged write (id: text) is stored once, with its text, and no moment
    number repeats."""
    stored: list[tuple[str, str]] = []
    offset = 0
    while True:
        page = api.get("/api/moments", params={"offset": offset, "limit": 1000})
        assert page.status_code == 200, page.text
        items = page.json()["items"]
        stored += [(m["id"], m["content"]["text"]) for m in items]
        if len(items) < 1000:
            break
        offset += len(items)
    ids = Counter(mid for mid, _ in stored)
    texts = Counter(text for _, text in stored)
    assert all(count == 1 for count in ids.values())  # moment numbers never repeat
    for mid, text in acked.items():
        assert ids[mid] == 1 and texts[text] == 1, (mid, text)
        assert dict(stored)[mid] == text
