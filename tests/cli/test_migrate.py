"""``agent-notebook migrate`` (issue 18, item 5) and export/import both ways between SQLite
and PostgreSQL, on the real server (tests/support/pg.py).

The LoCoMo checks: the whole dev set (2,760 turns, 500 of its questions) in lexical mode, and the
first two conversations (788 turns) in both modes: embedding the whole set takes minutes on
this machine, and what the hybrid check adds (vectors carried over, the same fusion) the
subset shows as well."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from agent_notebook import Notebook
from agent_notebook.ingest import parse_file
from agent_notebook.langgraph.store.vectors import IndexedStore
from agent_notebook.media.store import media_paths_of
from agent_notebook.notebook.exchange import ChatState, export_target, media_home
from agent_notebook.notebook.migration import notebook_counts
from agent_notebook.search.hits import SearchHit
from agent_notebook.storage import open_backend
from tests.support import pg
from tests.support.clirun import cli
from tests.support.filled_notebook import contents, fill
from tests.support.locomo import locomo_file

CONVERSATIONS = 2
QUESTIONS_PER_CONVERSATION = 25


def chat_counts(nb: Notebook) -> dict[str, int]:
    return notebook_counts(nb.backend, ChatState(nb.store, nb.checkpointer), nb.media_store())


def prefs(nb: Notebook) -> dict[str, Any] | None:
    item = nb.store.get(("app", "prefs"), "ana")
    return None if item is None else item.value


def file_digest(home: Path) -> dict[str, str]:
    return {
        p.relative_to(home).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm", ".lock"))
    }


def _migrated(tmp_path: Path, data: list[Any], *, embed: bool) -> tuple[Path, str]:
    """A SQLite notebook of ``data`` (LoCoMo conversations), migrated to PostgreSQL with the
    CLI; checks the report's counts and returns the SQLite home and the database URL."""
    subset = tmp_path / "locomo-subset.json"  # a temporary file, never in the repository
    subset.write_text(json.dumps(data), encoding="utf-8")
    home = tmp_path / "sqlite"
    with Notebook.open(home, background_embedding=False) as nb:
        nb.ingest(parse_file(subset))
        if embed:
            nb.reindex()  # every moment gets its vector: the hybrid ranking uses them
            assert nb.unembedded() == 0

    url = pg.url_with_schema(tmp_path)
    result = cli(home, "migrate", "--to", url, "--to-home", str(tmp_path / "pg"), "-f", "json")
    assert result.returncode == 0, result.stderr.decode()
    report = json.loads(result.stdout)
    assert report["ok"] is True
    counted = {row["what"]: (row["source"], row["target"]) for row in report["counts"]}
    assert counted["moments"][0] > 700 and counted["moments"][0] == counted["moments"][1]
    assert all(s == t for s, t in counted.values())
    return home, url


@pytest.mark.slow
def test_migrate_of_the_locomo_dev_set_gives_identical_lexical_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
    data = json.loads(locomo_file().read_text(encoding="utf-8"))
    home, url = _migrated(tmp_path, data, embed=False)
    # every other question of each conversation: 500 (all 999 agree too; it takes twice as long)
    questions = [qa["question"] for conv in data for qa in conv["qa"][::2]]
    assert len(questions) >= 500
    with (
        Notebook.open(home, background_embedding=False) as sqlite,
        Notebook.open(tmp_path / "pg", backend=url, background_embedding=False) as postgres,
    ):
        assert contents(postgres.backend) == contents(sqlite.backend)
        for question in questions:
            want = sqlite.search(question, limit=10, mode="lexical")
            got = postgres.search(question, limit=10, mode="lexical")
            assert same_but_for_ties(got, want), question


def same_but_for_ties(got: list[SearchHit], want: list[SearchHit]) -> bool:
    """The same hits in the same order, but that two neighbours whose scores tie (to 1e-9
    of the score: each database sums BM25's floating-point terms in its own order) may
    come in either order."""
    ids = [h.moment.id for h in got]
    wanted = [h.moment.id for h in want]
    i = 0
    while i < len(wanted):
        if i < len(ids) and ids[i] == wanted[i]:
            i += 1
            continue
        swapped = i + 1 < min(len(ids), len(wanted)) and (ids[i], ids[i + 1]) == (
            wanted[i + 1],
            wanted[i],
        )
        if not swapped or abs(want[i].score - want[i + 1].score) > 1e-9 * abs(want[i].score):
            return False
        i += 2
    return len(ids) == len(wanted)


@pytest.mark.slow
def test_migrate_of_locomo_gives_identical_search_results(tmp_path: Path) -> None:
    data = json.loads(locomo_file().read_text(encoding="utf-8"))[:CONVERSATIONS]
    questions = [qa["question"] for conv in data for qa in conv["qa"][:QUESTIONS_PER_CONVERSATION]]
    home, url = _migrated(tmp_path, data, embed=True)
    with (
        Notebook.open(home, background_embedding=False) as sqlite,
        Notebook.open(tmp_path / "pg", backend=url, background_embedding=False) as postgres,
    ):
        assert postgres.backend.capabilities.name == "postgres"
        assert contents(postgres.backend) == contents(sqlite.backend)
        assert postgres.unembedded() == 0  # the vectors came along: nothing to embed
        for mode in ("lexical", "hybrid"):
            for question in questions:
                want = [h.moment.id for h in sqlite.search(question, limit=10, mode=mode)]
                got = [h.moment.id for h in postgres.search(question, limit=10, mode=mode)]
                assert got == want, (mode, question)


def _chat_state(nb: Notebook) -> None:
    """Store items, a session notebook, a checkpoint with pending writes, a vector."""
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import empty_checkpoint

    session = nb.thread_session("trip-chat")
    nb.record(session, "Chatting about the trip")
    nb.session_notebook("trip-chat").sync.update_section("Current State", "Booking the hotel")
    nb.store.put(("app", "prefs"), "ana", {"seat": "window"}, index=False)
    nb.store.put(("app", "notes"), "lunch", {"text": "A vegetarian bistro near the station"})
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"notebook": {"session_id": session, "task": "t"}}
    config: RunnableConfig = {"configurable": {"thread_id": "trip-chat", "checkpoint_ns": ""}}
    saved = nb.checkpointer.put(config, checkpoint, {"source": "input", "step": 1}, {})
    nb.checkpointer.put_writes(saved, [("messages", "hello")], "task-1")
    nb.backend.put_vectors("model-x", [(1, nb.get_moment("m_1").content.text, b"vec1")])


def _archive_one(nb: Notebook) -> None:
    from agent_notebook.compaction import ColdArchive

    assert nb.archive_dir is not None
    entries = ColdArchive(nb.archive_dir).write(nb.get_moment("m_6"), [nb.get_moment("m_5")])
    with nb.backend.atomic():
        nb.backend.archive_moments(entries)


def test_migrate_carries_everything_and_refuses_a_full_target(tmp_path: Path) -> None:
    home = tmp_path / "source"
    with Notebook.open(home, background_embedding=False) as nb:
        fill(nb)  # media, actions, decisions, pending items, escalations, links
        _chat_state(nb)
        _archive_one(nb)
        nb.settle()
        before = contents(nb.backend)
        counts = chat_counts(nb)
    assert counts["media files"] == 2 and counts["archived moments"] == 1
    assert counts["checkpoints"] == 1 and counts["store items"] >= 3
    files_before = file_digest(home)

    url = pg.url_with_schema(tmp_path)
    result = cli(home, "migrate", "--to", url, "--to-home", str(tmp_path / "pg"))
    assert result.returncode == 0, result.stderr.decode()
    table = result.stdout.decode()
    assert "vectors model-x" in table and "False" not in table
    with Notebook.open(tmp_path / "pg", backend=url, background_embedding=False) as nb:
        assert contents(nb.backend) == before
        assert chat_counts(nb) == counts
        assert nb.archived_moment("m_5").content.text
        assert prefs(nb) == {"seat": "window"}
        # an item the source indexed is indexed on the target (its search ranks by meaning)
        assert isinstance(nb.store, IndexedStore)
        assert nb.store.is_indexed(("app", "notes"), "lunch")
        assert not nb.store.is_indexed(("app", "prefs"), "ana")
        found = nb.store.search(("app",), query="somewhere to eat without meat")
        assert found[0].key == "lunch" and found[0].score is not None
        assert "Booking the hotel" in nb.session_notebook("trip-chat").sync.load()
        latest = nb.checkpointer.get_tuple({"configurable": {"thread_id": "trip-chat"}})
        assert latest is not None and latest.pending_writes == [("task-1", "messages", "hello")]
        assert nb.backend.get_vectors("model-x") == [(1, b"vec1")]
        for name in media_paths_of(nb.backend.iter_moments()):
            assert nb.media_store().verify(name).is_file()  # copied, checked against its hash

    # a second run refuses, says how to proceed, and changes nothing on either side
    again = cli(home, "migrate", "--to", url, "--to-home", str(tmp_path / "pg"))
    assert again.returncode == 1
    message = again.stderr.decode()
    assert "not empty" in message and "import" in message
    assert file_digest(home) == files_before
    with Notebook.open(tmp_path / "pg", backend=url, background_embedding=False) as nb:
        assert contents(nb.backend) == before


def test_a_failed_migration_leaves_the_source_untouched(tmp_path: Path) -> None:
    home = tmp_path / "source"
    with Notebook.open(home, background_embedding=False) as nb:
        fill(nb)
        before = contents(nb.backend)
    files_before = file_digest(home)
    result = cli(home, "migrate", "--to", "postgresql://nobody@127.0.0.1:9/none")
    assert result.returncode == 1 and "error" in result.stderr.decode()
    assert file_digest(home) == files_before
    with Notebook.open(home, background_embedding=False) as nb:
        assert contents(nb.backend) == before


@pytest.mark.parametrize("direction", ["sqlite-to-postgres", "postgres-to-sqlite"])
def test_export_and_import_work_both_ways(direction: str, tmp_path: Path) -> None:
    url = pg.url_with_schema(tmp_path)
    sqlite_home, pg_home = tmp_path / "sqlite", tmp_path / "pg"
    source = (
        Notebook.open(sqlite_home, background_embedding=False)
        if direction == "sqlite-to-postgres"
        else Notebook.open(pg_home, backend=url, background_embedding=False)
    )
    with source as nb:
        fill(nb)
        _chat_state(nb)
        nb.settle()
        before, counts = contents(nb.backend), chat_counts(nb)
        exported = tmp_path / "exported.db"
        with export_target(exported, "sqlite") as destination:
            report = nb.export_to(destination, media_to=media_home(exported))
        assert (report.moments, report.checkpoints) == (before["count_moments"], 1)
    target = (
        Notebook.open(pg_home, backend=url, background_embedding=False)
        if direction == "sqlite-to-postgres"
        else Notebook.open(sqlite_home, background_embedding=False)
    )
    with target as nb, _backend(exported) as backend:
        report = nb.import_from(backend, media_from=media_home(exported))
        assert report.renumbered == {}
        assert contents(nb.backend) == before
        assert chat_counts(nb) == counts
        assert prefs(nb) == {"seat": "window"}
        assert nb.search("Lyon train", mode="lexical", limit=50)


class _backend:
    def __init__(self, path: Path) -> None:
        self.backend: Any = open_backend(path)

    def __enter__(self) -> Any:
        return self.backend

    def __exit__(self, *exc: object) -> None:
        self.backend.close()
