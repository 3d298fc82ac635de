"""Key rotation of a PostgreSQL notebook, on a real server (see ``pg``): the real CLI seals
every table under the new key (the backend's, LangGraph's checkpoints and store), after
which the new key alone opens it, the old one fails clearly, everything reads back equal
and no row (nor the schema's files, where the test may read them) holds a blob sealed
under the old key; a rotation stopped half way by a real failure finishes when run again;
a notebook started in plain text is sealed by rotating to its key."""

from __future__ import annotations

import asyncio
import base64
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint

from agent_notebook import Notebook
from agent_notebook import config as cfg
from agent_notebook.chat import build_chat_graph
from agent_notebook.core.crypto import (
    MAGIC,
    Cipher,
    WrongKey,
    generate_key,
    key_id,
    sealed_key_id,
    write_key_file,
)
from agent_notebook.errors import StorageError
from agent_notebook.langgraph.checkpoint.postgres import reseal_checkpoints
from agent_notebook.langgraph.store.postgres import open_pool
from agent_notebook.storage.postgres import PostgresBackend
from tests.support import pg
from tests.support.clirun import as_text, run
from tests.support.embedders import fake_embedder
from tests.support.pg_files import database_files

KEY_ENV = "AGENT_NOTEBOOK_KEY"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
THREAD = {"configurable": {"thread_id": "t-rot"}}
TEXTS = [
    "Quillomar booked the night train to Vladivostok for the ninth of June.",
    "The zephyrine password hint is the name of the first cat, Marmaduke.",
    "Did Ana pay the xylocarp invoice of 418 euros to the Bellecour hotel?",
    "Remember that the oncologist moved the appointment to Thursday morning.",
]


@pytest.fixture(autouse=True)
def _no_key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


def write_config(home: Path, url: str, key: Path | None) -> None:
    home.mkdir(mode=0o700, exist_ok=True)
    text = f"backend: {url}\n"
    if key is not None:
        text += f"privacy:\n  encryption:\n    enabled: true\n    key_file: {key}\n"
    (home / "config.yaml").write_text(text)


def fill(nb: Notebook, started: datetime = T0) -> list[str]:
    session = nb.start_session("Quillomar trip planning", started=started)
    moments = nb.record_many(
        session.id,
        [
            {"text": text, "speaker": "Ana", "timestamp": started + timedelta(minutes=i)}
            for i, text in enumerate(TEXTS)
        ],
    )
    nb.decide(session.id, "Take the Vladivostok train", "zephyrine is cheaper")
    return [m.id for m in moments]


def rows_as_text(url: str) -> str:
    """Every row of every table of the schema, as PostgreSQL prints it (bytea as hex)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchall()
        ]
        return "\n".join(
            str(row[0])
            for table in tables
            for row in conn.execute(f"SELECT t::text FROM {table} t").fetchall()
        )


def marks_of(kid: bytes) -> list[str]:
    """How a blob sealed under key ``kid`` shows in a row's text: a bytea's hex, a sealed
    text's base64 (its first 12 bytes are 16 characters), a sealed concept name."""
    head = MAGIC + kid
    return [head.hex(), base64.urlsafe_b64encode(head).decode(), f"~{kid.hex()}:"]


def blobs(url: str) -> list[bytes]:
    """The vectors and the checkpoints' serialised values of the schema."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute(
            "SELECT vector FROM moment_vectors UNION ALL SELECT blob FROM checkpoint_blobs "
            "WHERE blob IS NOT NULL UNION ALL SELECT blob FROM checkpoint_writes"
        ).fetchall()
    return [bytes(blob) for (blob,) in found]


def snapshot(nb: Notebook, ids: list[str]) -> dict[str, Any]:
    """What the notebook reads back, to compare before and after a rotation."""
    graph = build_chat_graph(nb, model=FakeListChatModel(responses=["unused"]))
    state = graph.get_state(THREAD).values  # type: ignore[arg-type]
    return {
        "moments": [m.content.text for m in nb.backend.get_moments(ids)],
        "sessions": [(s.id, s.task, len(s.decisions)) for s in nb.backend.list_sessions()],
        "lexical": [h.moment.id for h in nb.search("xylocarp Marmaduke", mode="lexical")],
        "vector": [h.moment.id for h in nb.search(TEXTS[1], mode="vector")],
        "concepts": [c.concept for c in nb.backend.list_concepts()],
        "vectors": nb.backend.get_vectors(nb.backend.vector_models()[0]),
        "messages": [m.text for m in state["messages"]],
        "section": asyncio.run(nb.session_notebook("t-rot").get_section("Current State")),
        "store": nb.store.get(("app",), "note").value,  # type: ignore[union-attr]
    }


def cli(home: Path, *args: str) -> Any:
    return as_text(run(["key", *args, "--home", str(home)]))


def test_the_cli_rotates_a_postgres_notebook_and_no_row_keeps_the_old_key(
    tmp_path: Path,
) -> None:
    url, home = pg.url_with_schema(tmp_path), tmp_path / "home"
    old_key, new_key = generate_key(), generate_key()
    old_file = write_key_file(tmp_path / "keys" / "old", old_key)
    new_file = write_key_file(tmp_path / "keys" / "new", new_key)
    write_config(home, url, old_file)

    def opened(key: bytes) -> Notebook:
        """The home's notebook, with an embedder that gives the same vectors every time."""
        backend = PostgresBackend(url, cipher=Cipher(key))
        backend.local_dir = home
        config = cfg.load_config(home)
        embedder = fake_embedder()
        return Notebook(
            backend, home=home, config=config, embedder=embedder, background_embedding=False
        )

    nb = opened(old_key)
    try:
        ids = fill(nb)
        assert nb.reindex() == len(TEXTS)
        graph = build_chat_graph(nb, model=FakeListChatModel(responses=["Noted, xylocarp."]))
        graph.invoke({"messages": [HumanMessage(TEXTS[2])]}, THREAD)  # type: ignore[arg-type]
        asyncio.run(nb.session_notebook("t-rot").update_section("Current State", TEXTS[3]))
        nb.store.put(("app",), "note", {"text": TEXTS[0]}, index=False)
        before = snapshot(nb, ids)
    finally:
        nb.close()
    assert before["vector"][0] == ids[1] and before["concepts"] and before["messages"]
    rows = rows_as_text(url)
    assert any(mark in rows for mark in marks_of(key_id(old_key)))

    rotated = cli(home, "rotate", "--new-key-file", str(new_file))
    assert rotated.returncode == 0, rotated.stderr
    assert "sealed again under key" in rotated.stdout and "switch" in rotated.stderr
    assert " 0 records" not in rotated.stdout and " 0 checkpoints" not in rotated.stdout
    again = cli(home, "rotate", "--new-key-file", str(new_file))
    assert again.returncode == 0, again.stderr
    assert "0 records, 0 archive files, 0 checkpoints" in again.stdout  # nothing left to do

    with pytest.raises(WrongKey, match="encrypted with key"):  # the old key alone fails
        Notebook.open(home, background_embedding=False)
    write_config(home, url, new_file)
    nb = opened(new_key)
    try:
        assert snapshot(nb, ids) == before
    finally:
        nb.close()
    rows = rows_as_text(url)
    assert not [mark for mark in marks_of(key_id(old_key)) if mark in rows]
    assert all(mark in rows for mark in marks_of(key_id(new_key)))
    assert {sealed_key_id(blob) for blob in blobs(url)} == {key_id(new_key)}
    _, tables = database_files(url)  # skips where the data directory is not readable
    head = MAGIC + key_id(old_key)
    for path in tables:
        data = path.read_bytes()
        assert head not in data and base64.urlsafe_b64encode(head) not in data, path.name


def test_a_rotation_stopped_half_way_finishes_when_run_again(tmp_path: Path) -> None:
    """Moments 1-4 and 9-12 under the old key, 5-8 under a third one the first run lacks
    (and a thread's checkpoint of each): it seals batches until the third key's and fails
    there; every row is readable with one of the keys; the run with all of them finishes,
    and the new key alone is enough."""
    name = pg.schema_for(tmp_path)
    old, third, new = generate_key(), generate_key(), generate_key()

    def notebook(cipher: Cipher) -> Notebook:
        backend = PostgresBackend(pg.database_url(), schema_name=name, cipher=cipher)
        return Notebook(backend, embedder=fake_embedder(), background_embedding=False)

    ids = []
    threads = [{"configurable": {"thread_id": f"t{i}", "checkpoint_ns": ""}} for i in range(3)]
    checkpoint = {
        **empty_checkpoint(),
        "channel_values": {"messages": [TEXTS[0]]},
        "channel_versions": {"messages": "1"},
    }
    for thread, (cipher, started) in zip(
        threads,
        [
            (Cipher(old), T0),
            (Cipher(third, also=[old]), T0 - timedelta(days=1)),  # not the newest session
            (Cipher(old, also=[third]), T0 + timedelta(days=1)),
        ],
        strict=True,
    ):
        nb = notebook(cipher)
        ids += fill(nb, started)
        nb.reindex()
        nb.checkpointer.put(thread, checkpoint, {"source": "input", "step": 0}, {"messages": "1"})  # type: ignore[arg-type]
        nb.close()

    nb = notebook(Cipher(new, also=[old]))
    pool = open_pool(nb.backend)
    try:
        with pytest.raises((WrongKey, StorageError), match="encrypted with key"):
            nb.backend.reseal(batch=2)  # type: ignore[attr-defined]
        with pytest.raises(WrongKey, match="encrypted with key"):
            reseal_checkpoints(pool, Cipher(new, also=[old]), batch=1)
    finally:
        nb.close()
    import psycopg

    with psycopg.connect(pg.database_url(), autocommit=True) as conn:
        bodies = conn.execute(f"SELECT body FROM {name}.moments ORDER BY num").fetchall()
        found = conn.execute(f"SELECT blob FROM {name}.checkpoint_blobs ORDER BY thread_id")
        blob_kids = [sealed_key_id(bytes(blob)) for (blob,) in found.fetchall()]
    kids = [Cipher.text_key_id(body.split('"')[3]) for (body,) in bodies]
    assert kids == [key_id(new)] * 4 + [key_id(third)] * 4 + [key_id(old)] * 4
    assert blob_kids == [key_id(new), key_id(third), key_id(old)]

    nb = notebook(Cipher(new, also=[old, third]))
    try:
        assert [m.content.text for m in nb.backend.get_moments(ids)] == TEXTS * 3
        assert nb.backend.reseal(batch=2) > 0  # type: ignore[attr-defined]
        assert nb.backend.reseal(batch=2) == 0  # type: ignore[attr-defined]
        assert reseal_checkpoints(pool, Cipher(new, also=[old, third]), batch=1) == 2
        assert reseal_checkpoints(pool, Cipher(new), batch=1) == 0
    finally:
        nb.close()
        pool.close()
    nb = notebook(Cipher(new))
    try:
        assert [m.content.text for m in nb.backend.get_moments(ids)] == TEXTS * 3
        for thread in threads:
            saved = nb.checkpointer.get(thread)  # type: ignore[arg-type]
            assert saved is not None and saved["channel_values"]["messages"] == [TEXTS[0]]
        hits = {h.moment.id for h in nb.search("Marmaduke", mode="lexical")}
        assert hits == {ids[1], ids[5], ids[9]}
        assert nb.search(TEXTS[2], mode="vector")[0].moment.id in {ids[2], ids[6], ids[10]}
    finally:
        nb.close()


def test_rotating_to_its_key_seals_a_postgres_notebook_started_in_plain_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
    url, home = pg.url_with_schema(tmp_path), tmp_path / "home"
    write_config(home, url, None)
    with Notebook.open(home, background_embedding=False) as nb:
        ids = fill(nb)
        graph = build_chat_graph(nb, model=FakeListChatModel(responses=["Noted, Quillomar."]))
        graph.invoke({"messages": [HumanMessage(TEXTS[0])]}, THREAD)  # type: ignore[arg-type]
        nb.store.put(("app",), "note", {"text": TEXTS[1]}, index=False)
    assert "Quillomar" in rows_as_text(url)
    key = write_key_file(tmp_path / "keys" / "key", generate_key())
    write_config(home, url, key)
    rotated = cli(home, "rotate", "--new-key-file", str(key))
    assert rotated.returncode == 0, rotated.stderr
    rows = rows_as_text(url)
    for word in ("Quillomar", "zephyrine", "Vladivostok", "Marmaduke"):
        assert word not in rows, word
    with Notebook.open(home, background_embedding=False) as nb:
        assert [m.content.text for m in nb.backend.get_moments(ids)] == TEXTS
        assert nb.search("Marmaduke", mode="lexical")[0].moment.id == ids[1]
        state = build_chat_graph(nb, model=FakeListChatModel(responses=["x"])).get_state(THREAD)  # type: ignore[arg-type]
        assert [m.text for m in state.values["messages"]] == [TEXTS[0], "Noted, Quillomar."]
        assert nb.store.get(("app",), "note").value == {"text": TEXTS[1]}  # type: ignore[union-attr]
