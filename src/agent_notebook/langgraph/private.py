"""Every private LangGraph name agent-notebook uses, and only here.

LangGraph may move or change a private name in any release. Each one below is kept for a
gain (measured by ``bench/langgraph_private.py`` where it is speed or size; figures below
from one run on a loaded machine: compare within a run), and
``tests/langgraph/test_private.py`` checks each (its module, its signature or attributes)
against the installed LangGraph, naming the symbol and the version when one moved. No other
module imports a private LangGraph name (that test checks it too). ``pyproject.toml`` pins
LangGraph's packages (``langgraph``, ``langgraph-checkpoint``, its SQLite and PostgreSQL
savers) to the one minor version each that these checks run against (``constraints.txt``'s),
and the test checks that too: a new minor may move a private name, so moving to one is a
change here, its checks run first.

Kept:

- ``langgraph.pregel._executor.get_executor_for_config``, opt-in only
  (``chat.kept_thread_pool: true``; off by default): then replaced for the process by
  :mod:`agent_notebook.chat.executor` (through :func:`executor_module`), so a chat turn runs
  its checkpoint saves on one kept thread pool instead of a pool LangGraph makes and shuts
  down at each ``invoke``; other graphs keep LangGraph's pool. Gain, 2026-12-06 at load 3-5
  on 2 cores (issue 38): a timed turn's median, interleaved, 18.35 against 20.28 ms and
  21.62 against 25.20 ms (``bench/chat_turns_ab.py`` variant e, turns 100-400; CPU 12.80
  against 13.33 and 14.45 against 15.50 ms), 18.93 against 20.49 ms
  (``bench/langgraph_private.py``); 200 turns as whole processes, 5 runs each: CPU time
  1.00x and 1.05x (min-max 0.98-1.07), wall 1.16x and 1.06x (0.48-1.27): within their
  noise. Small and seen only per turn, on a machine where a new thread waits for a core:
  not worth a process-wide replacement by default.
- ``langgraph.graph.message._messages_delta_reducer`` (:data:`messages_delta_reducer`): the
  reducer of the chat's ``messages`` ``DeltaChannel``, so a checkpoint stores the messages
  written, not the whole list each turn. LangGraph offers no public name for it and
  recognises the channel by this very function (``spec.reducer is _messages_delta_reducer``
  in ``pregel/_messages.py``), so a look-alike of ours would lose that. Gain: after 120
  turns the checkpoint file is 4.62 MB against 26.29 MB with ``add_messages`` (5.7x less),
  at the same turn time (31.0 ms against 31.7 ms, median).
- ``langgraph.checkpoint.serde.types._DeltaSnapshot`` (:data:`DeltaSnapshot`): how a delta
  channel's whole value is stored; the savers read it as its plain value and rewrite
  checkpoints with it. Needed by the delta channel above (no public name): same gain.
- ``langgraph.checkpoint.sqlite._delta`` (the SQLite walk) and ``langgraph.checkpoint.
  postgres.base``'s ``_build_delta_stage1_sql``, ``_build_delta_stage2_sql`` and the
  saver's walk methods (the PostgreSQL walk): LangGraph's own read of a delta channel's
  history, which ``sqlite_history``/``postgres_history`` stop at the value the last turn
  read (``delta_history``), so a turn replays only the writes since then, not every write
  since the last snapshot. Gain: a turn's read 0.41 ms against 9.04 ms with the public
  ``get_delta_channel_history`` (22x; median of 100 reads each, interleaved).
- ``langgraph.store.sqlite.base`` and ``langgraph.store.postgres.base``'s
  ``_ensure_index_config``, ``_namespace_to_text``, ``_decode_ns_text``/``_decode_ns_bytes``,
  ``_json_loads`` and ``_row_to_search_item``: how LangGraph's stores validate an index
  config and spell namespaces, values and search hits in their tables. Our stores subclass
  them and must write and read the same rows; a copy of ours would drift silently when
  LangGraph changes its format, where this fails loudly. Not a speed gain: none to measure.
- ``langgraph.store.sqlite.base._validate_filter_key``: which filter keys ``SqliteStore``
  takes; the PostgreSQL store's filters (:mod:`.store.filters`) take the same ones, so a
  filter means the same on both backends. Not a speed gain.
- The private members of LangGraph's savers and stores that our subclasses call or
  override (:data:`PRIVATE_MEMBERS`, :data:`PRIVATE_INSTANCE_ATTRIBUTES`): a subclass has no
  other way to their connections and hooks. Listed here so the test checks each of them.

Dropped: ``langgraph._internal._typing.MISSING`` (the "nothing stored" marker of a delta
channel): an empty channel's own ``checkpoint()`` gives it through the public channel API.

The PostgreSQL names are imported when first used: the ``postgres`` extra is optional.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, Final

from langgraph.checkpoint.base import DeltaChannelHistory
from langgraph.checkpoint.serde.types import _DeltaSnapshot as DeltaSnapshot
from langgraph.checkpoint.sqlite._delta import (
    DELTA_STAGE1_SQL,
    build_delta_channels_writes_history,
    build_delta_stage2_sql,
    step_walk_with_row,
)
from langgraph.graph.message import _messages_delta_reducer
from langgraph.store.sqlite.base import (
    _decode_ns_text,
    _ensure_index_config,
    _json_loads,
    _namespace_to_text,
    _row_to_search_item,
    _validate_filter_key,
)

__all__ = [
    "EXECUTOR_MODULE",
    "PRIVATE_INSTANCE_ATTRIBUTES",
    "PRIVATE_MEMBERS",
    "SQLITE_DELTA_STAGE1_SQL",
    "DeltaSnapshot",
    "executor_module",
    "messages_delta_reducer",
    "pg_build_writes_history",
    "pg_delta_stage1_sql",
    "pg_delta_stage2_sql",
    "pg_ingest_stage1_page",
    "pg_store_decode_namespace",
    "pg_store_ensure_index_config",
    "pg_store_json_loads",
    "pg_store_namespace_text",
    "pg_store_search_item",
    "pg_try_advance_walks",
    "sqlite_delta_stage2_sql",
    "sqlite_delta_writes_history",
    "sqlite_step_walk_with_row",
    "sqlite_store_decode_namespace",
    "sqlite_store_ensure_index_config",
    "sqlite_store_json_loads",
    "sqlite_store_namespace_text",
    "sqlite_store_search_item",
    "sqlite_store_validate_filter_key",
]

#: Private members of LangGraph's classes that our subclasses use or override (their state
#: and hooks: a subclass cannot reach them otherwise), by class; tests check they are there.
PRIVATE_MEMBERS: Final = {
    "langgraph.checkpoint.postgres.base.BasePostgresSaver": (
        "_build_delta_channels_writes_history",
        "_dump_blobs",
        "_ingest_stage1_page",
        "_try_advance_walks",
    ),
    "langgraph.checkpoint.postgres.PostgresSaver": ("_cursor",),
    "langgraph.store.postgres.PostgresStore": (
        "_batch_search_ops",
        "_cursor",
        "_deserializer",
        "_get_filter_condition",
        "_prepare_batch_search_queries",
    ),
    "langgraph.store.sqlite.SqliteStore": (
        "_batch_search_ops",
        "_cursor",
        "_get_filter_condition",
        "_prepare_batch_search_queries",
    ),
}
#: The same, set by their ``__init__`` (on an instance, not on the class).
PRIVATE_INSTANCE_ATTRIBUTES: Final = {
    "langgraph.checkpoint.sqlite.SqliteSaver": ("_has_task_path",),
    "langgraph.store.sqlite.SqliteStore": ("_deserializer",),
}

# -- the chat graph ---------------------------------------------------------------------------

#: The module whose ``get_executor_for_config`` LangGraph's runs call for their pool.
EXECUTOR_MODULE: Final = "langgraph.pregel._executor"

messages_delta_reducer: Final = _messages_delta_reducer


def executor_module() -> ModuleType | None:
    """LangGraph's executor module, or None when this LangGraph has none (then the chat
    graph keeps LangGraph's own pool)."""
    try:
        return importlib.import_module(EXECUTOR_MODULE)
    except ImportError:
        return None


# -- the SQLite checkpointer's history walk --------------------------------------------------

SQLITE_DELTA_STAGE1_SQL: Final = DELTA_STAGE1_SQL
sqlite_delta_stage2_sql: Final = build_delta_stage2_sql
sqlite_step_walk_with_row: Final = step_walk_with_row
sqlite_delta_writes_history: Final = build_delta_channels_writes_history

# -- the SQLite store's row format -----------------------------------------------------------

sqlite_store_ensure_index_config: Final[Callable[..., tuple[Any, Any]]] = _ensure_index_config
sqlite_store_namespace_text: Final = _namespace_to_text
sqlite_store_decode_namespace: Final = _decode_ns_text
sqlite_store_json_loads: Final = _json_loads
sqlite_store_search_item: Final = _row_to_search_item
sqlite_store_validate_filter_key: Final[Callable[[str], None]] = _validate_filter_key

# -- PostgreSQL (the optional extra): imported when first used --------------------------------


def pg_delta_stage1_sql(channels: Sequence[str]) -> str:
    """PostgresSaver's first stage of a delta history read, unpaged."""
    from langgraph.checkpoint.postgres.base import _build_delta_stage1_sql

    return _build_delta_stage1_sql(list(channels), paged=False)


def pg_delta_stage2_sql(
    *, channels_with_chain: Sequence[str], channels_with_seed: Sequence[str]
) -> str:
    """PostgresSaver's second stage (the writes and seeds); empty when nothing to read."""
    from langgraph.checkpoint.postgres.base import _build_delta_stage2_sql

    return _build_delta_stage2_sql(
        channels_with_chain=list(channels_with_chain), channels_with_seed=list(channels_with_seed)
    )


def pg_ingest_stage1_page(saver: Any, *args: Any) -> Any:
    """``saver._ingest_stage1_page(*args)``: the first stage's rows into the walk's maps."""
    return saver._ingest_stage1_page(*args)


def pg_try_advance_walks(saver: Any, *args: Any) -> None:
    """``saver._try_advance_walks(*args)``: each channel's walk up to its seed."""
    saver._try_advance_walks(*args)


def pg_build_writes_history(saver: Any, **kwargs: Any) -> dict[str, DeltaChannelHistory]:
    """``saver._build_delta_channels_writes_history(**kwargs)``: the histories read."""
    found: dict[str, DeltaChannelHistory] = saver._build_delta_channels_writes_history(**kwargs)
    return found


def pg_store_ensure_index_config(config: Any) -> tuple[Any, Any]:
    from langgraph.store.postgres.base import _ensure_index_config as ensure

    return ensure(config)


def pg_store_namespace_text(namespace: tuple[str, ...]) -> str:
    from langgraph.store.postgres.base import _namespace_to_text

    return _namespace_to_text(namespace)


def pg_store_decode_namespace(namespace: Any) -> tuple[str, ...]:
    from langgraph.store.postgres.base import _decode_ns_bytes

    return _decode_ns_bytes(namespace)


def pg_store_json_loads(content: Any) -> Any:
    from langgraph.store.postgres.base import _json_loads as loads

    return loads(content)


def pg_store_search_item(namespace: tuple[str, ...], row: Any, *, loader: Any = None) -> Any:
    from langgraph.store.postgres.base import _row_to_search_item as to_item

    return to_item(namespace, row, loader=loader)
