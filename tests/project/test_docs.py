"""The README is the front door and docs/ holds the rest: the commands and examples of both
run, and every command is documented in one of them."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import typer

from agent_notebook.cli import app
from tests.support import clirun
from tests.support.docs_text import DOCS, ROOT, blocks, read
from tests.support.waiting import HANG_GUARD_S, wait_until

README = read("README.md")
BIN = Path(sys.executable).parent

#: The ```bash blocks that are shown, not run here, each with the reason; every other block
#: of the README and docs/ runs line by line in a fresh home. Each key matches one block.
SHOWN_NOT_RUN = {
    "agent-notebook serve\n": "the Quickstart's main job: test_quickstart_main_job_runs",
    ".venv/bin/python -m pytest\n": "the Quickstart's test command: what CI runs (.ci/run)",
    "pip install 'agent-notebook[postgres]'": "installs a package and needs a PostgreSQL server",
    "bench/record_latency.py": "the benchmarks take minutes each; bench/ measures speed",
    "-n 0 tests/cli/test_cli.py": "the suite and its tooling: the suite itself",
}


def bash_blocks() -> list[str]:
    """The README's ```bash blocks (the Quickstart's are its first two)."""
    return [code for _, code in blocks("bash", "README.md")]


def runnable_bash_blocks() -> list[tuple[str, str]]:
    return [
        (page, code)
        for page, code in blocks("bash")
        if not any(key in code for key in SHOWN_NOT_RUN)
    ]


def run(command: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENT_NOTEBOOK_HOME": str(home), "PATH": f"{BIN}:{os.environ['PATH']}"}
    return subprocess.run(
        command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


#: What only a shell reads: a line holding one runs in a shell.
SHELL_SYNTAX = set("|&;<>$`*?~")


def run_line(command: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """One line of a docs example as the user's shell runs it. A plain ``agent-notebook ...``
    line runs in this process (the real entry point, through ``clirun``: the same command
    without a new Python's ~2 s of imports per line); a line the shell must read (a pipe, a
    redirection, a substitution, another program) runs in a shell."""
    words = [] if SHELL_SYNTAX & set(command) else shlex.split(command)
    if words[:1] != ["agent-notebook"]:
        return run(command, cwd, home)
    with contextlib.chdir(cwd):  # its relative paths are the example's
        done = clirun.run(words[1:], env={"AGENT_NOTEBOOK_HOME": str(home)})
    return clirun.as_text(done)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    return tmp_path


def test_quickstart_has_exactly_two_commands_and_ci_runs_the_second() -> None:
    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", quickstart, flags=re.S)
    assert len(commands) == 2 and all("\n" not in c for c in commands)
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.slow
def test_quickstart_main_job_runs(workdir: Path) -> None:
    """The main job sets up, loads the example and serves it; the README's curl finds it."""
    main_job = bash_blocks()[0].strip()
    setup = ("python3 -m venv", ".venv/bin/pip install")
    steps = [s for s in main_job.split(" && ") if not s.startswith(setup)]
    steps = [s.replace(".venv/bin/", "") for s in steps]
    assert steps[0] == "agent-notebook init" and steps[-1] == "agent-notebook serve"
    home = workdir / "home"
    result = run(" && ".join(steps[:-1]), workdir, home)
    assert result.returncode == 0, result.stderr
    curl = re.search(
        r"`curl -H \"Authorization: Bearer \$\(cat ~/\.agent-notebook/secrets/owner-token\)\" "
        r"'(http://127\.0\.0\.1:8765/[^']+)'`",
        README,
    )
    assert curl is not None, "the Quickstart shows how to query the server, with the token"
    token = (home / "secrets" / "owner-token").read_text().strip()  # as the curl's $(cat …)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "AGENT_NOTEBOOK_HOME": str(home), "PATH": f"{BIN}:{os.environ['PATH']}"}
    server = subprocess.Popen(
        [*steps[-1].split(), "--port", str(port)],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = curl.group(1).replace(":8765/", f":{port}/")
    answers: list[str] = []

    def answered() -> bool:
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(request, timeout=HANG_GUARD_S) as response:
                answers.append(response.read().decode())
        except OSError:
            return False
        return True

    try:
        up = wait_until(answered, "the Quickstart's server", alive=lambda: server.poll() is None)
        assert up, server.communicate()[1]
        assert "Lyon" in answers[0]  # the search found the trip
    finally:
        server.terminate()
        server.communicate(timeout=HANG_GUARD_S)  # waits, and closes the pipe


def test_every_bash_block_is_run_or_says_why_not() -> None:
    every = blocks("bash")
    for key in SHOWN_NOT_RUN:
        assert sum(key in code for _, code in every) == 1, f"no one block shows {key!r}"
    runnable = runnable_bash_blocks()
    assert any("agent-notebook stats" in code for _, code in runnable)
    assert runnable[0][0] == "README.md"  # the tour's commands run


@pytest.mark.slow
@pytest.mark.parametrize(
    "index",
    range(len(runnable_bash_blocks())),
    ids=[f"{page}-{i}" for i, (page, _) in enumerate(runnable_bash_blocks())],
)
def test_every_command_line_example_in_the_docs_runs(index: int, workdir: Path) -> None:
    page, block = runnable_bash_blocks()[index]
    home = workdir / "home"
    for line in block.strip().splitlines():
        command = line.split("  #", 1)[0].strip()
        result = run_line(command, workdir, home)
        assert result.returncode == 0, f"{page}: {command}\n{result.stderr}"
        assert result.stdout.strip(), f"{page}: {command} printed no data"


def test_every_command_has_help_with_an_example_and_is_documented() -> None:
    def commands(group: typer.core.TyperGroup, prefix: str) -> list[tuple[str, str]]:
        found = []
        for name, command in group.commands.items():
            if isinstance(command, typer.core.TyperGroup):
                found += commands(command, f"{prefix}{name} ")
            else:
                found.append((f"{prefix}{name}", command.help or ""))
        return found

    root = typer.main.get_command(app)
    assert isinstance(root, typer.core.TyperGroup)
    listed = commands(root, "")
    # in the prose of the README or docs/, not only in the reference generated from the help
    documented = "\n".join(
        path.read_text(encoding="utf-8") for path in DOCS if path.name != "cli-reference.md"
    )
    assert {"notebook show", "notebook set", "ingest", "search"} <= {n for n, _ in listed}
    for name, help_text in listed:
        assert re.search(r"Example: .*agent-notebook ", help_text), f"'{name}' has no example"
        assert f"agent-notebook {name}" in documented, f"neither README nor docs/ has '{name}'"


def test_the_cli_reference_is_the_commands_help() -> None:
    from agent_notebook.cli.reference import reference

    assert read("docs/cli-reference.md") == reference(), (
        "docs/cli-reference.md is stale: python -m agent_notebook.cli.reference > "
        "docs/cli-reference.md"
    )


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_between_the_pages_lead_somewhere() -> None:
    """The README and docs/ link to each other, to their sections and to the screenshots."""
    checked = 0
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            file, _, anchor = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            assert linked.exists(), f"{path.name} links to {target}, which is not there"
            if anchor:
                headings = re.findall(r"^#+ (.*)$", linked.read_text(encoding="utf-8"), re.M)
                assert anchor in {slug(h) for h in headings}, f"{path.name}: no #{anchor}"
            checked += 1
    assert checked > 20 and (ROOT / "docs" / "README.md") in DOCS


@pytest.mark.parametrize(
    "index",
    range(len(blocks("python"))),
    ids=[f"{page}-{i}" for i, (page, _) in enumerate(blocks("python"))],
)
@pytest.mark.slow
def test_python_examples_in_the_docs_run(index: int, tmp_path: Path) -> None:
    code = blocks("python")[index][1]
    # every /tmp home in an example gets a fresh one: a file left there by an earlier run
    # (or an older schema) must not decide the result
    code = re.sub(r"/tmp/([\w-]+)", lambda m: str(tmp_path / m.group(1)), code)
    with socket.socket() as s:  # 8765 may be taken here (a server of the user's, say)
        s.bind(("127.0.0.1", 0))
        code = code.replace(":8765", f":{s.getsockname()[1]}").replace(
            "port=8765", f"port={s.getsockname()[1]}"
        )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
