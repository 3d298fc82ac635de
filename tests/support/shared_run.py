"""A bounded torture run of every front end on one notebook home at once (issue 28).

``serve`` with HTTP clients writing and searching, a loop of CLI commands, an MCP stdio
client, a Python ``Notebook.open`` writer, and once each of ``compact``, ``redact``,
``forget`` and ``export``, while writers are SIGKILLed at random and the server once, at a
random point among the chores (it is started again, and the run goes on through it). Every
front end writes texts holding a token of their own; the :class:`Ledger` keeps what each
acknowledged and what went wrong, and :meth:`Ledger.check_home` holds the home to it at
the end.

Read-your-writes across processes: a checker searches through the server for the token
of every write another process acknowledged, :data:`FRESH_POLLS` times 50 ms apart at most
(a second, on a machine that keeps up; counted in searches, never against a clock); a write
none of them found is a stale read.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from agent_notebook import Notebook
from tests.support.server import ENV, Server
from tests.support.sqlite_locks import assert_holds_its_locks
from tests.support.waiting import HANG_GUARD_S, wait_until

#: Another process's acknowledged write must be found within this many searches 50 ms apart.
FRESH_POLLS = 20
#: Two: concurrent HTTP writers (and ``http1``'s writes for ``redact``); more only add load
#: that slows every other process on a small machine without adding a kind of check.
HTTP_CLIENTS = 2
#: Per request: long enough that only a hung server gets there under load.
REQUEST_S = 60.0
#: The pause of an HTTP client and of the MCP client between their writes (seconds): they
#: write as often as a busy agent, not as fast as a loop can. A loop that never yields adds
#: no kind of check; on a small machine it takes the CPU of the processes the run waits
#: for (the chores, the restarted server), and so only makes the run longer.
PACE_S = 0.25


def token() -> str:
    return "tok" + uuid.uuid4().hex[:12]


def cli(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``agent-notebook ARGS --home HOME`` as a real process (the home is shared with others)."""
    command = [sys.executable, "-m", "agent_notebook", *args, "--home", str(home)]
    return subprocess.run(
        command, env=ENV, input=stdin, capture_output=True, text=True, timeout=HANG_GUARD_S
    )


@dataclass
class Ledger:
    """What the run's front ends acknowledged, and what went wrong (thread-safe)."""

    acked: dict[str, tuple[str, str]] = field(default_factory=dict)  # id: text, who
    duplicates: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    removed: set[str] = field(default_factory=set)  # redacted or forgotten on purpose
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ack(self, moment_id: str, text: str, who: str) -> None:
        with self.lock:
            if moment_id in self.acked:
                self.duplicates.append(f"{moment_id} given to {who} and {self.acked[moment_id][1]}")
            self.acked[moment_id] = (text, who)

    def problem(self, what: str) -> None:
        with self.lock:
            self.problems.append(what)

    def by(self, who: str) -> int:
        with self.lock:
            return sum(1 for _, w in self.acked.values() if w.startswith(who))

    def check_home(self, home: Path, *, expect_removed_gone: bool = True) -> None:
        """Every acknowledged write present exactly once with the text acknowledged."""
        assert not self.problems, "\n".join(self.problems[:20])
        assert not self.duplicates, self.duplicates
        with Notebook.open(home, background_embedding=False) as nb:
            stored = {}
            for session in nb.backend.list_sessions():
                for moment in nb.backend.list_moments(session.id):
                    stored[moment.id] = moment
        texts = Counter(m.content.text for m in stored.values() if not m.redacted)
        missing = [i for i in self.acked if i not in stored]
        assert not missing, f"acknowledged but not stored: {missing[:20]}"
        for moment_id, (text, who) in self.acked.items():
            moment = stored[moment_id]
            if moment_id in self.removed:
                assert moment.redacted and text not in moment.content.text, moment
                continue
            assert moment.content.text == text, (moment_id, who, moment.content.text, text)
            assert texts[text] == 1, f"{text!r} ({who}) stored {texts[text]} times"


class Run:
    """The front ends of one home, started and stopped together."""

    def __init__(self, home: Path, log: Path, seconds: float, seed: int) -> None:
        self.home, self.log, self.seconds = home, log, seconds
        self.random = random.Random(seed)
        self.ledger = Ledger()
        self.stop = threading.Event()
        self.chores_done = threading.Event()
        self.server = Server(home, log)
        self.sessions: dict[str, str] = {}
        self.threads: list[threading.Thread] = []
        self.stale: list[str] = []
        self.seen_fresh = 0
        #: Server kills so far, and whether one is being restarted: a 5xx is allowed from a
        #: request that a kill overlapped.
        self.kills = 0
        self.restarting = threading.Event()
        #: Set while a server runs (cleared from its kill until its successor answers): a
        #: front end that got no answer waits on it rather than spin on a refused connection,
        #: which only took the CPU the successor's start-up needs.
        self.up = threading.Event()
        self.up.set()
        #: Held while the server is killed and started again, and by a chore that needs the
        #: server up throughout (``key rotate`` must find the notebook open by it).
        self.server_up = threading.Lock()
        #: HTTP writes acknowledged when the killed server's successor came up: the run goes
        #: on until the successor acknowledged more (it serves on after a kill).
        self.http_at_restart: int | None = None

    # -- plumbing ---------------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs: object) -> httpx.Response | None:
        """One request to whichever server runs now; None when none answered (down, or
        killed mid-request: not acknowledged). A 5xx outside a restart is a problem."""
        server, kills, restarting = self.server, self.kills, self.restarting.is_set()
        try:
            with httpx.Client(
                base_url=server.url,
                timeout=REQUEST_S,
                headers={"Authorization": f"Bearer {server.token}"},
            ) as client:
                answer = client.request(method, path, **kwargs)  # type: ignore[arg-type]
        except httpx.TransportError:
            return None
        overlapped = restarting or self.restarting.is_set() or self.kills != kills
        if answer.status_code >= 500 and not overlapped:
            self.ledger.problem(f"{method} {path}: {answer.status_code} {answer.text[:300]}")
        return answer

    def wait_for_a_server(self) -> None:
        """After a request that no server answered: on once one runs (or the run stops)."""
        while not self.stop.is_set() and not self.up.wait(0.5):
            pass

    def spawn(self, name: str, target: Callable[[], None]) -> None:
        def guarded() -> None:
            try:
                target()
            except Exception as err:  # noqa: BLE001 (the ledger carries it to the assertion)
                self.ledger.problem(f"{name} crashed: {err!r}")

        thread = threading.Thread(target=guarded, name=name, daemon=True)
        self.threads.append(thread)
        thread.start()

    def new_session(self, task: str) -> str:
        while True:
            answer = self.request("POST", "/api/sessions", json={"task": task})
            if answer is not None and answer.status_code == 201:
                return str(answer.json()["id"])
            time.sleep(0.2)

    # -- the front ends ---------------------------------------------------------------------

    def http_client(self, n: int) -> None:
        sid = self.sessions[f"http{n}"]
        while not self.stop.is_set():
            text = f"http client {n} writes {token()}"
            answer = self.request("POST", f"/api/sessions/{sid}/moments", json={"text": text})
            if answer is not None and answer.status_code == 201:
                self.ledger.ack(answer.json()["id"], text, f"http{n}")
            elif answer is not None and answer.status_code < 500:
                self.ledger.problem(f"http{n} POST: {answer.status_code} {answer.text[:300]}")
            if answer is None:  # killed under the request, or down: the next one is the
                self.wait_for_a_server()  # successor's (no spin on a refused connection)
            else:
                self.request("GET", "/api/search", params={"q": text.split()[-1], "limit": 5})
            self.stop.wait(PACE_S)

    def cli_loop(self) -> None:
        sid = self.sessions["cli"]
        step = 0
        while not self.stop.is_set():
            step += 1
            if step % 4 == 1:
                self.cli_record(sid, kill=step % 3 == 0)
            elif step % 4 == 2:
                done = cli(self.home, "stats")
                if done.returncode != 0:
                    self.ledger.problem(f"cli stats: {done.stderr[-500:]}")
            elif step % 4 == 3:
                done = cli(self.home, "search", "writes", "--limit", "3")
                if done.returncode != 0:
                    self.ledger.problem(f"cli search: {done.stderr[-500:]}")
            else:
                self.cli_sees_the_servers_writes()

    def cli_record(self, sid: str, *, kill: bool) -> None:
        text = f"cli writes {token()}"
        command = [sys.executable, "-m", "agent_notebook", "record", "--session", sid]
        command += ["-f", "json", "--home", str(self.home)]
        with subprocess.Popen(
            command,
            env=ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as child:
            assert child.stdin is not None and child.stdout is not None
            assert child.stderr is not None
            child.stdin.write(json.dumps({"text": text}))
            child.stdin.close()
            if kill:  # killed at a random point of its life: acknowledged only if it printed
                time.sleep(self.random.uniform(0.2, 2.5))
                child.send_signal(signal.SIGKILL)
            out, err = child.stdout.read(), child.stderr.read()
            child.wait(HANG_GUARD_S)
        if not kill and child.returncode != 0:
            self.ledger.problem(f"cli record: {err[-500:]}")
        if child.returncode == 0:
            (moment,) = json.loads(out)
            self.ledger.ack(moment["id"], text, "cli")

    def cli_sees_the_servers_writes(self) -> None:
        sid = self.sessions["http0"]
        with self.ledger.lock:
            before = {i for i, (_, who) in self.ledger.acked.items() if who == "http0"}
        done = cli(self.home, "moments", sid, "-f", "json", "--limit", "100000")
        if done.returncode != 0:
            self.ledger.problem(f"cli moments: {done.stderr[-500:]}")
            return
        listed = {m["id"] for m in json.loads(done.stdout)}
        if unseen := before - listed - self.ledger.removed:
            self.ledger.problem(f"the CLI did not see the server's writes {sorted(unseen)[:5]}")

    def python_writer(self) -> None:
        """A ``Notebook.open`` writer in a process of its own, SIGKILLed now and then."""
        script = (
            "import sys, uuid\n"
            "from agent_notebook import Notebook\n"
            "with Notebook.open(sys.argv[1], background_embedding=False) as nb:\n"
            "    while True:\n"
            "        text = 'python writes tok' + uuid.uuid4().hex[:12]\n"
            "        m = nb.record(sys.argv[2], text)\n"
            "        print(m.id, text, flush=True)\n"
        )
        while not self.stop.is_set():
            with subprocess.Popen(
                [sys.executable, "-c", script, str(self.home), self.sessions["python"]],
                env=ENV,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ) as child:
                assert child.stdout is not None and child.stderr is not None
                killer: threading.Timer | None = None
                for line in child.stdout:  # a line is printed after its record returned
                    if not line.endswith("\n"):
                        break  # the kill cut its printing short: not acknowledged
                    moment_id, text = line.rstrip("\n").split(" ", 1)
                    self.ledger.ack(moment_id, text, "python")
                    if killer is None:  # killed at a random point once it writes
                        killer = threading.Timer(self.random.uniform(0.2, 3.0), child.kill)
                        killer.start()
                    if self.stop.is_set():
                        child.kill()
                if killer is not None:
                    killer.cancel()
                child.wait(HANG_GUARD_S)
                if child.returncode != -signal.SIGKILL:
                    self.ledger.problem(
                        f"python writer exited {child.returncode}: {child.stderr.read()[-500:]}"
                    )

    def mcp_client(self) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "agent_notebook", "mcp", "--home", str(self.home)],
            env=ENV,
        )
        sid = self.sessions["mcp"]

        async def one_process() -> None:
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                for _ in range(8):
                    if self.stop.is_set():
                        return
                    text = f"mcp writes {token()}"
                    result = await s.call_tool("record", {"text": text, "session_id": sid})
                    if result.isError:
                        self.ledger.problem(f"mcp record: {result.content}")
                        continue
                    body = json.loads(result.content[0].text)  # type: ignore[union-attr]
                    self.ledger.ack(body["id"], text, "mcp")
                    await asyncio.sleep(PACE_S)

        while not self.stop.is_set():
            asyncio.run(one_process())

    def freshness_checker(self) -> None:
        """Search through the server for other processes' acknowledged writes."""
        checked: set[str] = set()
        while not self.stop.is_set():
            with self.ledger.lock:
                todo = [
                    (i, text, who)
                    for i, (text, who) in self.ledger.acked.items()
                    if not who.startswith("http") and i not in checked
                ]
            for moment_id, text, who in todo:
                searches = 0  # answered ones: a search a server kill cut off does not count
                while not self.stop.is_set() and searches < FRESH_POLLS:
                    answer = self.request(
                        "GET",
                        "/api/search",
                        params={"q": text.split()[-1], "mode": "lexical", "min_score": 0},
                    )
                    if answer is None:
                        self.wait_for_a_server()
                    elif answer.status_code == 200:
                        searches += 1
                        if moment_id in {hit["moment"]["id"] for hit in answer.json()["items"]}:
                            self.seen_fresh += 1
                            break
                    time.sleep(0.05)
                else:
                    # A moment forgotten or redacted on purpose (``forget`` records and
                    # forgets its own at once) may be gone before the checker gets to it.
                    if searches == FRESH_POLLS and moment_id not in self.ledger.removed:
                        self.stale.append(f"{moment_id} ({who}) not found in {searches} searches")
                checked.add(moment_id)
            time.sleep(0.1)

    # -- maintenance and kills ----------------------------------------------------------------

    def kill_server(self) -> None:
        with self.server_up:
            self.restarting.set()
            self.up.clear()
            self.kills += 1
            self.server.process.send_signal(signal.SIGKILL)
            self.server.process.wait(HANG_GUARD_S)
            try:
                self.server = Server(self.home, self.log)
            finally:  # a successor that never came up fails the run: no front end waits on
                self.up.set()  # it (they find no server, and the ledger has the problem)
            self.http_at_restart = self.ledger.by("http")
            self.restarting.clear()

    def maintenance(self, chores: list[Callable[[], None]]) -> None:
        """Start each chore once, spread over the run, in random order, each in a thread of
        its own: they overlap one another as well as the front ends (one after another, on
        a small machine each of their processes waited for the one before)."""
        self.random.shuffle(chores)
        gap = self.seconds / (len(chores) + 1)
        running: list[threading.Thread] = []
        for chore in chores:
            if self.stop.wait(gap):
                return
            running.append(self.start_chore(chore))
        for thread in running:
            thread.join(HANG_GUARD_S)
        if not any(thread.is_alive() for thread in running):
            self.chores_done.set()

    def start_chore(self, chore: Callable[[], None]) -> threading.Thread:
        def guarded() -> None:
            try:
                chore()
            except Exception as err:  # noqa: BLE001 (the ledger carries it to the assertion)
                self.ledger.problem(f"{chore.__name__} crashed: {err!r}")

        thread = threading.Thread(target=guarded, name=chore.__name__, daemon=True)
        thread.start()
        return thread

    def compact(self) -> None:
        done = cli(self.home, "compact")
        if done.returncode != 0:
            self.ledger.problem(f"compact: {done.stderr[-500:]}")

    def redact(self) -> None:
        while True:
            with self.ledger.lock:
                victims = [i for i, (_, who) in self.ledger.acked.items() if who == "http1"]
                if victims:
                    victim = victims[0]
                    self.ledger.removed.add(victim)
                    break
            time.sleep(0.1)
        done = cli(self.home, "redact", victim, "--reason", "torture run")
        if done.returncode != 0:
            self.ledger.problem(f"redact: {done.stderr[-500:]}")
            return
        text = self.ledger.acked[victim][0]
        answer = self.request("GET", f"/api/moments/{victim}")
        if answer is not None and answer.status_code == 200 and text in answer.text:
            self.ledger.problem(f"the server still shows redacted {victim}'s text")

    def forget(self) -> None:
        word = "zanzibarfjord"
        sid = self.sessions["cli"]
        drafts = [{"text": f"{word} notes {token()}", "concepts": [word]} for _ in range(2)]
        done = cli(self.home, "record", "--session", sid, "-f", "json", stdin=json.dumps(drafts))
        if done.returncode != 0:
            self.ledger.problem(f"record before forget: {done.stderr[-500:]}")
            return
        ids = [m["id"] for m in json.loads(done.stdout)]
        with self.ledger.lock:
            self.ledger.removed.update(ids)
        for moment, draft in zip(json.loads(done.stdout), drafts, strict=True):
            self.ledger.ack(moment["id"], draft["text"], "cli-forget")
        forgot = cli(self.home, "forget", word, "--reason", "torture run")
        if forgot.returncode != 0:
            self.ledger.problem(f"forget: {forgot.stderr[-500:]}")

    def export(self) -> None:
        with self.ledger.lock:
            before = set(self.ledger.acked) - self.ledger.removed
        target = self.home.parent / "export.db"
        done = cli(self.home, "export", str(target), "--to", "sqlite")
        if done.returncode != 0:
            self.ledger.problem(f"export: {done.stderr[-500:]}")
            return
        with Notebook.open(self.home.parent / "exported", backend=str(target)) as copy:
            exported = {
                m.id for s in copy.backend.list_sessions() for m in copy.backend.list_moments(s.id)
            }
        if missing := before - exported:
            self.ledger.problem(f"export left out acknowledged {sorted(missing)[:5]}")

    # -- the run ----------------------------------------------------------------------------

    def run(self, extra_chores: list[Callable[[], None]] | None = None) -> None:
        """The run; whatever fails, nothing it started outlives it."""
        try:
            self._run(extra_chores)
        finally:
            self.stop.set()
            for thread in self.threads:
                thread.join(HANG_GUARD_S)
            if self.server.process.poll() is None:
                self.server.process.kill()
                self.server.process.wait(HANG_GUARD_S)

    def _run(self, extra_chores: list[Callable[[], None]] | None) -> None:
        for name in [f"http{n}" for n in range(HTTP_CLIENTS)] + ["cli", "python", "mcp"]:
            self.sessions[name] = self.new_session(name)
        for n in range(HTTP_CLIENTS):
            self.spawn(f"http{n}", lambda n=n: self.http_client(n))  # type: ignore[misc]
        self.spawn("cli", self.cli_loop)
        self.spawn("python", self.python_writer)
        self.spawn("mcp", self.mcp_client)
        self.spawn("fresh", self.freshness_checker)
        chores = [self.compact, self.redact, self.forget, self.export, self.kill_server]
        chores += extra_chores or []
        self.spawn("maintenance", lambda: self.maintenance(chores))
        # At least ``seconds``, and on until every chore ran and every front end wrote a few
        # times: a loaded machine makes the run longer, never weaker.
        self.stop.wait(self.seconds)
        wait_until(
            lambda: (
                self.chores_done.is_set()
                and all(self.ledger.by(who) >= 3 for who in ("http", "cli", "python", "mcp"))
                and self.ledger.by("http") > (self.http_at_restart or 0)
                and self.seen_fresh > 0  # (a run that ends at the restart may have none yet)
            ),
            "every chore run, every front end writing, the restarted server too, a fresh read",
            alive=lambda: not self.ledger.problems and not self.stale,
            pause=0.5,
        )
        assert not self.ledger.problems, "\n".join(self.ledger.problems[:20])
        if (database := self.home / "notebook.db").exists():
            assert_holds_its_locks(self.server.process.pid, database, "serve, at the end")
        self.stop.set()
        for thread in self.threads:
            thread.join(HANG_GUARD_S)
            assert not thread.is_alive(), f"{thread.name} hung"
        self.server.stop()

    def assert_sound(self) -> None:
        assert self.kills == 1 and self.http_at_restart is not None
        assert self.ledger.by("http") > self.http_at_restart, "nothing written after the restart"
        for who in ("http", "cli", "python", "mcp"):
            assert self.ledger.by(who) > 0, f"no write by {who} was acknowledged: {self.ledger}"
        assert not self.stale, self.stale[:10]
        assert self.seen_fresh > 0
        self.ledger.check_home(self.home)
