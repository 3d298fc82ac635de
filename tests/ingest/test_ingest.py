"""Ingest (issue 15): idempotent (what the notebook holds is skipped and counted, a file that
grew adds its new turns), progress that shows when stderr is not a terminal, new moments
left waiting for a vector as docs/cli.md says, and errors that list the formats."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from agent_notebook import Notebook
from agent_notebook.cli import app
from agent_notebook.cli.common import PROGRESS_EVERY_ENV, LineProgress
from agent_notebook.errors import MalformedFile
from agent_notebook.ingest import parse_file
from agent_notebook.storage import StorageBackend
from tests.support.clirun import cli_process

MESSAGES = [
    {"role": "user", "content": "Book the train to Lyon", "timestamp": "2026-05-20T09:00:00Z"},
    {"role": "assistant", "content": "Booked seat 42 on the TGV"},
    {"role": "user", "content": "Pack the charger"},
]


def write_jsonl(path: Path, messages: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    return path


def locomo(turns_per_session: dict[int, int]) -> list[dict[str, object]]:
    body: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for number, turns in turns_per_session.items():
        body[f"session_{number}_date_time"] = f"1:56 pm on {number} May, 2023"
        body[f"session_{number}"] = [
            {"speaker": "Ana", "dia_id": f"D{number}:{i + 1}", "text": f"turn {i} of {number}"}
            for i in range(turns)
        ]
    return [{"sample_id": "conv-x", "conversation": body}]


@pytest.fixture
def nb(backend: StorageBackend) -> Iterator[Notebook]:
    notebook = Notebook(backend, embedder=None)
    yield notebook
    notebook.close()


def test_ingesting_the_same_file_twice_skips_what_the_notebook_holds(
    nb: Notebook, tmp_path: Path
) -> None:
    plan = parse_file(write_jsonl(tmp_path / "chat.jsonl", MESSAGES))
    first = nb.ingest(plan)
    assert (first.sessions_created, first.moments_added, first.moments_skipped) == (1, 3, 0)
    again = nb.ingest(plan)
    assert (again.sessions_created, again.moments_added, again.moments_skipped) == (0, 0, 3)
    assert again.sessions == []
    assert [s.id for s in nb.sessions()] == [first.sessions[0].id]
    assert nb.stats().moments == 3


def test_a_file_that_grew_adds_only_its_new_turns(nb: Notebook, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "chat.jsonl", MESSAGES[:2])
    session = nb.ingest(parse_file(path)).sessions[0]
    write_jsonl(path, [*MESSAGES, {"role": "user", "content": "And the passport"}])
    grown = nb.ingest(parse_file(path))
    assert (grown.sessions_created, grown.moments_added, grown.moments_skipped) == (0, 2, 2)
    assert [s.id for s in grown.sessions] == [session.id]
    texts = [m.content.text for m in nb.moments(session.id)]
    assert texts == [
        "Book the train to Lyon",
        "Booked seat 42 on the TGV",
        "Pack the charger",
        "And the passport",
    ]
    assert nb.get_session(session.id).stats.moments == 4


def test_a_locomo_file_that_grew_extends_its_sessions_and_adds_new_ones(
    nb: Notebook, tmp_path: Path
) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(locomo({1: 2})), encoding="utf-8")
    nb.ingest(parse_file(path))
    path.write_text(json.dumps(locomo({1: 3, 2: 2})), encoding="utf-8")
    report = nb.ingest(parse_file(path))
    assert (report.sessions_created, report.moments_added, report.moments_skipped) == (1, 3, 2)
    by_source = {s.links[0].target: s for s in nb.sessions()}
    assert set(by_source) == {"conv-x/session_1", "conv-x/session_2"}
    first = [m.source_id for m in nb.moments(by_source["conv-x/session_1"].id)]
    assert first == ["D1:1", "D1:2", "D1:3"]


def test_the_same_name_in_another_directory_is_another_source(nb: Notebook, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    nb.ingest(parse_file(write_jsonl(tmp_path / "a" / "chat.jsonl", MESSAGES)))
    other = nb.ingest(parse_file(write_jsonl(tmp_path / "b" / "chat.jsonl", MESSAGES[:1])))
    assert (other.sessions_created, other.moments_added, other.moments_skipped) == (1, 1, 0)


def test_progress_counts_every_moment_of_the_plan(nb: Notebook, tmp_path: Path) -> None:
    plan = parse_file(write_jsonl(tmp_path / "chat.jsonl", MESSAGES))
    for _ in range(2):  # recorded the first time, skipped the second
        done: list[int] = []
        nb.ingest(plan, progress=done.append)
        assert sum(done) == plan.moment_count


def test_unknown_format_lists_the_formats_ingest_reads(tmp_path: Path) -> None:
    csv = tmp_path / "chat.csv"
    csv.write_text("role,content\nuser,hi\n", encoding="utf-8")
    with pytest.raises(MalformedFile) as caught:
        parse_file(csv)
    for name in ("messages-json", "messages-jsonl", "locomo"):
        assert name in str(caught.value)
    shapeless = tmp_path / "other.json"
    shapeless.write_text('{"rows": []}', encoding="utf-8")
    with pytest.raises(MalformedFile, match="messages-jsonl"):
        parse_file(shapeless)


# -- progress lines where stderr is not a terminal ----------------------------------------------


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_line_progress_prints_done_total_and_rate_every_few_seconds() -> None:
    out = io.StringIO()
    clock = Clock()
    with LineProgress(Console(file=out, width=200), every=5.0, clock=clock) as bar:
        task = bar.add_task("ingest chat.jsonl", total=1000)
        bar.advance(task, 100)  # under 5 s: no line yet
        clock.now += 5.0
        bar.advance(task, 400)
        clock.now += 1.0
        bar.advance(task, 100)
        clock.now += 4.0
        bar.advance(task, 400)
    assert out.getvalue().splitlines() == [
        "ingest chat.jsonl: 500/1000 (50%), 100/s",
        "ingest chat.jsonl: 1000/1000 (100%), 100/s",
    ]


# -- the command ----------------------------------------------------------------------------------


def run(home: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [*args, "--home", str(home)], env=env)
    return result.exit_code, result.stdout, result.stderr


def test_the_command_reports_what_it_skipped_and_shows_progress_without_a_terminal(
    tmp_path: Path,
) -> None:
    home, chat = tmp_path / "nb", write_jsonl(tmp_path / "chat.jsonl", MESSAGES)
    env = {PROGRESS_EVERY_ENV: "0", "AGENT_NOTEBOOK_EMBEDDER": "none"}
    code, out, err = run(home, "ingest", str(chat), "--format", "json", env=env)
    assert code == 0, err
    assert json.loads(out)["moments_added"] == 3
    assert "ingest chat.jsonl: 3/3 (100%)" in err and "/s" in err
    code, out, err = run(home, "ingest", str(chat), "--format", "json", env=env)
    assert code == 0, err
    report = json.loads(out)
    assert (report["moments_added"], report["moments_skipped"]) == (0, 3)
    assert "skipped 3 already in the notebook" in err


def test_ingest_leaves_the_new_moments_waiting_for_a_vector(tmp_path: Path) -> None:
    """docs/cli.md (once the README): one-shot commands leave new moments queued; 'reindex' embeds them."""
    home, chat = tmp_path / "nb", write_jsonl(tmp_path / "chat.jsonl", MESSAGES)
    code, _, err = run(home, "ingest", str(chat))
    assert code == 0, err
    assert "agent-notebook reindex" in err
    with Notebook.open(home, background_embedding=False) as nb:
        if nb.semantic is None:
            pytest.skip("no embedder on this machine")
        assert nb.unembedded() == 3


def test_a_named_pipe_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Nothing writes to the pipe: reading it would wait forever (and a pipe read once is
    gone, so ingesting it again could not skip what it holds)."""
    pipe = tmp_path / "chat.jsonl"
    os.mkfifo(pipe)
    done = cli_process(
        tmp_path / "nb", "ingest", str(pipe), env={"AGENT_NOTEBOOK_EMBEDDER": "none"}
    )
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert str(pipe) in err and "not a regular file" in err and "save" in err, err
    with pytest.raises(MalformedFile, match="not a regular file"):
        parse_file(tmp_path)  # a directory too
