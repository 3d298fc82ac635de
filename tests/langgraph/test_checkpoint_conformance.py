"""LangGraph's own checkpointer conformance suite (``langgraph-checkpoint-conformance``) on
the notebook's default checkpointer, plain and encrypted, through its async methods and,
through a bridge whose async methods call the sync ones, through its sync methods; and the
checkpoint semantics around it: every checkpoint kept by default, a pruned id a clear error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.core.crypto import generate_key, write_key_file
from agent_notebook.langgraph.checkpoint.sqlite import NotebookSaver
from tests.support.checkpoint_conformance import (
    KEY_ENV,
    notebook_supply,
    passes_conformance,
)


def open_notebook(home: Path, *, encrypted: bool) -> Notebook:
    home.mkdir(parents=True, mode=0o700)
    if encrypted:
        key = write_key_file(home.parent / "keys" / home.name, generate_key())
        config = home / "config.yaml"
        config.write_text(f"privacy:\n  encryption:\n    enabled: true\n    key_file: {key}\n")
        config.chmod(0o600)
    return Notebook.open(home, background_embedding=False)


@pytest.fixture(params=["plain", "encrypted"])
def notebooks(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Iterator[Notebook]]:
    """Fresh notebooks (one per capability suite), all closed after the test."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    encrypted = request.param == "encrypted"
    yield from notebook_supply(tmp_path, lambda home: open_notebook(home, encrypted=encrypted))


@pytest.mark.slow
@pytest.mark.parametrize("api", ["async", "sync"])
def test_the_default_checkpointer_passes_langgraph_conformance_in_full(
    notebooks: Iterator[Notebook], api: str, request: pytest.FixtureRequest
) -> None:
    report = passes_conformance(notebooks, api, request, NotebookSaver, "Notebook.checkpointer")
    assert sum(r.tests_passed for r in report.results.values()) == 81  # all of 0.0.2
