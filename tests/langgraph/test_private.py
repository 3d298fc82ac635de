"""The private LangGraph names agent-notebook keeps (``agent_notebook.langgraph.private``
says why) are still where and what we use: each check fails naming the symbol and the
installed LangGraph versions, so an upgrade that moves one fails here, loudly, and not as a
wrong answer somewhere else. And no other module imports a private LangGraph name."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sqlite3
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest

from agent_notebook.langgraph import private

SRC = Path(private.__file__).resolve().parents[1]
ROOT = SRC.parents[1]
PACKAGES = (
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
)


def installed() -> str:
    found = []
    for package in PACKAGES:
        try:
            found.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            found.append(f"{package} (not installed)")
    return ", ".join(found)


def moved(symbol: str, what: str) -> str:
    return (
        f"LangGraph changed the private {symbol}: {what} (installed: {installed()}). "
        "Adapt agent_notebook/langgraph/private.py (its docstring says why it is used), "
        "or drop the use"
    )


def resolve(path: str) -> Any:
    """``module.name`` or ``module.Class.name``, importing the module."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(value, name):
                pytest.fail(moved(path, f"{'.'.join(parts[:cut])} has no {name!r}"))
            value = getattr(value, name)
        return value
    pytest.fail(moved(path, "its module is gone"))


#: Each private function we call: the parameters we pass by name (or position) must be there.
SIGNATURES = {
    "langgraph.pregel._executor.get_executor_for_config": ["config"],
    "langgraph.graph.message._messages_delta_reducer": ["state", "writes"],
    "langgraph.checkpoint.sqlite._delta.build_delta_stage2_sql": ["chain_lens", "has_task_path"],
    "langgraph.checkpoint.sqlite._delta.step_walk_with_row": [
        "cid",
        "type_tag",
        "blob",
        "target_id",
        "serde",
        "chain_by_ch",
        "seed_val_by_ch",
        "walk_state",
        "seeded",
        "channels",
    ],
    "langgraph.checkpoint.sqlite._delta.build_delta_channels_writes_history": [
        "channels",
        "chain_by_ch",
        "seed_val_by_ch",
        "seeded",
        "stage2_rows",
        "serde",
    ],
    "langgraph.checkpoint.postgres.base._build_delta_stage1_sql": ["channels", "paged"],
    "langgraph.checkpoint.postgres.base._build_delta_stage2_sql": [
        "channels_with_chain",
        "channels_with_seed",
    ],
    "langgraph.checkpoint.postgres.base.BasePostgresSaver._ingest_stage1_page": [
        "stage1_rows",
        "channels",
        "parent_of",
        "ver_by_i_by_cid",
        "hb_by_i_by_cid",
        "inline_by_i_by_cid",
    ],
    "langgraph.checkpoint.postgres.base.BasePostgresSaver._try_advance_walks": [
        "target_id",
        "channels",
        "parent_of",
        "ver_by_i_by_cid",
        "hb_by_i_by_cid",
        "inline_by_i_by_cid",
        "chain_by_ch",
        "seed_ver_by_ch",
        "seed_inline_by_ch",
        "walk_cursor_by_ch",
        "seeded",
    ],
    "langgraph.checkpoint.postgres.base.BasePostgresSaver._build_delta_channels_writes_history": [
        "channels",
        "chain_by_ch",
        "seed_ver_by_ch",
        "seed_inline_by_ch",
        "stage2_rows",
    ],
    "langgraph.store.sqlite.base._ensure_index_config": ["index_config"],
    "langgraph.store.sqlite.base._namespace_to_text": ["namespace"],
    "langgraph.store.sqlite.base._decode_ns_text": ["namespace"],
    "langgraph.store.sqlite.base._json_loads": ["content"],
    "langgraph.store.sqlite.base._row_to_search_item": ["namespace", "row", "loader"],
    "langgraph.store.sqlite.base._validate_filter_key": ["key"],
    "langgraph.store.postgres.base._ensure_index_config": ["index_config"],
    "langgraph.store.postgres.base._namespace_to_text": ["namespace"],
    "langgraph.store.postgres.base._decode_ns_bytes": ["namespace"],
    "langgraph.store.postgres.base._json_loads": ["content"],
    "langgraph.store.postgres.base._row_to_search_item": ["namespace", "row", "loader"],
}


@pytest.mark.parametrize("symbol", sorted(SIGNATURES))
def test_private_function_keeps_its_parameters(symbol: str) -> None:
    function = resolve(symbol)
    if not callable(function):
        pytest.fail(moved(symbol, f"it is a {type(function).__name__}, not a function"))
    have = list(inspect.signature(function).parameters)
    lost = [name for name in SIGNATURES[symbol] if name not in have]
    assert not lost, moved(symbol, f"parameters {lost} are gone (it takes {have})")


@pytest.mark.parametrize(
    ("owner", "member"),
    [(owner, member) for owner, members in private.PRIVATE_MEMBERS.items() for member in members],
)
def test_private_member_of_a_base_class_is_there(owner: str, member: str) -> None:
    cls = resolve(owner)
    assert hasattr(cls, member), moved(f"{owner}.{member}", "the class no longer has it")


def test_private_instance_attributes_are_set() -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.store.sqlite import SqliteStore

    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        made = {
            "langgraph.checkpoint.sqlite.SqliteSaver": SqliteSaver(conn),
            "langgraph.store.sqlite.SqliteStore": SqliteStore(conn),
        }
        assert set(made) == set(private.PRIVATE_INSTANCE_ATTRIBUTES)
        for owner, names in private.PRIVATE_INSTANCE_ATTRIBUTES.items():
            for name in names:
                assert hasattr(made[owner], name), moved(
                    f"{owner}.{name}", "its __init__ no longer sets it"
                )
    finally:
        conn.close()


def test_sqlite_stage1_sql_is_a_statement() -> None:
    sql = resolve("langgraph.checkpoint.sqlite._delta.DELTA_STAGE1_SQL")
    assert isinstance(sql, str), moved("DELTA_STAGE1_SQL", f"a {type(sql).__name__}")
    assert sql.count("?") == 5, moved("DELTA_STAGE1_SQL", "it takes other parameters")


def test_delta_snapshot_wraps_a_value() -> None:
    snapshot_class = resolve("langgraph.checkpoint.serde.types._DeltaSnapshot")
    assert private.DeltaSnapshot is snapshot_class
    assert snapshot_class([1]).value == [1], moved("_DeltaSnapshot", "no .value")


def test_messages_delta_reducer_is_the_one_langgraph_recognises() -> None:
    """LangGraph finds a messages delta channel by this very function (not a copy)."""
    reducer = resolve("langgraph.graph.message._messages_delta_reducer")
    assert private.messages_delta_reducer is reducer
    source = inspect.getsource(importlib.import_module("langgraph.pregel._messages"))
    assert "is _messages_delta_reducer" in source, moved(
        "_messages_delta_reducer", "pregel/_messages.py no longer checks the reducer by identity"
    )
    from langchain_core.messages import AIMessage, HumanMessage

    merged = reducer([HumanMessage("hi", id="1")], [[AIMessage("hello", id="2")]])
    assert [m.id for m in merged] == ["1", "2"], moved("_messages_delta_reducer", "merges else")


def test_an_empty_channel_checkpoint_is_nothing_stored() -> None:
    """The public route that replaced ``langgraph._internal._typing.MISSING``."""
    from langgraph.channels.delta import DeltaChannel

    empty: DeltaChannel[Any] = DeltaChannel(private.messages_delta_reducer)
    channel = empty.from_checkpoint(empty.checkpoint())
    assert channel.get() == [], moved("DeltaChannel.checkpoint()", "no longer 'nothing stored'")


def test_the_executor_patch_is_in_place() -> None:
    from agent_notebook.chat.executor import keep_pool

    module = private.executor_module()
    assert module is not None, moved(private.EXECUTOR_MODULE, "the module is gone")
    assert hasattr(module, "get_executor_for_config"), moved(
        f"{private.EXECUTOR_MODULE}.get_executor_for_config", "the module has no such name"
    )
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class Count(TypedDict):
        n: int

    graph = StateGraph(Count)
    graph.add_node("add", lambda state: {"n": state["n"] + 1})
    graph.add_edge(START, "add")
    graph.add_edge("add", END)
    kept = keep_pool(graph.compile())  # installs the patch (once)
    assert getattr(module.get_executor_for_config, "_agent_notebook", False)
    assert kept.invoke({"n": 1}) == {"n": 2}  # a run on the kept pool
    source = inspect.getsource(module)
    assert "get_executor_for_config(config)" in source, moved(
        f"{private.EXECUTOR_MODULE}.get_executor_for_config",
        "LangGraph's runs no longer call it through this module, so the patch does nothing",
    )


# -- the versions these checks run against are the ones pyproject.toml allows -------------


def pinned_minors() -> dict[str, tuple[int, int]]:
    """``{package: (major, minor)}`` of each LangGraph package pyproject.toml requires, each
    required as ``>=X.Y,<X.Y+1`` (one minor: a new one may move a private name)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = project["dependencies"] + project["optional-dependencies"]["postgres"]
    found = {}
    for requirement in requirements:
        name = re.split(r"[<>=\[ ]", requirement, maxsplit=1)[0]
        if name not in PACKAGES:
            continue
        bounds = re.fullmatch(rf"{re.escape(name)}>=(\d+)\.(\d+),<(\d+)\.(\d+)", requirement)
        assert bounds, f"pyproject.toml: {requirement!r} is not one minor (>=X.Y,<X.Y+1)"
        major, minor, upper_major, upper_minor = map(int, bounds.groups())
        assert (upper_major, upper_minor) == (major, minor + 1), requirement
        found[name] = (major, minor)
    return found


def test_langgraph_is_pinned_to_the_minor_versions_checked_here() -> None:
    pins = pinned_minors()
    assert set(pins) == set(PACKAGES), f"pyproject.toml pins {sorted(pins)}, not {PACKAGES}"
    constraints = (ROOT / "constraints.txt").read_text(encoding="utf-8")
    for package, (major, minor) in pins.items():
        exact = re.search(rf"^{re.escape(package)}==(\d+)\.(\d+)\.", constraints, re.MULTILINE)
        assert exact, f"constraints.txt has no exact version of {package}"
        assert tuple(map(int, exact.groups())) == (major, minor), (package, exact[0])
        try:
            installed_minor = tuple(map(int, version(package).split(".")[:2]))
        except PackageNotFoundError:
            continue  # the postgres extra is optional
        assert installed_minor == (major, minor), (
            f"{package} {version(package)} is installed, pyproject.toml pins {major}.{minor}: "
            "these checks ran against another minor than the one shipped"
        )


# -- no private LangGraph import outside private.py ------------------------------------------


def private_langgraph_imports(source: str) -> list[str]:
    """``module.name`` of each private LangGraph name ``source`` imports (a ``_`` part)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "langgraph":
                continue
            private_module = any(part.startswith("_") for part in node.module.split("."))
            for alias in node.names:
                if private_module or alias.name.startswith("_"):
                    found.append(f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "langgraph" and any(p.startswith("_") for p in parts):
                    found.append(alias.name)
    found += re.findall(r"[\"'](langgraph(?:\.\w+)*\._\w+)", source)  # import_module("…")
    return found


def test_the_import_check_sees_every_form() -> None:
    source = (
        "from langgraph.graph.message import _messages_delta_reducer\n"
        "from langgraph.checkpoint.sqlite._delta import DELTA_STAGE1_SQL\n"
        "import langgraph._internal._typing\n"
        "from langgraph.graph import StateGraph\n"
        "import_module('langgraph.pregel._executor')\n"
    )
    assert private_langgraph_imports(source) == [
        "langgraph.graph.message._messages_delta_reducer",
        "langgraph.checkpoint.sqlite._delta.DELTA_STAGE1_SQL",
        "langgraph._internal._typing",
        "langgraph.pregel._executor",
    ]


def test_no_module_but_private_imports_a_private_langgraph_name() -> None:
    found = {
        str(path.relative_to(SRC)): names
        for path in sorted(SRC.rglob("*.py"))
        if path != Path(private.__file__).resolve()
        and (names := private_langgraph_imports(path.read_text(encoding="utf-8")))
    }
    assert not found, (
        f"private LangGraph names imported outside agent_notebook/langgraph/private.py: "
        f"{found}; import them from there (and say why in its docstring)"
    )
