"""What only the PostgreSQL checkpointer's kept delta values (issue 17) have to get right,
beside the scenarios both savers run (``test_saver_history``): values stored in
``checkpoint_blobs`` rewritten, a key rotation of sealed checkpoints, servers setting up
the triggers at once, a trigger gone. On the real server (see ``pg``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from agent_notebook.core.crypto import Cipher, generate_key
from agent_notebook.langgraph.checkpoint.postgres import reseal_checkpoints
from agent_notebook.langgraph.checkpoint.postgres_history import EPOCH_TRIGGERS
from tests.support.chat_threads import (
    PostgresDb,
    chat_graph,
    configs,
    expected,
    fresh_read,
    read,
    run,
    thread,
)


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[PostgresDb]:
    made = PostgresDb(tmp_path)
    yield made
    made.close()


def triggers(backend: PostgresDb) -> int:
    import psycopg

    with psycopg.connect(backend.url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'checkpoint_history_%' "
            "AND tgrelid IN (to_regclass('checkpoints'), to_regclass('checkpoint_writes'), "
            "to_regclass('checkpoint_blobs'))"
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_rewritten_blob_is_seen_and_a_repeated_insert_changes_nothing(
    backend: PostgresDb,
) -> None:
    saver = backend.saver()
    graph = chat_graph(saver)
    run(graph, range(5))
    kept = saver.get_tuple(thread())
    checkpoint = kept.checkpoint
    checkpoint["channel_values"]["messages"] = _DeltaSnapshot(expected_messages(5))
    saver._rewrite_checkpoint(kept, checkpoint)  # a snapshot blob at its version
    run(graph, range(5, 7))
    assert read(saver) == expected(7) == fresh_read(backend)
    before = backend.epoch()
    backend.execute(  # LangGraph's put of a blob already there: ON CONFLICT DO NOTHING
        "INSERT INTO checkpoint_blobs SELECT * FROM checkpoint_blobs ON CONFLICT DO NOTHING"
    )
    assert backend.epoch() == before
    kind, blob = saver.serde.dumps_typed(_DeltaSnapshot([HumanMessage("rewritten")]))
    backend.execute(
        f"UPDATE checkpoint_blobs SET type = '{kind}', blob = '\\x{blob.hex()}'::bytea "
        "WHERE channel = 'messages'"
    )
    assert backend.epoch() > before
    assert read(saver) == [("human", "rewritten"), *expected(7, 5)] == fresh_read(backend)
    before = backend.epoch()
    backend.execute("DELETE FROM checkpoint_blobs WHERE channel = 'messages'")
    assert backend.epoch() > before  # (the thread is broken now: its snapshot gone)


def expected_messages(turns: int) -> list[Any]:
    from langchain_core.messages import AIMessage

    return [HumanMessage(t) if kind == "human" else AIMessage(t) for kind, t in expected(turns)]


def test_a_key_rotation_of_sealed_checkpoints_is_seen(backend: PostgresDb) -> None:
    old, new = generate_key(), generate_key()
    saver = backend.saver()
    saver.serde = EncryptedSerializer(Cipher(old, also=[new]).checkpoint_cipher(), saver.serde)
    graph = chat_graph(saver)
    run(graph, range(4))
    assert read(saver) == expected(4)
    before = backend.epoch()
    assert reseal_checkpoints(saver.pool, Cipher(new, also=[old]), batch=3) > 0
    assert backend.epoch() > before  # every row sealed again: nothing kept is used
    rotated = backend.saver()
    rotated.serde = EncryptedSerializer(Cipher(new, also=[old]).checkpoint_cipher(), rotated.serde)
    assert read(saver) == read(rotated) == expected(4)
    run(graph, range(4, 6))
    assert read(saver) == read(rotated) == expected(6)


def test_servers_setting_up_at_once_install_the_triggers_once(backend: PostgresDb) -> None:
    savers = [backend.saver()]  # the tables
    errors: list[BaseException] = []

    def start() -> None:
        try:
            savers.append(backend.saver())
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    backend.execute("DROP TABLE checkpoint_history_epoch")
    for name, table, *_ in EPOCH_TRIGGERS:
        backend.execute(f"DROP TRIGGER {name} ON {table}")
    starts = [threading.Thread(target=start) for _ in range(4)]
    for t in starts:
        t.start()
    for t in starts:
        t.join()
    assert errors == []
    assert triggers(backend) == len(EPOCH_TRIGGERS)
    run(chat_graph(savers[-1]), range(3))
    assert read(savers[1]) == expected(3) == fresh_read(backend)


def test_without_every_trigger_nothing_is_kept_and_reads_are_exact(backend: PostgresDb) -> None:
    saver = backend.saver()
    run(chat_graph(saver), range(3))
    assert saver._history._entries
    backend.execute("DROP TRIGGER checkpoint_history_w_update ON checkpoint_writes")
    saver._history.clear()
    assert read(saver) == expected(3)
    assert not saver._history._entries
    older = configs(saver)[1]
    saver.put_writes(older, [("messages", [HumanMessage("late")])], "x")
    assert read(saver) == fresh_read(backend)
    assert triggers(backend) == len(EPOCH_TRIGGERS)  # the fresh saver's setup put it back
    assert read(saver) == fresh_read(backend)
    assert saver._history._entries
