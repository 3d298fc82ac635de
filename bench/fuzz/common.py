"""What the fronts share: counting, processes, the server, generating with hypothesis."""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

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
