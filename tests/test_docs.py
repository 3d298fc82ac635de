"""The README is the front door: its commands run, and every command is documented."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import typer

from agent_notebook.cli import app
from waiting import HANG_GUARD_S, wait_until

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent


def bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README, flags=re.S)


def run(command: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENT_NOTEBOOK_HOME": str(home), "PATH": f"{BIN}:{os.environ['PATH']}"}
    return subprocess.run(
        command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    return tmp_path


def test_quickstart_has_exactly_two_commands_and_ci_runs_the_second() -> None:
    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", quickstart, flags=re.S)
    assert len(commands) == 2 and all("\n" not in c for c in commands)
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


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


def test_every_command_line_example_in_the_readme_runs(workdir: Path) -> None:
    block = next(b for b in bash_blocks() if "agent-notebook stats" in b)
    home = workdir / "home"
    for line in block.strip().splitlines():
        command = line.split("  #", 1)[0].strip()
        result = run(command, workdir, home)
        assert result.returncode == 0, f"{command}\n{result.stderr}"
        assert result.stdout.strip(), f"{command} printed no data"


def test_every_command_has_help_with_an_example_and_is_in_the_readme() -> None:
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
    assert {"notebook show", "notebook set", "ingest", "search"} <= {n for n, _ in listed}
    for name, help_text in listed:
        assert re.search(r"Example: .*agent-notebook ", help_text), f"'{name}' has no example"
        assert f"agent-notebook {name}" in README, f"README does not document '{name}'"


@pytest.mark.parametrize("index", range(len(re.findall(r"```python\n", README))))
def test_python_examples_in_the_readme_run(index: int, tmp_path: Path) -> None:
    code = re.findall(r"```python\n(.*?)```", README, flags=re.S)[index]
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
