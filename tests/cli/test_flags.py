"""Options a new user reaches for: --version, --home and --format before the command,
flags that take no value, help texts shown whole, --format on every command that prints."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_notebook import Notebook, __version__
from agent_notebook.cli import app


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """The command in this process: exit code, stdout, stderr (wide, without colour)."""
    runner = CliRunner(env={"AGENT_NOTEBOOK_HOME": None, "COLUMNS": "200", **(env or {})})
    result = runner.invoke(app, list(args), prog_name="agent-notebook")
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "nb"
    with Notebook.open(root, background_embedding=False) as nb:
        session = nb.start_session("Plan the trip")
        nb.record(session.id, "Book the train to Lyon for 7 June", role="user")
    return root


def test_version() -> None:
    code, out, _ = run("--version")
    assert (code, out) == (0, f"agent-notebook {__version__}\n")


def test_home_and_format_before_the_command(home: Path, tmp_path: Path) -> None:
    code, out, err = run("--home", str(home), "--format", "json", "stats")
    assert code == 0, err
    assert json.loads(out)["moments"] == 1
    # before the command, it wins over the environment
    elsewhere = {"AGENT_NOTEBOOK_HOME": str(tmp_path / "missing")}
    code, out, err = run("--home", str(home), "-f", "json", "sessions", env=elsewhere)
    assert code == 0, err
    assert [s["task"] for s in json.loads(out)] == ["Plan the trip"]
    # the command's own options win over those before it
    code, out, err = run("--home", str(tmp_path / "missing"), "-f", "table", "stats", "--home", str(home), "-f", "json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["sessions"] == 1
    # and the environment still serves when neither is given
    code, out, err = run("stats", "--format", "json", env={"AGENT_NOTEBOOK_HOME": str(home)})
    assert code == 0, err
    assert json.loads(out)["sessions"] == 1


def _row(help_text: str, option: str) -> str:
    """The help table's row of ``option``: what follows it on its line."""
    found = re.search(rf"{re.escape(option)}\b(.*)", help_text)
    assert found is not None, help_text
    return found.group(1)


def test_help_shows_flags_as_flags_and_defaults_whole() -> None:
    code, out, _ = run("search", "--help")
    assert code == 0
    assert "<bool>" not in _row(out, "--explain")
    assert "<bool>" not in _row(out, "--include-archive")
    assert "The notebook directory [default: ~/.agent-notebook]." in _row(out, "--home")
    _, out, _ = run("chat", "--help")
    assert "[default: a new one, chat-YYYYMMDD-HHMMSS]" in out


def test_search_flag_takes_no_value(home: Path) -> None:
    code, out, err = run(
        "search", "train", "--explain", "--mode", "lexical", "--format", "json", "--home", str(home)
    )
    assert code == 0, err
    [hit] = json.loads(out)
    assert "Book the train" in hit["moment"]["content"]["text"] and hit["explain"]


@pytest.mark.parametrize("command", ["init", "slice", "export", "import"])
def test_format_is_accepted_where_a_report_is_printed(
    command: str, home: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    if command == "import":
        assert run("export", str(copy), "--home", str(home))[0] == 0
    args = {
        "init": ["init", "--home", str(tmp_path / "new")],
        "slice": ["slice", "train Lyon", "--home", str(home)],
        "export": ["export", str(copy), "--home", str(home)],
        "import": ["import", str(copy), "--home", str(tmp_path / "merged")],
    }[command]
    code, out, err = run(*args, "--format", "json")
    assert code == 0, err
    printed = json.loads(out)
    if command == "slice":
        assert any("Book the train" in item["text"] for item in printed["items"])
    elif command == "init":
        assert printed["home"] == str(tmp_path / "new")
    else:
        assert (printed["sessions"], printed["moments"]) == (1, 1)
