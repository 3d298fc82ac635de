"""Fuzzing every front end, and the server's peak memory under maximal requests (issue 40).

Issue 40's "Measure": generated and hand-made hostile input through each front end of one
source tree, counted as the client sees it, and the server's memory under 20 parallel
requests each just under the body limit. Run it once per source tree (``--src``: the tree
whose ``src/`` the servers and CLI processes run from, by ``PYTHONPATH``), e.g. on main and
on the commit before issue 40's hardening, and compare the two tables; within a run each
line stands beside its alternative (owner beside guest, schema-valid beside invalid input,
idle memory beside loaded).

Five parts, each bounded by a time budget (and a number of examples), so a run takes about
ten minutes on a loaded two-core machine:

1. ``http``: a real ``agent-notebook serve`` on a fresh home (an owner token, a guest token
   made with ``agent-notebook token create``, a seeded session with a decision, a pending
   item, an escalation, a chat thread and a session-notebook section). Every operation of
   its OpenAPI document (read from the running server) gets ``--examples`` cases generated
   by schemathesis (half schema-valid, half schema-invalid; for an operation with path
   parameters, half of each with the seeded ids so the handler is reached), then
   ``--edges`` cases that put one edge value (600 KB strings, 2**63, 1e308, dates past
   9999-12-31 or before year 1, NUL, path traversal...) into one body field or query
   parameter of a valid case. Sent with the owner token; with the guest token, the guest's
   operations (slice, write-back) get the same and every other operation one valid case.
   Destructive operations (DELETE, redact, forget) run last.
2. ``mcp``: the ``mcp`` SDK's streamable-HTTP client on the same server's ``/mcp/`` (owner)
   and ``/mcp-guest/`` (guest). Each tool's input schema is turned into an operation of a
   small OpenAPI document so schemathesis generates its arguments (valid and invalid), plus
   the edge values field by field; ``call_tool`` with each.
3. ``cli``: ``python -m agent_notebook COMMAND`` processes (record, ingest, import, search,
   slice, show, moments, decide, add-pending, close-pending, edit-decision, about,
   notebook set, redact, forget) with hypothesis-generated arguments, stdin (moment drafts
   as JSON, or raw bytes) and files (JSON, JSONL, YAML folders), on a seeded home.
4. ``yaml``: hand-made bad exports (alias bombs in an action's result, which the model
   walks, and as an extra key of a moment file, a session file and index.yaml; a 26-digit
   counter, no counters, a 5,001-digit number; a symbolic link in ``media/``;
   100,000-deep nesting; a 2 MiB and a 20 MiB moment text; wrong types; a Python tag; a
   timestamp at the range's edge; a moment file named for another id...) each imported
   by ``agent-notebook import`` into a fresh home; wall time and peak RSS of the child
   (its VmHWM, sampled every 10 ms), under an address-space cap (``--import-mem-gib``)
   and a timeout, so an alias bomb cannot take the machine.
5. ``memory``: a fresh server; its ``VmHWM`` (/proc/PID/status) idle, then after each of
   ``--waves`` waves of 20 parallel requests each just under the body limit (half guest
   write-backs of one long text, half owner batches of six moments at the text limit),
   with the statuses, wall time and the session record's size after.

Counts: ``tried`` requests sent; ``ok`` 2xx (CLI: exit 0; MCP: a result that is no error);
``refused`` 4xx (CLI: exit 1 or 2; MCP: an error result); ``5xx``; ``tracebacks``: a body,
tool result or CLI output holding ``Traceback (most recent call last)``, or, for MCP, an
exception in the client (a protocol error, an invalid result); ``hangs``: no answer within
``--timeout`` seconds (the process killed, for the CLI). ``server log tb`` counts tracebacks
the server wrote to its own log meanwhile. Each 5xx, traceback and hang is listed after the
table with the request that caused it (first ``--show`` of each kind per front).

    .venv-fuzz/bin/python bench/fuzz_fronts.py --src /work/main [--examples 8] [--edges 12]
        [--http-seconds 150] [--mcp-seconds 90] [--cli-seconds 90] [--cli-runs 150]
        [--timeout 30] [--import-timeout 60] [--import-mem-gib 4] [--waves 2]
        [--only http,mcp,cli,yaml,memory] [--keep]

Run it from a venv with the dev extra (schemathesis, hypothesis, mcp, httpx); ``--src``'s
dependencies must be those the venv holds.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

TRACEBACK = "Traceback (most recent call last)"
MIB = 1024 * 1024
#: moments.max_text_bytes's default, and the body limit serve derives from it
#: (server/settings.py body_limit_for: 6 bytes of JSON per byte of text, 64 KiB besides).
MAX_TEXT_BYTES = MIB
BODY_LIMIT = 6 * MAX_TEXT_BYTES + 64 * 1024
EDGE_STRINGS = [
    "",
    "x" * 600_000,
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00:00+14:00",
    "../../../../etc/passwd",
    "a\x00b",
    "\U0001f4a5" * 2000,
    "<script>alert(1)</script>",
    "d_99999999999999999999999",
    " ",
]
NESTED: list[Any] = []
for _ in range(30):
    NESTED = [NESTED]
EDGE_VALUES: list[Any] = [
    *EDGE_STRINGS,
    2**63,
    -(2**63) - 1,
    10**400,
    1e308,
    -1,
    0,
    None,
    [],
    {},
    NESTED,
    True,
]
#: Where each finding's whole input is written (--findings).
FINDINGS: Path | None = None
#: Hand-made bodies no JSON Schema generator writes, sent raw to each operation with a JSON body.
RAW_BODIES: dict[str, bytes] = {
    "JSON nested 100,000 deep": b"[" * 100_000 + b"]" * 100_000,
    "a 5,001-digit number": b'{"text": ' + b"9" * 5001 + b"}",
    "NaN and Infinity": b'{"text": NaN, "importance": Infinity}',
    "not UTF-8": b'{"text": "\xff\xfe"}',
    "truncated": b'{"text": "abc',
}
DESTRUCTIVE = re.compile(r"redact|forget|delete", re.IGNORECASE)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# -- counting -----------------------------------------------------------------------------------


@dataclass
class Tally:
    """One front end's (or one token's) outcomes."""

    name: str
    tried: int = 0
    ok: int = 0
    refused: int = 0
    server_errors: int = 0
    tracebacks: int = 0
    hangs: int = 0
    other: int = 0
    seconds: float = 0.0
    note: str = ""
    codes: Counter[str] = field(default_factory=Counter)
    found: list[tuple[str, str, str]] = field(default_factory=list)  # kind, request, answer

    def add(
        self, kind: str, code: str, request: str = "", answer: str = "", full: Any = None
    ) -> None:
        self.tried += 1
        self.codes[code] += 1
        if kind == "ok":
            self.ok += 1
        elif kind == "refused":
            self.refused += 1
        elif kind == "5xx":
            self.server_errors += 1
        elif kind == "traceback":
            self.tracebacks += 1
        elif kind == "hang":
            self.hangs += 1
        else:
            self.other += 1
        if kind in ("5xx", "traceback", "hang", "other"):
            self.found.append((kind, request, answer))
            if FINDINGS and full is not None and not self.name.startswith(" "):
                FINDINGS.mkdir(parents=True, exist_ok=True)
                n = len(list(FINDINGS.iterdir())) + 1
                slug = re.sub(r"[^a-z]+", "-", self.name.lower()).strip("-")
                record = {"front": self.name, "kind": kind, "answer": answer, "request": full}
                (FINDINGS / f"{n:03d}-{slug}-{kind}.json").write_text(
                    json.dumps(
                        record,
                        default=lambda b: b.decode("latin-1") if isinstance(b, bytes) else repr(b),
                        indent=1,
                    )
                )


def print_table(title: str, rows: list[Tally], extra: str = "") -> None:
    print(f"\n{title}")
    head = f"| {'front':34} | tried | ok    | refused | 5xx | tracebacks | hangs | other | s    |"
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    for t in rows:
        print(
            f"| {t.name:34} | {t.tried:5d} | {t.ok:5d} | {t.refused:7d} | {t.server_errors:3d} | "
            f"{t.tracebacks:10d} | {t.hangs:5d} | {t.other:5d} | {t.seconds:4.0f} |"
        )
    for t in rows:
        if t.note:
            print(f"  {t.name}: {t.note}")
    if extra:
        print(extra)


def print_found(rows: list[Tally], show: int) -> None:
    for t in rows:
        if t.name.startswith(" "):
            continue  # a part of the line above: its findings are listed there
        seen: Counter[tuple[str, str]] = Counter()
        for kind, request, answer in t.found:
            key = (kind, request.split(" ", 2)[:2].__repr__() + answer[:80])
            seen[key] += 1
            if seen[key] > 1 or sum(1 for k in seen if k[0] == kind) > show:
                continue
            print(f"  [{t.name}] {kind}: {request[:400]}")
            print(f"      -> {answer[:400]}")
        repeats = sum(n - 1 for n in seen.values())
        if repeats:
            print(f"  [{t.name}] (+{repeats} like the ones above)")


# -- processes ----------------------------------------------------------------------------------


@dataclass
class Tree:
    """The source tree the processes run from, and the environment they get."""

    src: Path

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.src / "src")
        env["AGENT_NOTEBOOK_EMBEDDER"] = "none"
        env.pop("AGENT_NOTEBOOK_HOME", None)
        return env

    def describe(self) -> str:
        head = subprocess.run(
            ["git", "-C", str(self.src), "log", "-1", "--format=%h %s"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        return f"{self.src} ({head[:90]})"

    def cli(
        self, *args: str, stdin: bytes = b"", check: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        done = subprocess.run(
            [sys.executable, "-m", "agent_notebook", *args],
            input=stdin,
            capture_output=True,
            env=self.env,
            timeout=300,
        )
        if check and done.returncode != 0:
            raise SystemExit(
                f"agent-notebook {' '.join(args)} failed: {done.stderr.decode()[-2000:]}"
            )
        return done


@dataclass
class Finished:
    code: int | None  # None: killed at the timeout
    seconds: float
    max_rss_kib: int
    stdout: str
    stderr: str


def run_child(
    tree: Tree,
    args: list[str],
    stdin: bytes,
    timeout: float,
    work: Path,
    mem_cap: int | None = None,
) -> Finished:
    """``python -m agent_notebook ARGS`` with ``stdin``, its peak RSS sampled every 10 ms
    (VmHWM), killed after ``timeout`` s; ``mem_cap`` bytes of address space at most."""
    work.mkdir(parents=True, exist_ok=True)
    out, err, inp = work / "out", work / "err", work / "in"
    inp.write_bytes(stdin)

    def limit() -> None:
        if mem_cap:
            resource.setrlimit(resource.RLIMIT_AS, (mem_cap, mem_cap))

    with inp.open("rb") as i, out.open("wb") as o, err.open("wb") as e:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "agent_notebook", *args],
            stdin=i,
            stdout=o,
            stderr=e,
            env=tree.env,
            preexec_fn=limit,
            start_new_session=True,
        )
        code: int | None = None
        rss = 0
        while True:
            rss = max(rss, vm_hwm(proc.pid))
            pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.perf_counter() - t0 > timeout:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        seconds = time.perf_counter() - t0
        proc.returncode = code if code is not None else -9  # waited for above
    return Finished(
        code,
        seconds,
        rss,
        out.read_bytes().decode(errors="replace"),
        err.read_bytes().decode(errors="replace"),
    )


def vm_hwm(pid: int) -> int:
    """The peak RSS (KiB) of ``pid``'s program so far: VmHWM, which exec resets (the
    child's ``ru_maxrss`` would keep the forking parent's peak as a floor)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def classify_cli(done: Finished) -> tuple[str, str]:
    if done.code is None:
        return "hang", "killed"
    if TRACEBACK in done.stderr or TRACEBACK in done.stdout:
        return "traceback", str(done.code)
    if done.code == 0:
        return "ok", "0"
    if done.code in (1, 2):
        return "refused", str(done.code)
    return "other", str(done.code)


def last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    errors = [x for x in lines if "rror" in x]
    lines = errors or lines
    return lines[-1].strip() if lines else ""


class Server:
    """``agent-notebook serve`` from the tree, on a free port, logging to a file."""

    def __init__(self, tree: Tree, home: Path, logfile: Path) -> None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.logfile = logfile
        command = [sys.executable, "-m", "agent_notebook", "serve", "--home", str(home)]
        command += ["--port", str(self.port), "--model", "fake:echo", "--log-level", "warning"]
        with logfile.open("ab") as out:
            self.process = subprocess.Popen(command, env=tree.env, stdout=out, stderr=out)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"serve exited: {logfile.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        else:
            self.stop()
            raise SystemExit("serve did not start in 180 s")
        self.owner = (home / "secrets" / "owner-token").read_text().strip()

    def tracebacks(self) -> list[str]:
        """The last line of each traceback in the server's log so far."""
        text = self.logfile.read_text(errors="replace")
        found = []
        for block in text.split(TRACEBACK)[1:]:
            lines = [x for x in block.splitlines() if x and not x.startswith((" ", "\t"))]
            found.append(lines[0][:300] if lines else "?")
        return found

    def status(self, key: str) -> int:
        """A line of /proc/PID/status in KiB (VmHWM, VmRSS)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
        return 0

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def make_home(tree: Tree, home: Path) -> tuple[str, str]:
    """A fresh home with a guest token 'fuzzer'; its owner token and the guest's."""
    tree.cli("init", "--home", str(home))
    guest = tree.cli("token", "create", "--guest", "fuzzer", "--home", str(home))
    return (home / "secrets" / "owner-token").read_text().strip(), guest.stdout.decode().strip()


# -- generating with hypothesis -----------------------------------------------------------------


def draw(strategy: Any, n: int, seed: int) -> list[Any]:
    """``n`` examples of ``strategy`` (generation only, derandomized by ``seed``)."""
    import warnings

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis.errors import HypothesisWarning

    warnings.filterwarnings("ignore", category=HypothesisWarning)  # the long edge values' reprs
    out: list[Any] = []
    if n <= 0:
        return out

    @hseed(seed)
    @settings(
        max_examples=n,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        out.append(value)

    try:
        collect()
    except Exception as err:  # noqa: BLE001 - a strategy that cannot generate: say so, go on
        log(f"generation failed: {type(err).__name__}: {str(err)[:200]}")
    return out[:n]


def edge_variants(
    base: dict[str, Any], keys: list[str], budget: int, offset: int
) -> list[tuple[str, Any]]:
    """Up to ``budget`` (key, edge value) pairs, cycling keys and edge values."""
    pairs: list[tuple[str, Any]] = []
    if not keys:
        return pairs
    i = 0
    while len(pairs) < budget and i < len(keys) * len(EDGE_VALUES):
        key = keys[i % len(keys)]
        value = EDGE_VALUES[(i // len(keys) + offset) % len(EDGE_VALUES)]
        pairs.append((key, value))
        i += 1
    return pairs


# -- part 1: HTTP -------------------------------------------------------------------------------


@dataclass
class Seeded:
    session: str
    moment: str
    thread: str
    ids: dict[str, str]


def seed_server(server: Server) -> Seeded:
    auth = {"Authorization": f"Bearer {server.owner}"}
    with httpx.Client(base_url=server.url, headers=auth, timeout=120) as api:
        sid = api.post("/api/sessions", json={"task": "Plan the Lyon trip"}).json()["id"]
        moments = []
        for text, who in [
            ("Ana is vegetarian and books the 09:04 TGV to Lyon", "Ana"),
            ("We decided to stay near Part-Dieu", "Ben"),
            ("I work at Acme now", "Ana"),
        ]:
            r = api.post(f"/api/sessions/{sid}/moments", json={"text": text, "speaker": who})
            moments.append(r.json()["id"])
        api.post(f"/api/sessions/{sid}/decisions", json={"what": "Take the train", "who": "Ana"})
        api.post(f"/api/sessions/{sid}/pending", json={"what": "Book the hotel"})
        api.post(
            f"/api/sessions/{sid}/escalations",
            json={"to": "planner", "why": "multi-city", "slice": f"{moments[0]}..{moments[-1]}"},
        )
        thread = api.post("/api/chat/sessions", json={"title": "fuzz"})
        thread_id = thread.json().get("id") or thread.json().get("thread_id") or "thread-1"
        api.put(
            f"/api/threads/{thread_id}/notebook/sections/Current State",
            json={"content": "Planning the trip"},
        )
    ids = {
        "session_id": sid,
        "moment_id": moments[0],
        "thread_id": thread_id,
        "pending_id": "p_1",
        "decision_id": "d_1",
        "escalation_id": "e_1",
        "section": "Current State",
        "name": "Ana",
    }
    return Seeded(sid, moments[0], thread_id, ids)


def http_answer(kind_status: int, body: str) -> str:
    if TRACEBACK in body:
        return "traceback"
    if kind_status >= 500:
        return "5xx"
    if 200 <= kind_status < 400:
        return "ok"
    return "refused"


def variant(case: Any, **changes: Any) -> Any:
    """A copy of a schemathesis case with ``changes`` (body, query...)."""
    fields: dict[str, Any] = {
        "path_parameters": dict(case.path_parameters or {}),
        "headers": dict(case.headers or {}),
        "query": dict(case.query or {}),
        "media_type": case.media_type,
    }
    if type(case.body).__name__ != "NotSet":
        fields["body"] = copy.deepcopy(case.body)
    fields.update(changes)
    return case.operation.Case(**fields)


@dataclass
class RawCase:
    """A valid case whose body is replaced by raw bytes sent as application/json."""

    base: Any
    raw: bytes
    what: str

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    @property
    def body(self) -> str:
        return f"<raw: {self.what}, {len(self.raw)} bytes>"


def describe_case(case: Any) -> str:
    body = "" if case.body is None or type(case.body).__name__ == "NotSet" else case.body
    text = json.dumps(body, default=repr, ensure_ascii=True) if body != "" else ""
    if len(text) > 200:
        text = text[:200] + f"...({len(text)} chars)"
    query = json.dumps(case.query, default=repr)[:200] if case.query else ""
    return f"{case.method} {case.formatted_path} query={query} body={text}"


def http_part(server: Server, guest: str, seeded: Seeded, args: argparse.Namespace) -> list[Tally]:
    import requests
    import schemathesis
    from schemathesis import GenerationMode

    doc = httpx.get(f"{server.url}/openapi.json", timeout=60).json()
    schema = schemathesis.openapi.from_dict(doc)
    operations = [r.ok() for r in schema.get_all_operations()]
    operations.sort(
        key=lambda op: bool(DESTRUCTIVE.search(op.path) or op.method.upper() == "DELETE")
    )
    guest_paths = ("/api/slice", "/api/sessions/{session_id}/write-back")
    owner = Tally("HTTP, owner token")
    guest_t = Tally("HTTP, guest token")
    valid = Tally("  of which schema-valid (owner)")
    invalid = Tally("  of which schema-invalid (owner)")
    edges = Tally("  of which edge values (owner)")
    raw_t = Tally("  of which raw bodies (owner)")
    deadline = time.monotonic() + args.http_seconds
    reached = 0

    def send(case: Any, token: str, tallies: list[Tally]) -> None:
        t0 = time.perf_counter()
        request = describe_case(case)
        try:
            # sent with requests ourselves: Case.call drops the Authorization header when
            # schemathesis's mutation touched the security scheme, and here the token is
            # what is under test, never part of the generated input
            auth = {"Authorization": f"Bearer {token}"}
            kwargs = case.as_transport_kwargs(base_url=server.url, headers=auth)
            kwargs["headers"] = {**(kwargs.get("headers") or {}), **auth}
            if isinstance(case, RawCase):
                kwargs.pop("json", None)
                kwargs.pop("files", None)
                kwargs["data"] = case.raw
                kwargs["headers"]["Content-Type"] = "application/json"
            response = requests.request(**kwargs, timeout=args.timeout)
            text = response.content.decode(errors="replace")
            kind = http_answer(response.status_code, text)
            code, answer = str(response.status_code), f"{response.status_code} {text[:300]}"
        except requests.Timeout:
            kind, code, answer = "hang", "timeout", f"no answer in {args.timeout} s"
        except requests.RequestException as err:
            kind, code, answer = "other", "conn", f"{type(err).__name__}: {str(err)[:200]}"
        if os.environ.get("FUZZ_DEBUG") and code == "401":
            log(f"401: {request[:100]} -> {answer[:300]}")
        full = {
            "method": case.method,
            "path": case.formatted_path,
            "query": case.query,
            "headers": dict(case.headers or {}),
            "body": None if type(case.body).__name__ == "NotSet" else case.body,
            "token": "owner" if token == server.owner else "guest",
        }
        for t in tallies:
            t.add(kind, code, request, answer, full)
            t.seconds += time.perf_counter() - t0

    for n, op in enumerate(operations):
        if time.monotonic() > deadline:
            break
        reached += 1
        path_names = [p.name for p in op.path_parameters]
        fixed = {k: seeded.ids[k] for k in path_names if k in seeded.ids}
        cases: list[tuple[Any, Tally]] = []
        half = max(args.examples // 2, 1)
        for mode, tally in ((GenerationMode.POSITIVE, valid), (GenerationMode.NEGATIVE, invalid)):
            if fixed:
                free = draw(op.as_strategy(generation_mode=mode), half - half // 2, 1000 + n)
                pinned = draw(
                    op.as_strategy(generation_mode=mode, path_parameters=fixed), half // 2, 2000 + n
                )
                cases += [(c, tally) for c in free + pinned]
            else:
                cases += [
                    (c, tally) for c in draw(op.as_strategy(generation_mode=mode), half, 1000 + n)
                ]
        # edge values: one field at a time of a valid case with the seeded ids
        bases = draw(
            op.as_strategy(generation_mode=GenerationMode.POSITIVE, path_parameters=fixed or None),
            1,
            3000 + n,
        )
        if bases and args.edges:
            base = bases[0]
            body = base.body if isinstance(base.body, dict) else None
            keys = [f"body.{k}" for k in (body or {})]
            props = (
                (op.definition.raw.get("requestBody") or {})
                .get("content", {})
                .get("application/json", {})
                .get("schema", {})
            )
            if "$ref" in props:
                name = props["$ref"].rsplit("/", 1)[-1]
                props = doc.get("components", {}).get("schemas", {}).get(name, {})
            keys += [f"body.{k}" for k in props.get("properties", {}) if f"body.{k}" not in keys]
            keys += [f"query.{p.name}" for p in op.query]
            for key, value in edge_variants({}, keys, args.edges, n):
                where, name = key.split(".", 1)
                if where == "body":
                    new_body = dict(base.body) if isinstance(base.body, dict) else {}
                    new_body[name] = value
                    case = variant(base, body=new_body, media_type="application/json")
                else:
                    shown = (
                        value if isinstance(value, (str, int, float, bool)) else json.dumps(value)
                    )
                    case = variant(base, query={**(base.query or {}), name: shown})
                cases.append((case, edges))
        if bases and type(bases[0].body).__name__ != "NotSet":
            for what, raw in RAW_BODIES.items():
                cases.append((RawCase(bases[0], raw, what), raw_t))
        for case, tally in cases:
            if time.monotonic() > deadline:
                break
            send(case, server.owner, [owner, tally])
        # the guest: its own operations as the owner's, one valid case of every other one
        if op.path in guest_paths:
            for case, _ in cases:
                if time.monotonic() > deadline:
                    break
                named = isinstance(case.body, dict) and case.body.get("guest") is not None
                if named and n % 2:  # half of them as the token's own name
                    case = variant(case, body={**case.body, "guest": "fuzzer"})
                send(case, guest, [guest_t])
        elif bases:
            send(bases[0], guest, [guest_t])
    owner.note = (
        f"{reached} of {len(operations)} operations reached in the budget; codes "
        + ", ".join(f"{k}: {v}" for k, v in sorted(owner.codes.items()))
    )
    guest_t.note = "codes " + ", ".join(f"{k}: {v}" for k, v in sorted(guest_t.codes.items()))
    return [owner, valid, invalid, edges, raw_t, guest_t]


# -- part 2: MCP --------------------------------------------------------------------------------


def tools_document(tools: list[Any]) -> dict[str, Any]:
    """An OpenAPI 3.1 document with one POST operation per tool, its body the tool's input
    schema (its $defs moved to components), so schemathesis can generate arguments."""
    components: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for tool in tools:
        schema = copy.deepcopy(tool.inputSchema)
        defs = schema.pop("$defs", {})
        prefix = f"{tool.name}__"

        def moved(node: Any, prefix: str = prefix) -> Any:
            if isinstance(node, dict):
                return {
                    k: (
                        v.replace("#/$defs/", f"#/components/schemas/{prefix}")
                        if k == "$ref" and isinstance(v, str)
                        else moved(v)
                    )
                    for k, v in node.items()
                }
            if isinstance(node, list):
                return [moved(x) for x in node]
            return node

        for name, sub in defs.items():
            components[prefix + name] = moved(sub)
        paths[f"/{tool.name}"] = {
            "post": {
                "operationId": tool.name,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": moved(schema)}},
                },
                "responses": {"200": {"description": "ok"}},
            }
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "tools", "version": "1"},
        "paths": paths,
        "components": {"schemas": components},
    }


def mcp_calls(
    tools: list[Any], seeded: Seeded, args: argparse.Namespace, guest: bool
) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, which) for every tool: generated valid and invalid, then edges."""
    import schemathesis
    from schemathesis import GenerationMode

    schema = schemathesis.openapi.from_dict(tools_document(tools))
    by_name = {r.ok().path.lstrip("/"): r.ok() for r in schema.get_all_operations()}
    known = {
        "session_id": seeded.session,
        "thread_id": seeded.thread,
        "pending_id": "p_1",
        "decision_id": "d_1",
        "escalation_id": "e_1",
        "a": seeded.moment,
        "name": "Ana",
    }
    calls: list[tuple[str, dict[str, Any], str]] = []
    half = max(args.examples // 2, 1)
    for n, tool in enumerate(tools):
        op = by_name[tool.name]
        for mode, which in (
            (GenerationMode.POSITIVE, "valid"),
            (GenerationMode.NEGATIVE, "invalid"),
        ):
            for case in draw(op.as_strategy(generation_mode=mode), half, 4000 + n):
                body = case.body
                if not isinstance(body, dict):
                    continue  # call_tool takes an object; anything else never leaves the client
                if which == "valid" and len(calls) % 2:
                    body = {**body, **{k: v for k, v in known.items() if k in body}}
                if guest and tool.name == "write_back" and len(calls) % 2:
                    body = {**body, "guest": "fuzzer"}
                calls.append((tool.name, body, which))
        bases = [
            c.body
            for c in draw(op.as_strategy(generation_mode=GenerationMode.POSITIVE), 1, 5000 + n)
        ]
        base = bases[0] if bases and isinstance(bases[0], dict) else {}
        base = {
            **base,
            **{k: v for k, v in known.items() if k in tool.inputSchema.get("properties", {})},
        }
        keys = list(tool.inputSchema.get("properties", {}))
        for key, value in edge_variants(base, keys, args.edges, n):
            calls.append((tool.name, {**base, key: value}, "edge"))
    return calls


def mcp_part(server: Server, guest: str, seeded: Seeded, args: argparse.Namespace) -> list[Tally]:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.types import TextContent

    rows: list[Tally] = []
    deadline = time.monotonic() + args.mcp_seconds
    for mount, token, label in (
        (("/mcp/", server.owner, "owner")),
        ("/mcp-guest/", guest, "guest"),
    ):
        tally = Tally(f"MCP {mount}, {label} token")
        parts = {w: Tally(f"  of which {w} ({label})") for w in ("valid", "invalid", "edge")}
        rows += [tally, *parts.values()]

        @contextlib.asynccontextmanager
        async def connect(mount: str = mount, token: str = token) -> Any:
            async with (
                create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as client,
                streamable_http_client(f"{server.url}{mount}", http_client=client) as (r, w, _),
                ClientSession(r, w) as session,
            ):
                with anyio.fail_after(args.timeout):
                    await session.initialize()
                yield session

        async def listing(connect: Any = connect) -> list[Any]:
            async with connect() as session:
                return list((await session.list_tools()).tools)

        try:
            tools = anyio.run(listing)
        except Exception as err:  # noqa: BLE001 - reported in the table
            tally.add("traceback", "connect", f"connect {mount}", f"{type(err).__name__}: {err}")
            continue
        calls = mcp_calls(tools, seeded, args, guest=label == "guest")
        tally.note = f"{len(tools)} tools, {len(calls)} calls generated"

        async def run_all(
            calls: list[tuple[str, dict[str, Any], str]] = calls,
            tally: Tally = tally,
            parts: dict[str, Tally] = parts,
            connect: Any = connect,
        ) -> None:
            i = 0
            while i < len(calls) and time.monotonic() < deadline:
                try:
                    async with connect() as session:
                        while i < len(calls) and time.monotonic() < deadline:
                            name, arguments, which = calls[i]
                            i += 1
                            shown = json.dumps(arguments, default=repr, ensure_ascii=True)
                            request = f"{name} {shown[:300]}{f'...({len(shown)} chars)' if len(shown) > 300 else ''}"
                            t0 = time.perf_counter()
                            try:
                                with anyio.fail_after(args.timeout):
                                    result = await session.call_tool(name, arguments)
                            except TimeoutError:
                                for t in (tally, parts[which]):
                                    t.add(
                                        "hang",
                                        "timeout",
                                        request,
                                        f"no answer in {args.timeout} s",
                                        {"tool": name, "arguments": arguments},
                                    )
                                raise
                            except Exception as err:
                                for t in (tally, parts[which]):
                                    t.add(
                                        "traceback",
                                        type(err).__name__,
                                        request,
                                        f"{type(err).__name__}: {str(err)[:300]}",
                                        {"tool": name, "arguments": arguments},
                                    )
                                raise
                            finally:
                                tally.seconds += time.perf_counter() - t0
                            text = " ".join(
                                c.text for c in result.content if isinstance(c, TextContent)
                            )
                            if TRACEBACK in text:
                                kind = "traceback"
                            elif result.isError:
                                kind = "refused"
                            else:
                                kind = "ok"
                            for t in (tally, parts[which]):
                                t.add(
                                    kind,
                                    kind,
                                    request,
                                    text[:300],
                                    {"tool": name, "arguments": arguments},
                                )
                except Exception:  # noqa: BLE001 - the call was counted; reconnect
                    continue

        anyio.run(run_all)
        tally.note += f", {tally.tried} sent in the budget"
    return rows


# -- part 3: the CLI ----------------------------------------------------------------------------


def cli_strategies(seeded_session: str, seeded_moment: str, files: Path) -> Any:
    from hypothesis import strategies as st

    chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
    word = st.text(chars, max_size=30)
    # one argument of argv is at most 128 KiB (MAX_ARG_STRLEN): the 600 KB edge is cut to 100 KB
    plain = st.sampled_from(
        [
            "Ana",
            "Book the train to Lyon",
            "2026-06-07",
            "2026-06-07T10:00Z",
            "10",
            "p_1",
            "d_1",
            "me",
            "30d",
        ]
    )
    arg = st.one_of(
        plain, word, st.sampled_from([s.replace("\x00", "")[:100_000] for s in EDGE_STRINGS])
    )
    session = st.one_of(st.just(seeded_session), arg)
    number = st.one_of(st.integers(), st.integers(-3, 300000).map(str), st.just("1e308"), word).map(
        str
    )
    scalar = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        word,
        st.sampled_from(EDGE_VALUES[:12]),
    )
    wild = st.recursive(
        scalar,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(word, inner, max_size=4),
        max_leaves=12,
    )
    draft_keys = [
        "text",
        "role",
        "speaker",
        "timestamp",
        "importance",
        "concepts",
        "retrieval_keys",
        "actions",
        "parent",
        "source_id",
        "session",
        "pinned",
        "decay_rate",
    ]
    draft = st.fixed_dictionaries(
        {"text": st.one_of(word, arg)},
        optional={
            k: st.one_of(wild, st.sampled_from(EDGE_VALUES)) for k in draft_keys if k != "text"
        },
    )
    json_stdin = st.one_of(draft, st.lists(draft, max_size=4), wild).map(
        lambda v: json.dumps(v, default=str).encode()
    )
    stdin = st.one_of(json_stdin, st.binary(max_size=200))

    def opt(name: str, value: Any) -> Any:
        return st.one_of(st.just([]), value.map(lambda v: [name, v]))

    def cmd(*parts: Any) -> Any:
        return st.tuples(*parts).map(
            lambda ps: [x for p in ps for x in (p if isinstance(p, list) else [p])]
        )

    message = st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system", "tool", "x"]) | wild},
        optional={
            "content": wild | word,
            "timestamp": wild | st.sampled_from(EDGE_STRINGS),
            "speaker": wild,
            "id": wild,
        },
    )
    ingest_body = st.one_of(
        st.lists(message, max_size=5).map(lambda v: json.dumps(v, default=str).encode()),
        st.lists(message, max_size=5).map(
            lambda v: "\n".join(json.dumps(m, default=str) for m in v).encode()
        ),
        st.just(b'[{"role": "user", "content": "hi", "timestamp": ' + b"9" * 5001 + b"}]"),
        st.binary(max_size=300),
        wild.map(lambda v: json.dumps(v, default=str).encode()),
    )
    ingest_name = st.sampled_from(["chat.json", "chat.jsonl", "locomo.json", "noext"])
    yaml_doc = wild.map(lambda v: yaml.safe_dump(v).encode())
    imports = st.tuples(yaml_doc, yaml_doc, yaml_doc)
    return st.one_of(
        cmd(
            st.just(["record"]),
            st.one_of(opt("--session", session), opt("--task", arg)),
            st.just(["--format", "json"]),
        )
        .map(lambda a: (a, None))
        .flatmap(lambda t: stdin.map(lambda s: (t[0], s, None))),
        st.tuples(
            ingest_name,
            ingest_body,
            opt(
                "--source-format",
                st.sampled_from(["messages-json", "messages-jsonl", "locomo", "nope"]),
            ),
        ).map(lambda t: (["ingest", f"@FILE/{t[0]}", *t[2]], b"", ("file", t[0], t[1]))),
        imports.map(lambda t: (["import", "@DIR"], b"", ("dir", t))),
        cmd(
            st.just(["search"]),
            arg,
            opt("--since", arg),
            opt("--until", arg),
            opt("--limit", number),
            opt("--mode", st.sampled_from(["hybrid", "lexical", "vector", "x"])),
            opt("--speaker", arg),
            opt("--concept", arg),
            opt("--session", session),
        ).map(lambda a: (a, b"", None)),
        cmd(
            st.just(["slice"]),
            arg,
            opt("--budget", number),
            opt("--audience", arg),
            opt("--session", session),
        ).map(lambda a: (a, b"", None)),
        cmd(st.just(["show"]), session).map(lambda a: (a, b"", None)),
        cmd(st.just(["moments"]), session, opt("--offset", number), opt("--limit", number)).map(
            lambda a: (a, b"", None)
        ),
        cmd(st.just(["decide"]), session, arg, opt("--why", arg), opt("--who", arg)).map(
            lambda a: (a, b"", None)
        ),
        cmd(st.just(["add-pending"]), session, arg).map(lambda a: (a, b"", None)),
        cmd(
            st.just(["close-pending"]),
            session,
            st.one_of(st.just("p_1"), arg),
            opt("--resolution", arg),
        ).map(lambda a: (a, b"", None)),
        cmd(
            st.just(["edit-decision"]),
            session,
            st.one_of(st.just("d_1"), arg),
            opt("--what", arg),
            opt("--why", arg),
            opt("--who", arg),
        ).map(lambda a: (a, b"", None)),
        cmd(st.just(["about"]), arg, opt("--as-of", arg)).map(lambda a: (a, b"", None)),
        cmd(st.just(["notebook", "set"]), arg, st.one_of(st.just("Current State"), arg))
        .map(lambda a: (a, b"", None))
        .flatmap(lambda t: stdin.map(lambda s: (t[0], s, None))),
        cmd(
            st.just(["redact"]), st.one_of(st.just(seeded_moment), arg), st.just("--reason"), arg
        ).map(lambda a: (a, b"", None)),
        cmd(
            st.just(["forget"]),
            arg,
            st.just(["--dry-run"]),
            opt("--older-than", arg),
            opt("--keep-top", number),
        ).map(lambda a: (a, b"", None)),
    )


def cli_part(tree: Tree, tmp: Path, args: argparse.Namespace) -> list[Tally]:
    home = tmp / "cli-home"
    make_home(tree, home)
    first = tree.cli(
        "record",
        "--home",
        str(home),
        "--task",
        "Plan the Lyon trip",
        "--format",
        "json",
        stdin=json.dumps(
            [{"text": "Ana books the train", "speaker": "Ana"}, {"text": "Ben agrees"}]
        ).encode(),
    )
    moments = json.loads(first.stdout)
    sid, mid = moments[0]["session"], moments[0]["id"]
    tree.cli("decide", sid, "Take the train", "--home", str(home))
    tree.cli("add-pending", sid, "Book the hotel", "--home", str(home))
    files = tmp / "cli-files"
    cases = draw(cli_strategies(sid, mid, files), args.cli_runs, 6000)
    tally = Tally("CLI processes")
    by_command: dict[str, Tally] = {}
    deadline = time.monotonic() + args.cli_seconds
    for i, (argv, stdin, extra) in enumerate(cases):
        if time.monotonic() > deadline:
            break
        work = tmp / "cli-runs" / str(i)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        argv = list(argv)
        if extra and extra[0] == "file":
            path = work / extra[1]
            path.write_bytes(extra[2])
            argv = [str(path) if a.startswith("@FILE/") else a for a in argv]
        elif extra and extra[0] == "dir":
            src = work / "export"
            moment_dir = src / "sessions" / "s_2026-01-01_001" / "moments"
            moment_dir.mkdir(parents=True)
            (src / "index.yaml").write_bytes(extra[1][0])
            (src / "sessions" / "s_2026-01-01_001.yaml").write_bytes(extra[1][1])
            (moment_dir / "m_1.yaml").write_bytes(extra[1][2])
            argv = [str(src) if a == "@DIR" else a for a in argv]
        argv = [a.replace("\x00", "") for a in argv]
        full = [*argv, "--home", str(home)]
        done = run_child(tree, full, stdin or b"", args.timeout, work)
        kind, code = classify_cli(done)
        shown = " ".join(json.dumps(a)[:80] for a in argv)
        request = f"agent-notebook {shown} stdin={stdin[:120]!r}{'...' if stdin and len(stdin) > 120 else ''}"
        if extra and extra[0] == "file":
            request += f" file={extra[2][:160]!r}"
        if extra and extra[0] == "dir":
            request += f" index.yaml={extra[1][0][:80]!r} session={extra[1][1][:80]!r} m_1={extra[1][2][:80]!r}"
        answer = f"exit {code}: {last_line(done.stderr) or last_line(done.stdout)}"
        if os.environ.get("FUZZ_DEBUG"):
            log(f"{request[:150]} -> {answer[:200]}")
        name = argv[0] if argv[0] != "notebook" else "notebook set"
        sub = by_command.setdefault(name, Tally(f"  {name}"))
        full = {"argv": argv, "stdin": stdin or b"", "extra": extra, "stderr": done.stderr[-4000:]}
        for t in (tally, sub):
            t.add(kind, code, request, answer, full)
            t.seconds += done.seconds
        shutil.rmtree(work, ignore_errors=True)
    tally.note = (
        f"{tally.tried} of {len(cases)} generated runs in the budget; exit codes "
        + ", ".join(f"{k}: {v}" for k, v in sorted(tally.codes.items()))
    )
    return [tally, *sorted(by_command.values(), key=lambda t: t.name)]


# -- part 4: hand-made YAML exports -------------------------------------------------------------


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        refs = ",".join([f"*a{i - 1}"] * width)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


def yaml_cases(template: Path) -> dict[str, Callable[[Path], None]]:
    """Each bad export: a function that spoils a copy of ``template`` (a good export)."""
    moment = next(template.glob("sessions/*/moments/m_1.yaml")).relative_to(template)
    session = next(template.glob("sessions/*.yaml")).relative_to(template)
    media = next(template.glob("media/*/*")).relative_to(template)
    bomb = alias_bomb()

    def edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
        data = yaml.safe_load(path.read_text())
        change(data)
        path.write_text(yaml.safe_dump(data, allow_unicode=True, width=10**9))

    def set_in(rel: Path, dotted: str, value: Any) -> Callable[[Path], None]:
        def go(root: Path) -> None:
            def change(data: dict[str, Any]) -> None:
                node = data
                *parents, last = dotted.split(".")
                for p in parents:
                    node = node[p]
                node[last] = value

            edit(root / rel, change)

        return go

    def text_of(size: int) -> Callable[[Path], None]:
        return set_in(moment, "content.text", "x" * size)

    def bomb_in(rel: Path) -> Callable[[Path], None]:
        def go(root: Path) -> None:
            (root / rel).write_text(
                (root / rel).read_text()
                + "bomb:\n"
                + "".join("  " + x + "\n" for x in bomb.splitlines())
            )

        return go

    def raw(rel: Path, text: str) -> Callable[[Path], None]:
        return lambda root: (root / rel).write_text(text)

    def symlink_media(root: Path) -> None:
        target = root.parent / f"{root.name}-outside.bin"
        shutil.copy(root / media, target)  # same bytes: only the link gives it away
        (root / media).unlink()
        (root / media).symlink_to(target)

    def symlink_dir(root: Path) -> None:
        outside = root.parent / f"{root.name}-outside-media"
        shutil.move(str(root / "media"), outside)
        (root / "media").symlink_to(outside)

    def no_counters(root: Path) -> None:
        edit(root / "index.yaml", lambda d: d.pop("counters", None))

    def renamed(root: Path) -> None:
        (root / moment).rename((root / moment).with_name("m_999.yaml"))

    def deep(root: Path) -> None:
        (root / moment).write_text(
            (root / moment).read_text() + "deep: " + "[" * 100_000 + "]" * 100_000 + "\n"
        )

    def actions_deep(root: Path) -> None:
        node: Any = {"type": "x"}
        for _ in range(200):
            node = {"type": "x", "args": node}
        set_in(moment, "actions", [node])(root)

    def bomb_in_result(root: Path) -> None:
        # anchors and aliases inside a value the model walks (an action's JSON result)
        inner = "".join("      " + x + "\n" for x in bomb.splitlines())
        text = (
            (root / moment)
            .read_text()
            .replace("actions: []", "actions:\n- tool: t\n  result:\n" + inner, 1)
        )
        (root / moment).write_text(text)

    return {
        "alias bomb in an action's result": bomb_in_result,
        "alias bomb in a moment file": bomb_in(moment),
        "alias bomb in a session file": bomb_in(session),
        "alias bomb in index.yaml": bomb_in(Path("index.yaml")),
        "one alias (not a bomb) in a moment": lambda root: (root / moment).write_text(
            (root / moment).read_text() + "extra: &x [1]\nagain: *x\n"
        ),
        "index.yaml without counters": no_counters,
        "a 26-digit counter": set_in(Path("index.yaml"), "counters.moment", 10**25),
        "a counter of 5,001 digits": lambda root: (root / "index.yaml").write_text(
            (root / "index.yaml")
            .read_text()
            .replace("moment: ", "moment: " + "9" * 5001 + "0*", 1)
            .replace("0*", "", 1)
        ),
        "a negative counter": set_in(Path("index.yaml"), "counters.moment", -5),
        "index.yaml a list": raw(Path("index.yaml"), "- 1\n- 2\n"),
        "index.yaml empty": raw(Path("index.yaml"), ""),
        "a moment text of 2 MiB": text_of(2 * MIB),
        "a moment text of 20 MiB": text_of(20 * MIB),
        "importance of 5,001 digits": lambda root: (root / moment).write_text(
            re.sub(r"importance: .*", "importance: " + "9" * 5001, (root / moment).read_text())
        ),
        "importance 1e308": set_in(moment, "metadata.importance", 1e308),
        "text a number": set_in(moment, "content.text", 12345),
        "timestamp 'yesterday'": set_in(moment, "timestamp", "yesterday"),
        "timestamp 9999-12-31T23:59:59-14:00": set_in(
            moment, "timestamp", "9999-12-31T23:59:59-14:00"
        ),
        "concepts a mapping": set_in(moment, "metadata.concepts", {"a": 1}),
        "session task a list": set_in(session, "task", ["a", "b"]),
        "session decisions a string": set_in(session, "decisions", "all of them"),
        "moment id ../../escape": set_in(moment, "id", "../../escape"),
        "moment file named for another id": renamed,
        "nesting 100,000 deep": deep,
        "actions nested 200 deep": actions_deep,
        "a python/object tag": lambda root: (root / moment).write_text(
            (root / moment).read_text() + "evil: !!python/object/apply:os.system ['true']\n"
        ),
        "a duplicate key": lambda root: (root / moment).write_text(
            (root / moment).read_text() + "id: m_77\n"
        ),
        "not UTF-8": lambda root: (root / moment).write_bytes(
            b"\xff\xfe" + (root / moment).read_bytes()
        ),
        "a symbolic link in media/": symlink_media,
        "media/ a symbolic link": symlink_dir,
        "image_path outside media": set_in(moment, "image_path", "../../../etc/hostname"),
    }


def yaml_part(tree: Tree, tmp: Path, args: argparse.Namespace) -> tuple[list[Tally], list[str]]:
    from PIL import Image

    source = tmp / "yaml-source"
    make_home(tree, source)
    image = tmp / "red.png"
    Image.new("RGB", (32, 32), (200, 10, 10)).save(image)
    first = tree.cli(
        "record",
        "--home",
        str(source),
        "--task",
        "Trip",
        "--format",
        "json",
        stdin=json.dumps({"text": "Ana books the train to Lyon", "speaker": "Ana"}).encode(),
    )
    sid = json.loads(first.stdout)[0]["session"]
    tree.cli(
        "record",
        "--home",
        str(source),
        "--session",
        sid,
        "--image",
        str(image),
        stdin=json.dumps({"text": "a red square"}).encode(),
    )
    tree.cli("decide", sid, "Take the train", "--home", str(source))
    template = tmp / "yaml-template"
    tree.cli("export", "--to", "yaml", str(template), "--home", str(source))
    empty = tmp / "yaml-empty-home"
    make_home(tree, empty)
    tally = Tally("YAML imports (bad exports)")
    control = Tally("  the good export (control)")
    lines = [
        "| export | exit | s | peak RSS MiB | imported? | what it said |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    cases: dict[str, Callable[[Path], None] | None] = {
        "the good export": None,
        **yaml_cases(template),
    }
    cap = int(args.import_mem_gib * 1024**3)
    for i, (name, spoil) in enumerate(cases.items()):
        root = tmp / "yaml-cases" / str(i) / "export"
        root.parent.mkdir(parents=True)
        shutil.copytree(template, root, symlinks=True)
        try:
            if spoil:
                spoil(root)
        except Exception as err:  # noqa: BLE001 - a case that cannot be made: say so
            lines.append(f"| {name} | - | - | - | - | could not make it: {err} |")
            continue
        home = tmp / "yaml-cases" / str(i) / "home"
        shutil.copytree(empty, home)
        done = run_child(
            tree,
            ["import", str(root), "--home", str(home)],
            b"",
            args.import_timeout,
            root.parent / "run",
            mem_cap=cap,
        )
        kind, code = classify_cli(done)
        said = (last_line(done.stderr) or last_line(done.stdout)).replace(str(root), "<export>")
        if done.code is not None and done.code < 0:
            said = f"killed by signal {-done.code} ({signal.Signals(-done.code).name})"
        if done.code is None:
            said = f"killed after {args.import_timeout:.0f} s"
        elif kind == "traceback":
            said = "traceback: " + said
        imported = "yes" if done.code == 0 else "no"
        t = control if spoil is None else tally
        t.add(kind, code, f"import '{name}'", f"exit {code}: {said}")
        t.seconds += done.seconds
        if spoil is not None and done.code == 0:
            t.found.append(("accepted", f"import '{name}'", said))
        lines.append(
            f"| {name} | {code} | {done.seconds:.1f} | {done.max_rss_kib / 1024:.0f} | {imported} | {said[:110].replace('|', '/')} |"
        )
        shutil.rmtree(root.parent, ignore_errors=True)
    accepted = sum(1 for k, *_ in tally.found if k == "accepted")
    tally.note = f"{accepted} of {len(cases) - 1} bad exports imported (exit 0); address space capped at {args.import_mem_gib:g} GiB, {args.import_timeout:.0f} s each"
    return [tally, control], lines


# -- part 5: peak memory under maximal requests -------------------------------------------------


def memory_part(tree: Tree, tmp: Path, args: argparse.Namespace) -> list[str]:
    home = tmp / "memory-home"
    _, guest = make_home(tree, home)
    server = Server(tree, home, tmp / "memory-serve.log")
    out: list[str] = []
    try:
        auth = {"Authorization": f"Bearer {server.owner}"}
        gauth = {"Authorization": f"Bearer {guest}"}
        with httpx.Client(base_url=server.url, timeout=300) as api:
            sid = api.post("/api/sessions", json={"task": "memory"}, headers=auth).json()["id"]
            api.post(f"/api/sessions/{sid}/moments", json={"text": "warm up"}, headers=auth)
            api.post(
                f"/api/sessions/{sid}/write-back",
                json={"guest": "fuzzer", "kind": "decision", "text": "warm up"},
                headers=gauth,
            )
            over = api.post(
                f"/api/sessions/{sid}/moments",
                content=b'{"text": "' + b"x" * BODY_LIMIT + b'"}',
                headers={**auth, "Content-Type": "application/json"},
            )
        idle = server.status("VmHWM")
        out.append(
            f"body limit {BODY_LIMIT:,} bytes (a body one over it: {over.status_code}); "
            f"server VmHWM idle after a warm-up {idle / 1024:.0f} MiB, VmRSS {server.status('VmRSS') / 1024:.0f} MiB"
        )
        text_wb = "w" * (BODY_LIMIT - 4096)
        batch = {"moments": [{"text": "m" * (MAX_TEXT_BYTES - 1024)} for _ in range(6)]}
        batch_bytes = len(json.dumps(batch))
        out.append(
            f"each wave: 20 parallel requests, 10 guest write-backs of {len(text_wb):,} bytes of text "
            f"and 10 owner batches of 6 moments at the text limit ({batch_bytes:,} bytes)"
        )
        out.append(
            "| wave | wall s | statuses | VmHWM MiB | VmRSS MiB after | session record bytes |"
        )
        out.append("| --- | --- | --- | --- | --- | --- |")
        out.append(
            f"| idle | - | - | {idle / 1024:.0f} | {server.status('VmRSS') / 1024:.0f} | - |"
        )
        notes: list[str] = []
        for wave in range(1, args.waves + 1):
            statuses: Counter[str] = Counter()
            refusals: dict[str, str] = {}
            lock = threading.Lock()
            barrier = threading.Barrier(21)

            def one(
                k: int,
                barrier: threading.Barrier = barrier,
                lock: threading.Lock = lock,
                refusals: dict[str, str] = refusals,
                statuses: Counter[str] = statuses,
            ) -> None:
                with httpx.Client(base_url=server.url, timeout=args.timeout * 10) as c:
                    barrier.wait()
                    try:
                        if k % 2:
                            r = c.post(
                                f"/api/sessions/{sid}/write-back",
                                json={"guest": "fuzzer", "kind": "decision", "text": text_wb},
                                headers=gauth,
                            )
                            what = f"write-back {r.status_code}"
                        else:
                            r = c.post(
                                f"/api/sessions/{sid}/moments/batch", json=batch, headers=auth
                            )
                            what = f"batch {r.status_code}"
                    except httpx.HTTPError as err:
                        what = f"{type(err).__name__}"
                    else:
                        if r.status_code >= 300:
                            with lock:
                                refusals.setdefault(what, r.text[:240])
                    with lock:
                        statuses[what] += 1

            threads = [threading.Thread(target=one, args=(k,)) for k in range(20)]
            for t in threads:
                t.start()
            barrier.wait()
            t0 = time.perf_counter()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
            with httpx.Client(base_url=server.url, timeout=300, headers=auth) as api:
                size = len(api.get(f"/api/sessions/{sid}").content)
            out.append(
                f"| {wave} | {wall:.1f} | {', '.join(f'{k} x{v}' for k, v in sorted(statuses.items()))} | "
                f"{server.status('VmHWM') / 1024:.0f} | {server.status('VmRSS') / 1024:.0f} | {size:,} |"
            )
            log(out[-1])
            notes += [f"wave {wave}, {k}: {v}" for k, v in refusals.items()]
        out += notes
        out.append(f"notebook.db after: {(home / 'notebook.db').stat().st_size / MIB:.0f} MiB")
    finally:
        server.stop()
    return out


# -- the run ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, required=True, help="the source tree to run (its src/)")
    parser.add_argument(
        "--examples", type=int, default=8, help="generated cases per operation/tool"
    )
    parser.add_argument("--edges", type=int, default=12, help="edge-value cases per operation/tool")
    parser.add_argument("--http-seconds", type=float, default=150)
    parser.add_argument("--mcp-seconds", type=float, default=90)
    parser.add_argument("--cli-seconds", type=float, default=90)
    parser.add_argument("--cli-runs", type=int, default=150)
    parser.add_argument(
        "--timeout", type=float, default=30, help="a hang: no answer in this many s"
    )
    parser.add_argument("--import-timeout", type=float, default=60)
    parser.add_argument("--import-mem-gib", type=float, default=4)
    parser.add_argument("--waves", type=int, default=2)
    parser.add_argument("--show", type=int, default=8, help="findings listed per kind and front")
    parser.add_argument("--only", default="http,mcp,cli,yaml,memory")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--findings",
        type=Path,
        default=Path(__file__).parent / "out" / f"fuzz-{time.strftime('%Y%m%d-%H%M%S')}",
        help="where each finding's whole input is written, one JSON file each",
    )
    args = parser.parse_args()
    global FINDINGS
    FINDINGS = args.findings
    parts = set(args.only.split(","))
    tree = Tree(args.src.resolve())
    started = time.perf_counter()
    load_start = load()
    check = subprocess.run(
        [sys.executable, "-c", "import agent_notebook; print(agent_notebook.__file__)"],
        env=tree.env,
        capture_output=True,
        text=True,
    )
    print(f"fuzz_fronts on {tree.describe()}")
    print(
        f"agent_notebook imported from {check.stdout.strip()}; load average at start {load_start}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="agent-notebook-fuzz-"))
    rows: list[Tally] = []
    extra: list[str] = []
    memory: list[str] = []
    try:
        if parts & {"http", "mcp"}:
            home = tmp / "serve-home"
            _, guest = make_home(tree, home)
            server = Server(tree, home, tmp / "serve.log")
            try:
                seeded = seed_server(server)
                if "http" in parts:
                    log(f"http: start (load {load()})")
                    rows += http_part(server, guest, seeded, args)
                    tbs = server.tracebacks()
                    rows[0].note += f"; server log tracebacks so far {len(tbs)}"
                    extra += [
                        f"  server log after HTTP: {n} x {line}" for line, n in Counter(tbs).items()
                    ]
                if "mcp" in parts:
                    log(f"mcp: start (load {load()})")
                    before = len(server.tracebacks())
                    rows += mcp_part(server, guest, seeded, args)
                    tbs = server.tracebacks()[before:]
                    extra += [
                        f"  server log after MCP: {n} x {line}" for line, n in Counter(tbs).items()
                    ]
                    extra.append(f"  server log tracebacks during MCP: {len(tbs)}")
            finally:
                server.stop()
        if "cli" in parts:
            log(f"cli: start (load {load()})")
            rows += cli_part(tree, tmp, args)
        yaml_lines: list[str] = []
        if "yaml" in parts:
            log(f"yaml: start (load {load()})")
            found, yaml_lines = yaml_part(tree, tmp, args)
            rows += found
        if "memory" in parts:
            log(f"memory: start (load {load()})")
            memory = memory_part(tree, tmp, args)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print_table(
        f"== fuzzing {tree.describe()} (load at start {load_start}, at end {load()}; "
        f"{time.perf_counter() - started:.0f} s)",
        rows,
        "\n".join(extra),
    )
    if yaml_lines:
        print("\n== each bad export imported into a fresh home")
        print("\n".join(yaml_lines))
    if memory:
        print("\n== the server's memory under 20 parallel maximal requests")
        print("\n".join(memory))
    print("\n== findings (5xx, tracebacks, hangs, other exits, bad exports imported)")
    print_found(rows, args.show)
    if FINDINGS and FINDINGS.exists():
        print(f"each finding's whole input: {FINDINGS}/")
    print(f"\nload average at end {load()}; total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
