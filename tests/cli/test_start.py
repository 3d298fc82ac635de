"""The commands that read answer at once: a real process running them loads none of the
heavy parts (LangChain, LangGraph, the embedding runtime, the server stack). Checked by the
modules the process loaded, never by time: bench/cli_start.py measures the time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_notebook import Notebook

#: Top-level packages a light command must not import.
HEAVY = {
    "langchain",
    "langchain_core",
    "langgraph",
    "langsmith",
    "onnxruntime",
    "tokenizers",
    "faiss",
    "numpy",
    "fastapi",
    "starlette",
    "uvicorn",
    "mcp",
    "PIL",
}

#: Runs each command line of argv[2] (JSON) through the CLI in this one process, then
#: writes the exit codes and every module loaded to argv[1].
PROBE = """
import json, sys
from agent_notebook.cli import app

codes = []
for args in json.loads(sys.argv[2]):
    try:
        app(args, prog_name="agent-notebook")
    except SystemExit as exit:
        codes.append(exit.code)
with open(sys.argv[1], "w") as out:
    json.dump({"codes": codes, "modules": sorted(sys.modules)}, out)
"""


@pytest.mark.slow
def test_reading_commands_load_nothing_heavy(tmp_path: Path) -> None:
    home = tmp_path / "nb"
    # The default embedder setting: a search that asked for vectors would load the model.
    with Notebook.open(home, background_embedding=False) as nb:
        session = nb.start_session("Plan the trip")
        nb.record(session.id, "Book the train to Lyon for 7 June", role="user")
        nb.record(session.id, "Booked: the 09:04 TGV, seat 42", role="assistant")
    at = ["--home", str(home)]
    commands = [
        ["search", "train Lyon", "--mode", "lexical", *at],
        ["search", "train", "--mode", "lexical", "--format", "json", *at],
        ["sessions", *at],
        ["show", session.id, *at],
        ["moments", session.id, *at],
        ["stats", "--format", "json", *at],
        ["about", "Lyon", *at],
    ]
    report = tmp_path / "loaded.json"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_NOTEBOOK_")}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(report), json.dumps(commands)],
        capture_output=True,
        timeout=120,
        env=clean,
    )
    assert result.returncode == 0, result.stderr.decode()
    loaded = json.loads(report.read_text())
    assert loaded["codes"] == [0] * len(commands), result.stderr.decode()
    assert b"Book the train to Lyon" in result.stdout  # the search found it
    assert "agent_notebook.notebook.facade" in loaded["modules"]  # the commands did open it
    heavy = sorted({m.split(".")[0] for m in loaded["modules"]} & HEAVY)
    assert not heavy, f"a light command loaded {heavy}"
