"""The front ends stop at the facade (issue 29): no module of ``server/``, ``cli/``, ``chat/``
or ``langchain/`` reaches into a notebook's ``.backend``, and the facade methods they use
instead (a write guarded by an ETag, export to a file, recording into a new session, the
counts, the location, the tokens, the health check, migration) work on real SQLite
notebooks."""

from __future__ import annotations

import ast
import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from PIL import Image

import agent_notebook
from agent_notebook import Notebook
from agent_notebook.errors import Conflict, InvalidInput, NotFound
from agent_notebook.notebook.etags import etag_of
from agent_notebook.storage import SqliteBackend, YamlDirBackend

PACKAGE = Path(agent_notebook.__file__).parent
FRONT_ENDS = ("server", "cli", "chat", "langchain")
#: ``.backend`` attributes of a front end that are not a notebook's: the server settings'
#: ``backend`` option (a name or URL, given to ``Notebook.open``).
NOT_A_NOTEBOOK = {"settings"}


def backend_reaches(source: str) -> list[tuple[int, str]]:
    """``(line, expression)`` of each ``<x>.backend`` and ``getattr(<x>, "backend")`` in
    ``source`` whose ``<x>`` is not one of :data:`NOT_A_NOTEBOOK`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "backend":
            owner = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == "backend"
        ):
            owner = node.args[0]
        else:
            continue
        if ast.unparse(owner) not in NOT_A_NOTEBOOK:
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_the_check_finds_a_reach_into_the_backend() -> None:
    reaches = backend_reaches(
        "n = nb.backend.count_moments()\n"
        "m = access.tenant.notebook.backend.location\n"
        "p = getattr(nb, 'backend')\n"
        "ok = settings.backend\n"
    )
    assert [line for line, _ in reaches] == [1, 2, 3]


def test_no_front_end_reaches_past_the_facade_into_the_backend() -> None:
    modules = [p for name in FRONT_ENDS for p in sorted((PACKAGE / name).rglob("*.py"))]
    assert len(modules) > 20  # the front ends are where they were looked for
    reaches = [
        f"{path.relative_to(PACKAGE)}:{line}: {expr}"
        for path in modules
        for line, expr in backend_reaches(path.read_text(encoding="utf-8"))
    ]
    assert reaches == [], "use (or add) a Notebook method instead:\n" + "\n".join(reaches)


# -- the facade methods the front ends use -------------------------------------------------


@pytest.fixture
def nb(tmp_path: Path) -> Iterator[Notebook]:
    with Notebook.open(tmp_path / "home", background_embedding=False) as opened:
        yield opened


def test_location_counts_and_has_session(nb: Notebook, tmp_path: Path) -> None:
    assert nb.location == str(tmp_path / "home" / "notebook.db")
    assert (nb.session_count(), nb.moment_count()) == (0, 0)
    day = datetime(2026, 3, 1, 9, tzinfo=UTC)
    session = nb.start_session("Counted")
    nb.record_many(
        session.id,
        [{"text": f"moment {i}", "timestamp": day + timedelta(days=i)} for i in range(5)],
    )
    assert nb.session_count() == 1
    assert nb.moment_count() == 5
    assert nb.moment_count(since=day + timedelta(days=1), until=day + timedelta(days=3)) == 2
    assert nb.moment_count(since=day + timedelta(days=4)) == 1
    assert nb.moment_count(until=day) == 0
    with pytest.raises(InvalidInput, match="no timezone"):
        nb.moment_count(since=datetime(2026, 3, 1))
    assert nb.has_session(session.id)
    assert not nb.has_session("s_2020-01-01_001")  # a session id, but none of this notebook
    assert not nb.has_session("my-thread")  # not a session id at all: no error either


def test_write_if_match_writes_with_the_current_etag_and_refuses_a_stale_one(
    nb: Notebook,
) -> None:
    session = nb.start_session("Guarded")
    read = etag_of(nb.get_session(session.id))
    changed, tag = nb.write_if_match(
        session.id, read, lambda: nb.update_session(session.id, task="Changed")
    )
    assert changed.task == "Changed"
    assert tag == etag_of(nb.get_session(session.id)) != read
    with pytest.raises(Conflict, match="changed since you read it"):
        nb.write_if_match(session.id, read, lambda: nb.update_session(session.id, task="Lost"))
    assert nb.get_session(session.id).task == "Changed"  # the stale write changed nothing
    _, unguarded = nb.write_if_match(  # no If-Match: written without a check
        session.id, None, lambda: nb.update_session(session.id, task="Anyway")
    )
    assert unguarded == etag_of(nb.get_session(session.id))
    assert nb.get_session(session.id).task == "Anyway"


def test_a_guarded_write_that_fails_is_rolled_back(nb: Notebook) -> None:
    session = nb.start_session("Rolled back")
    tag = etag_of(nb.get_session(session.id))

    def two_changes() -> None:
        nb.update_session(session.id, task="Half")
        raise NotFound("the second part of the write failed")

    with pytest.raises(NotFound):
        nb.write_if_match(session.id, tag, two_changes)
    assert nb.get_session(session.id).task == "Rolled back"


def test_record_in_new_session_records_all_or_nothing(nb: Notebook) -> None:
    session, moments = nb.record_in_new_session(
        "New", [{"text": "first"}, {"text": "second", "role": "assistant"}]
    )
    assert session.task == "New"
    assert session.stats.moments == 2
    assert [m.session for m in moments] == [session.id, session.id]
    assert [m.content.text for m in nb.moments(session.id)] == ["first", "second"]
    with pytest.raises(InvalidInput, match="unknown"):  # refused before a session starts
        nb.record_in_new_session("Bad", [{"text": "x", "colour": "red"}])
    with pytest.raises(NotFound, match="m_999"):  # refused inside the transaction
        nb.record_in_new_session("Orphan", [{"text": "child", "parent": "m_999"}])
    assert nb.session_count() == 1  # neither left an empty session behind
    assert nb.moment_count() == 2


def test_export_file_writes_a_notebook_that_reads_back(nb: Notebook, tmp_path: Path) -> None:
    image = tmp_path / "dot.png"
    image.write_bytes(_png())
    session = nb.start_session("Exported")
    nb.record(session.id, "kept in the export")
    nb.record(session.id, "with a picture", image=image)
    as_yaml = nb.export_file(tmp_path / "out-yaml", "yaml")
    assert (as_yaml.sessions, as_yaml.moments) == (1, 2)
    assert not [p for p in (tmp_path / "out-yaml").iterdir() if p.name.endswith(".lock")]
    copy = YamlDirBackend(tmp_path / "out-yaml")
    try:
        assert [m.content.text for m in copy.list_moments(session.id)] == [
            "kept in the export",
            "with a picture",
        ]
        picture = copy.list_moments(session.id)[1].image_path
    finally:
        copy.close()
    assert picture is not None and (tmp_path / "out-yaml" / picture).is_file()
    (tmp_path / "out-db").mkdir()
    nb.export_file(tmp_path / "out-db" / "copy.db", "sqlite", with_media=False)
    assert not (tmp_path / "out-db" / "media").exists()  # the records only
    db = SqliteBackend(tmp_path / "out-db" / "copy.db")
    try:
        assert db.count_moments() == 2 and db.get_session(session.id) is not None
    finally:
        db.close()


def test_migrate_to_copies_into_an_empty_notebook_and_counts_both(
    nb: Notebook, tmp_path: Path
) -> None:
    session = nb.start_session("Moved")
    nb.record_many(session.id, [{"text": f"moment {i}"} for i in range(3)])
    done: list[int] = []
    with Notebook.open(
        tmp_path / "target", backend=str(tmp_path / "target.db"), background_embedding=False
    ) as target:
        report = nb.migrate_to(target, progress=done.append)
        assert report.ok
        assert target.moment_count() == 3 and target.has_session(session.id)
        with pytest.raises(Conflict):  # the target is no longer empty
            nb.migrate_to(target)
    assert done and done[-1] == 3


def test_reachable_tokens_and_cold_archive_of_a_file_notebook(nb: Notebook, tmp_path: Path) -> None:
    nb.check_reachable()  # a file is always there: no error
    tokens = nb.access_tokens()
    token, created = tokens.ensure_owner()
    assert created and token is not None
    grant = tokens.identify(token)
    assert grant is not None and grant.role == "owner"
    assert nb.cold_archive().root == tmp_path / "home" / "archive" == nb.archive_dir
    homeless = Notebook(SqliteBackend(":memory:"), embedder=None)
    try:
        with pytest.raises(InvalidInput, match="home"):
            homeless.cold_archive()
        with pytest.raises(InvalidInput, match="home"):
            homeless.access_tokens()
    finally:
        homeless.close()


def _png() -> bytes:
    """A small valid PNG (4x4, one colour)."""
    out = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


# -- capabilities are declared, not guessed --------------------------------------------------


def name_switches(source: str) -> list[int]:
    """Lines of ``source`` that compare a backend's ``capabilities.name`` with something."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Compare)
        and any(
            isinstance(side, ast.Attribute)
            and side.attr == "name"
            and isinstance(side.value, ast.Attribute)
            and side.value.attr == "capabilities"
            for side in (node.left, *node.comparators)
        )
    )


def test_no_branch_outside_storage_switches_on_a_backend_name() -> None:
    assert name_switches('if b.capabilities.name == "sqlite":\n    pass\n') == [1]
    modules = [p for p in sorted(PACKAGE.rglob("*.py")) if "storage" not in p.parts]
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in modules
        for line in name_switches(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "read a flag of storage.base.Capabilities instead:\n" + "\n".join(found)


def test_the_declared_capabilities_decide(tmp_path: Path) -> None:
    from agent_notebook.langgraph.stores import checkpoint_path, in_database, store_path
    from agent_notebook.privacy.tokens import FileTokens, tokens_of
    from agent_notebook.storage import MemoryBackend

    memory, sqlite, yaml = (
        MemoryBackend(),
        SqliteBackend(tmp_path / "n.db"),
        YamlDirBackend(tmp_path / "yaml"),
    )
    try:
        with pytest.raises(InvalidInput, match="the memory backend stores nothing to seal"):
            memory.reseal()
        assert store_path(memory) is None  # not persistent: the store is in memory
        assert store_path(sqlite) == checkpoint_path(sqlite) == tmp_path / "n.db"
        assert store_path(yaml) is not None and store_path(yaml) != checkpoint_path(yaml)
        assert not any(in_database(b) for b in (memory, sqlite, yaml))
        assert isinstance(tokens_of(tmp_path, sqlite), FileTokens)
        assert (yaml.capabilities.vector_index_file, sqlite.capabilities.vector_index_file) == (
            True,
            False,
        )
    finally:
        for backend in (memory, sqlite, yaml):
            backend.close()
