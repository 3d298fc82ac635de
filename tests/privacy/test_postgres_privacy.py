"""Privacy on a PostgreSQL notebook, checked in the server's own files: after redact and
forget (whose purge runs ``VACUUM FULL``) and a ``CHECKPOINT``, no file of the test
database (tables, their TOAST tables, their indexes) holds the removed words; with
encryption at rest on, no file holds a moment's text at all.

The test reads the data directory, so it needs to run on the database's machine with the
right to read it (root, or the postgres user); elsewhere it skips, saying why."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_notebook import Notebook
from agent_notebook.core.crypto import generate_key, write_key_file
from agent_notebook.core.lexical import stem
from tests.support import pg
from tests.support.pg_files import database_files
from tests.support.waiting import HANG_GUARD_S

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _words() -> tuple[str, str, str]:
    """Words found nowhere else in the database (the session's other tests share it)."""
    tag = uuid.uuid4().hex[:6]
    letters = "".join(chr(ord("a") + int(c, 16)) for c in tag)
    return f"zebraquartz{letters}", f"marmalade{letters}", f"sunflowerkite{letters}"


def holding(files: list[Path], word: str) -> list[str]:
    """The files whose bytes hold ``word`` (or its stem, as the index keeps it)."""
    needles = {word.encode(), word.capitalize().encode(), stem(word).encode()}
    found = []
    for path in files:
        try:
            data = path.read_bytes()
        except FileNotFoundError:  # a dropped relation's file, unlinked since the listing
            continue
        if any(n in data for n in needles):
            found.append(path.name)
    return found


@contextmanager
def reader_for_a_while(url: str) -> Iterator[None]:
    """A transaction that took its snapshot before the block and ends a little after it
    began: ``VACUUM FULL`` keeps the rows it may see, so the purge must wait for it."""
    import psycopg

    conn = psycopg.connect(url)
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    conn.execute("SELECT count(*) FROM moments").fetchone()
    ending = threading.Timer(1.0, conn.rollback)
    ending.start()
    try:
        yield
    finally:
        ending.join(HANG_GUARD_S)
        conn.close()


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")


def test_redact_and_forget_leave_no_byte_in_the_database_files(tmp_path: Path) -> None:
    secret, concept, kept = _words()
    url = pg.url_with_schema(tmp_path)
    home = tmp_path / "home"
    with Notebook.open(home, backend=url, background_embedding=False) as nb:
        session = nb.start_session(f"Trip {kept}", started=T0)
        filler = " ".join(f"w{uuid.uuid4().hex}" for _ in range(120))  # past TOAST's 2 kB
        drafts: list[dict[str, Any]] = [
            {"text": f"The door code is {secret}, tell nobody", "speaker": "Ana"},
            {"text": f"A long note: {filler} and {secret} again", "speaker": "Ana"},
            {"text": f"Ana loves {concept} on toast", "concepts": [concept]},
            {"text": f"We packed the {kept} for the beach", "speaker": "Ana"},
        ]
        moments = nb.record_many(
            session.id,
            [{**d, "timestamp": T0 + timedelta(minutes=i)} for i, d in enumerate(drafts)],
        )
        nb.backend.put_vectors(
            "test-model", [(moments[0].number, moments[0].content.text, b"\1" * 16)]
        )
        every, tables = database_files(url)
        assert holding(tables, secret) and holding(tables, concept)  # the scan sees them

        with reader_for_a_while(url):  # another server's read that still sees the text
            nb.redact(moments[0].id, reason="a door code")
        nb.redact(moments[1].id, reason="a door code")
        nb.forget(concept, reason="asked to forget")
        assert nb.search(secret, mode="lexical") == []
        assert nb.search(concept, mode="lexical") == []
        assert nb.backend.get_vectors("test-model") == []  # its vector went with its text
        assert nb.search(kept, mode="lexical")[0].moment.id == moments[3].id

    every, tables = database_files(url)
    assert len(tables) > 10  # every table, TOAST table and index of the notebook
    assert holding(every, secret) == []
    assert holding(every, concept) == []
    assert holding(tables, kept)  # what was not removed stays


def test_encryption_at_rest_keeps_the_text_out_of_the_database_files(tmp_path: Path) -> None:
    secret, concept, kept = _words()
    url = pg.url_with_schema(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    key = write_key_file(tmp_path / "keys" / "key", generate_key())
    (home / "config.yaml").write_text(
        f"backend: {url}\nprivacy:\n  encryption:\n    enabled: true\n    key_file: {key}\n"
    )
    with Notebook.open(home, background_embedding=False) as nb:
        session = nb.start_session(f"Trip {kept}", started=T0)
        moment = nb.record(session.id, f"The door code is {secret}, about {concept}")
        nb.decide(session.id, f"Keep {kept}", f"{secret} is safer")
        assert nb.search(secret, mode="lexical")[0].moment.id == moment.id
    every, tables = database_files(url)
    assert tables
    for word in (secret, concept, kept):
        assert holding(every, word) == [], word
    with Notebook.open(home, background_embedding=False) as nb:  # and it opens again
        assert nb.get_moment(moment.id).content.text.startswith("The door code")
