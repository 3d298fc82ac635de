"""The fact index (issue 39, item 1): each moment filed under the subjects it states facts
about, so a new statement meets the earlier ones on the same subject in any session, far
beyond the engine's window, in another process, on each kind of backend (memory, SQLite,
YAML, PostgreSQL; the index on every backend, sealed ones too, is in the storage
conformance suite); and ``reindex --facts`` for a notebook recorded without it. Carried by export, import and migrate: tests/notebook/test_facts_carried.py."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.config import FactSettings, NotebookConfig
from agent_notebook.storage import MemoryBackend, SqliteBackend, StorageBackend
from tests.support.backends import make_backend

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
#: A small window, so the filler below pushes the first statement out of the engine's reach.
WINDOW = 4


@pytest.fixture(params=["memory", "sqlite-file", "yaml", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StorageBackend]:
    instance = make_backend(str(request.param), tmp_path)
    yield instance
    instance.close()


def _config(enabled: bool = True) -> NotebookConfig:
    return NotebookConfig(facts=FactSettings(enabled=enabled, window=WINDOW))


def _fill(nb: Notebook, session: str, count: int, at: datetime) -> None:
    for n in range(count):  # (no number: a quantity would be filed)
        text = f"Small talk about the weather, part {chr(ord('a') + n % 26)}."
        nb.record(session, text, speaker="Ben", timestamp=at)


def test_a_job_change_far_beyond_the_window_and_in_another_session_is_linked(
    backend: StorageBackend,
) -> None:
    with Notebook(backend, embedder=None, config=_config()) as nb:
        monday = nb.start_session("Monday").id
        old = nb.record(monday, "I work at Deloitte.", speaker="Maya", timestamp=T0)
        _fill(nb, monday, 5 * WINDOW, T0)
        friday = nb.start_session("Friday").id
        _fill(nb, friday, 3 * WINDOW, T0 + timedelta(days=4))
        story = nb.record(
            friday, "Back in 2019 I worked at Tesco.", speaker="Maya", timestamp=T0 + timedelta(4)
        )
        new = nb.record(friday, "I've joined Monzo.", speaker="Maya", timestamp=T0 + timedelta(4))
        assert "employer/i/maya" in nb.get_moment(old.id).metadata.fact_keys
        assert f"superseded_by:{new.id}" in nb.get_moment(old.id).relations.links
        assert nb.get_moment(story.id).relations.links == []
        current = {h.moment.id for h in nb.search("Deloitte Monzo Tesco", current=True)}
        assert new.id in current and old.id not in current


def test_another_speakers_job_is_not_their_own_and_disagreeing_on_a_thing_is_a_conflict(
    backend: StorageBackend,
) -> None:
    with Notebook(backend, embedder=None, config=_config()) as nb:
        s = nb.start_session().id
        mine = nb.record(s, "I work at Deloitte.", speaker="Maya", timestamp=T0)
        budget = nb.record(s, "The budget is $50,000.", speaker="Maya", timestamp=T0)
        _fill(nb, s, 5 * WINDOW, T0)
        nb.record(s, "I work at Monzo.", speaker="Ben", timestamp=T0 + timedelta(days=1))
        other = nb.record(s, "The budget is $80,000.", speaker="Ben", timestamp=T0 + timedelta(1))
        assert nb.get_moment(mine.id).relations.links == []  # Ben's job ends nothing of Maya's
        assert nb.get_moment(budget.id).relations.links == [f"conflicts_with:{other.id}"]


def test_a_process_that_never_saw_the_first_statement_links_it(tmp_path: Path) -> None:
    """Two real processes on one SQLite notebook: the second meets the first's statement
    through the stored index, not through an engine in memory."""
    home = tmp_path / "home"
    (home).mkdir()
    (home / "config.yaml").write_text(
        f"backend: sqlite\nsearch:\n  embedder: none\nfacts:\n  enabled: true\n  window: {WINDOW}\n",
        encoding="utf-8",
    )

    def record(text: str, speaker: str, session: str | None = None) -> dict[str, object]:
        draft = {"text": text, "speaker": speaker} | ({"session": session} if session else {})
        done = subprocess.run(
            [sys.executable, "-m", "agent_notebook", "--home", str(home), "record"]
            + (["--format", "json"] if session else ["--task", "first", "--format", "json"]),
            input=json.dumps(draft),
            capture_output=True,
            text=True,
            check=True,
        )
        [found] = json.loads(done.stdout)
        assert isinstance(found, dict)
        return found

    first = record("I live in Leeds.", "Maya")
    with Notebook.open(home) as nb:  # filler from a third writer, beyond the window
        s = nb.start_session("later").id
        _fill(nb, s, 3 * WINDOW, datetime.now(UTC))
    later = record("I moved to Bristol last month.", "Maya", s)
    with Notebook.open(home) as nb:
        assert f"superseded_by:{later['id']}" in nb.get_moment(str(first["id"])).relations.links


def test_reindex_files_a_notebook_recorded_with_facts_off(tmp_path: Path) -> None:
    path = tmp_path / "notebook.db"
    with Notebook(SqliteBackend(path), embedder=None, config=_config(False)) as nb:
        s = nb.start_session().id
        old = nb.record(s, "I work at Deloitte.", speaker="Maya", timestamp=T0)
        _fill(nb, s, 3 * WINDOW, T0)
        assert nb.get_moment(old.id).metadata.fact_keys == []
    with Notebook(SqliteBackend(path), embedder=None, config=_config()) as nb:
        assert nb.facts.reindex() == 1
        assert nb.facts.reindex() == 0  # again: nothing to file
        assert "employer/i/maya" in nb.get_moment(old.id).metadata.fact_keys
        new = nb.record(s, "I've started at Monzo.", speaker="Maya", timestamp=T0 + timedelta(1))
        assert f"superseded_by:{new.id}" in nb.get_moment(old.id).relations.links


def test_reindex_on_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(
        "backend: sqlite\nsearch:\n  embedder: none\n", encoding="utf-8"
    )
    with Notebook.open(home) as nb:
        s = nb.start_session().id
        nb.record(s, "My phone number is 555-0100.", speaker="Maya", timestamp=T0)
    command = [sys.executable, "-m", "agent_notebook", "--home", str(home), "reindex", "--facts"]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    assert "filed_anew" in done.stdout and "facts are off" in done.stderr.casefold()
    as_json = subprocess.run(
        [*command, "--format", "json"], capture_output=True, text=True, check=True
    )
    assert json.loads(as_json.stdout) == {"moments": 1, "filed_anew": 0}


def test_redacting_or_forgetting_a_statement_takes_it_out_of_the_index() -> None:
    with Notebook(MemoryBackend(), embedder=None, config=_config()) as nb:
        s = nb.start_session().id
        said = nb.record(s, "I live in Leeds.", speaker="Maya", timestamp=T0)
        assert "home/i/maya" in nb.get_moment(said.id).metadata.fact_keys
        nb.redact(said.id, "asked")
        assert nb.get_moment(said.id).metadata.fact_keys == []
        assert nb.backend.fact_key_members(["home/i/maya"], 10**6, 8) == []
        _fill(nb, s, 2 * WINDOW, T0)
        later = nb.record(s, "I moved to Bristol.", speaker="Maya", timestamp=T0 + timedelta(1))
        assert nb.get_moment(later.id).relations.links == []
