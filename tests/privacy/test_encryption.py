"""Encryption at rest (issue 8): with it on, no file under the home holds a moment's text,
search still finds it, a wrong or missing key is a clear error that changes nothing, and a
key rotation seals everything under the new key. Real files, real SQLite, real YAML, the
real CLI in a subprocess; nothing is mocked. The storage conformance suite runs on the
sealed backends too (``conftest.BACKENDS``)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from agent_notebook import Notebook
from agent_notebook.core.crypto import (
    Cipher,
    SealedBlobError,
    WrongKey,
    generate_key,
    key_text,
    write_key_file,
)
from agent_notebook.errors import InvalidInput
from agent_notebook.storage import SqliteBackend
from tests.support.clirun import as_text, run

KEY_ENV = "AGENT_NOTEBOOK_KEY"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
TEXTS = [
    "Quillomar booked the night train to Vladivostok for the ninth of June.",
    "The zephyrine password hint is the name of the first cat, Marmaduke.",
    "Did Ana pay the xylocarp invoice of 418 euros to the Bellecour hotel?",
    "Remember that the oncologist moved the appointment to Thursday morning.",
]
MARKERS = ["Quillomar", "Vladivostok", "zephyrine", "Marmaduke", "xylocarp", "oncologist"]


def write_config(home: Path, backend: str, key_file: Path | None = None) -> None:
    home.mkdir(parents=True, exist_ok=True)
    lines = [f"backend: {backend}", "privacy:", "  encryption:", "    enabled: true"]
    if key_file is not None:
        lines.append(f"    key_file: {key_file}")
    (home / "config.yaml").write_text("\n".join(lines) + "\n")


def plaintext_found(home: Path, needles: list[str]) -> list[tuple[str, str]]:
    """(file, needle) for every needle found in the bytes of any file under ``home``."""
    found = []
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        data = path.read_bytes().lower()
        found += [(str(path), n) for n in needles if n.lower().encode() in data]
    return found


@pytest.fixture
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(KEY_ENV, raising=False)
    return write_key_file(tmp_path / "keys" / "key", generate_key())


def fill(nb: Notebook) -> list[str]:
    session = nb.start_session("Quillomar trip planning", started=T0)
    moments = nb.record_many(
        session.id,
        [
            {"text": text, "speaker": "Ana", "timestamp": T0 + timedelta(minutes=i)}
            for i, text in enumerate(TEXTS)
        ],
    )
    nb.decide(session.id, "Take the Vladivostok train", "zephyrine is cheaper")
    return [m.id for m in moments]


@pytest.mark.parametrize("kind", ["sqlite", "yaml"])
def test_no_file_holds_a_moments_text_and_search_still_finds_it(
    tmp_path: Path, key_file: Path, kind: str
) -> None:
    home = tmp_path / "home"
    write_config(home, kind, key_file)
    with Notebook.open(home, background_embedding=False) as nb:
        ids = fill(nb)
        for marker, expected in [
            ("Quillomar", ids[0]),
            ("xylocarp", ids[2]),
            ("zephyrine", ids[1]),
        ]:
            lexical = nb.search(marker, mode="lexical")
            assert lexical and lexical[0].moment.id == expected, marker
        assert nb.search("oncologist appointment", mode="lexical")[0].moment.id == ids[3]
        assert nb.search("booked", mode="lexical")[0].moment.id == ids[0]  # stems still match
        if nb.semantic is not None:
            nb.reindex()
            vector = nb.search("night train to Vladivostok", mode="vector")
            assert vector[0].moment.id == ids[0]  # the sealed vectors open for search
            hybrid = nb.search("night train to Vladivostok", mode="hybrid")
            assert ids[0] in [h.moment.id for h in hybrid[:2]]
        nb.checkpointer.put(  # the chat's checkpoints hold its messages: sealed too
            {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}},
            {**empty_checkpoint(), "channel_values": {"messages": [TEXTS[1]]}},
            {"source": "input", "step": 0},
            {},
        )
        loaded = nb.checkpointer.get({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}})
        assert loaded is not None and loaded["channel_values"]["messages"] == [TEXTS[1]]
        notes = nb.session_notebook("t1")  # the session notebook quotes the conversation
        asyncio.run(notes.update_section("Current State", f"Asked: {TEXTS[2]}"))
        assert TEXTS[2] in asyncio.run(nb.session_notebook("t1").get_section("Current State"))
        assert nb.get_moment(ids[1]).content.text == TEXTS[1]
        assert {c.concept for c in nb.backend.list_concepts()}  # names come back readable
    found = plaintext_found(home, [*MARKERS, *TEXTS, "Marmaduke", "cheaper"])
    assert not found, found
    with Notebook.open(home, background_embedding=False) as nb:  # reopened, the same
        assert nb.search("Marmaduke", mode="lexical")[0].moment.id == ids[1]
        assert TEXTS[2] in asyncio.run(nb.session_notebook("t1").get_section("Current State"))
        assert nb.backend.list_sessions()[0].task == "Quillomar trip planning"


def test_compaction_archive_files_are_sealed(tmp_path: Path, key_file: Path) -> None:
    home = tmp_path / "home"
    write_config(home, "sqlite", key_file)
    with Notebook.open(home, background_embedding=False) as nb:
        ids = fill(nb)
        report = nb.compact(now=T0 + timedelta(days=365))
        assert report.archived >= len(ids)
        assert nb.archived_moment(ids[1]).content.text == TEXTS[1]
        hits = nb.search("xylocarp", mode="lexical", include_archive=True)
        assert ids[2] in [h.moment.id for h in hits]
    assert list((home / "archive").rglob("*.jsonl.gz"))
    found = plaintext_found(home, [*MARKERS, *TEXTS])
    assert not found, found


def snapshot(home: Path) -> dict[str, bytes]:
    """The notebook's files (SQLite's -wal and -shm come and go with any connection)."""
    files = sorted(p for p in home.rglob("*") if p.is_file())
    return {str(p): p.read_bytes() for p in files if not p.name.endswith(("-wal", "-shm"))}


@pytest.mark.parametrize("kind", ["sqlite", "yaml"])
def test_a_wrong_key_is_a_clear_error_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    home = tmp_path / "home"
    write_config(home, kind)
    monkeypatch.setenv(KEY_ENV, key_text(generate_key()))
    with Notebook.open(home, background_embedding=False) as nb:
        fill(nb)
    before = snapshot(home)
    monkeypatch.setenv(KEY_ENV, key_text(generate_key()))
    with pytest.raises(WrongKey, match=r"encrypted with key .* give the key"):
        Notebook.open(home, background_embedding=False)
    assert snapshot(home) == before


def test_a_missing_key_says_where_to_put_one(tmp_path: Path, key_file: Path) -> None:
    home = tmp_path / "home"
    write_config(home, "sqlite")
    with pytest.raises(InvalidInput, match=f"{KEY_ENV}.*key new"):
        Notebook.open(home)
    assert not (home / "notebook.db").exists()


def test_an_encrypted_notebook_without_the_config_is_refused(
    tmp_path: Path, key_file: Path
) -> None:
    home = tmp_path / "home"
    write_config(home, "sqlite", key_file)
    with Notebook.open(home, background_embedding=False) as nb:
        fill(nb)
    (home / "config.yaml").write_text("backend: sqlite\n")
    with pytest.raises(InvalidInput, match="encrypted"):
        Notebook.open(home, background_embedding=False)


def test_a_key_file_inside_the_home_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with pytest.raises(InvalidInput, match="inside the notebook's home"):
        write_key_file(home / "key", generate_key(), home)
    inside = write_key_file(tmp_path / "elsewhere" / "key", generate_key())
    (home / "key").write_bytes(inside.read_bytes())
    os.chmod(home / "key", 0o600)
    write_config(home, "sqlite", home / "key")
    with pytest.raises(InvalidInput, match="inside the notebook's home"):
        Notebook.open(home)


def test_a_key_file_others_can_read_is_refused(tmp_path: Path, key_file: Path) -> None:
    os.chmod(key_file, 0o644)
    home = tmp_path / "home"
    write_config(home, "sqlite", key_file)
    with pytest.raises(InvalidInput, match="chmod 600"):
        Notebook.open(home)


def test_a_moved_blob_does_not_open() -> None:
    cipher = Cipher(generate_key())
    blob = cipher.encrypt(b"the text", b"vector:1")
    assert cipher.decrypt(blob, b"vector:1") == b"the text"
    with pytest.raises(SealedBlobError, match="moved"):
        cipher.decrypt(blob, b"vector:2")
    assert cipher.token("paint") == cipher.token("paint") != cipher.token("paints")
    assert cipher.open_name(cipher.seal_name("lyon trip")) == "lyon trip"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return as_text(run(list(args)))


@pytest.mark.parametrize("kind", ["sqlite", "yaml"])
def test_key_rotation_end_to_end(tmp_path: Path, key_file: Path, kind: str) -> None:
    home = tmp_path / "home"
    write_config(home, kind, key_file)
    with Notebook.open(home, background_embedding=False) as nb:
        ids = fill(nb)
        if kind == "sqlite":
            nb.compact(now=T0 + timedelta(days=365))
            nb.checkpointer.put(
                {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}},
                {**empty_checkpoint(), "channel_values": {"messages": [TEXTS[0]]}},
                {"source": "input", "step": 0},
                {},
            )
        asyncio.run(nb.session_notebook("t1").update_section("Current State", TEXTS[3]))
    new_file = tmp_path / "keys" / "key-2"
    made = cli("key", "new", "--file", str(new_file), "--home", str(home))
    assert made.returncode == 0, made.stderr
    assert f"key_file: {new_file}" in made.stderr and oct(new_file.stat().st_mode)[-3:] == "600"
    rotated = cli("key", "rotate", "--new-key-file", str(new_file), "--home", str(home))
    assert rotated.returncode == 0, rotated.stderr
    assert "sealed again under key" in rotated.stdout and "switch" in rotated.stderr
    again = cli("key", "rotate", "--new-key-file", str(new_file), "--home", str(home))
    assert "0 records, 0 archive files, 0 checkpoints" in again.stdout  # nothing left to do

    with pytest.raises(WrongKey):  # the old key no longer opens it
        Notebook.open(home, background_embedding=False)
    write_config(home, kind, new_file)
    with Notebook.open(home, background_embedding=False) as nb:
        assert asyncio.run(nb.session_notebook("t1").get_section("Current State")) == TEXTS[3]
        if kind == "sqlite":
            assert nb.archived_moment(ids[1]).content.text == TEXTS[1]
            hits = nb.search("xylocarp", mode="lexical", include_archive=True)
            assert ids[2] in [h.moment.id for h in hits]
            saved = nb.checkpointer.get({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}})
            assert saved is not None and saved["channel_values"]["messages"] == [TEXTS[0]]
            rollup = next(iter(nb.backend.iter_moments()))  # what compaction left active
            word = max(rollup.content.text.split(), key=len).strip(".,:;!?")
            assert rollup.id in [h.moment.id for h in nb.search(word, mode="lexical")]
        else:
            assert nb.search("zephyrine", mode="lexical")[0].moment.id == ids[1]
            assert nb.get_moment(ids[0]).content.text == TEXTS[0]
    assert not plaintext_found(home, [*MARKERS, *TEXTS])


def test_an_interrupted_rotation_leaves_everything_readable(tmp_path: Path) -> None:
    """Half the rows under the old key, half under the new: both keys together open all
    of it, and finishing the rotation leaves the new key alone enough."""
    old, new = generate_key(), generate_key()
    path = tmp_path / "notebook.db"
    backend = SqliteBackend(path, cipher=Cipher(old))
    nb = Notebook(backend, embedder=None)
    first = fill(nb)
    nb.close()
    backend = SqliteBackend(path, cipher=Cipher(new, also=[old]))
    nb = Notebook(backend, embedder=None)
    second = fill(nb)  # sealed with the new key, as a rotation part-way through leaves it
    assert [m.content.text for m in backend.get_moments(first + second)] == TEXTS * 2
    assert backend.reseal() > 0
    nb.close()
    backend = SqliteBackend(path, cipher=Cipher(new))
    nb = Notebook(backend, embedder=None)
    hits: list[Any] = nb.search("Marmaduke", mode="lexical")
    assert {h.moment.id for h in hits} == {first[1], second[1]}
    nb.close()


def test_rotating_to_the_same_key_seals_a_notebook_started_in_plain_text(
    tmp_path: Path, key_file: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("backend: sqlite\n")
    thread: RunnableConfig = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    with Notebook.open(home, background_embedding=False) as nb:
        ids = fill(nb)
        nb.compact(now=T0 + timedelta(days=365))  # plain archive files
        later = nb.start_session("later")
        kept = nb.record(later.id, TEXTS[1], speaker="Ana")
        if nb.semantic is not None:
            nb.reindex()  # plain vectors
        nb.checkpointer.put(
            thread,
            {**empty_checkpoint(), "channel_values": {"messages": [TEXTS[0]]}},
            {"source": "input", "step": 0},
            {},
        )
        asyncio.run(nb.session_notebook("t1").update_section("Current State", TEXTS[3]))
    assert plaintext_found(home, MARKERS)  # the plain notebook holds its words, of course
    write_config(home, "sqlite", key_file)
    rotated = cli("key", "rotate", "--new-key-file", str(key_file), "--home", str(home))
    assert rotated.returncode == 0, rotated.stderr
    found = plaintext_found(home, [*MARKERS, *TEXTS])
    assert not found, found
    with Notebook.open(home, background_embedding=False) as nb:
        assert nb.search("Marmaduke", mode="lexical")[0].moment.id == kept.id
        if nb.semantic is not None:
            assert nb.search("Marmaduke the cat", mode="vector")[0].moment.id == kept.id
        assert nb.archived_moment(ids[2]).content.text == TEXTS[2]
        saved = nb.checkpointer.get(thread)
        assert saved is not None and saved["channel_values"]["messages"] == [TEXTS[0]]
        assert asyncio.run(nb.session_notebook("t1").get_section("Current State")) == TEXTS[3]
