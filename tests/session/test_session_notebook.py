"""The session notebook (seed 000) against its seed, on real stores, under concurrency.

* The seed's names, signatures, sections, constants and storage location, read from the
  seed text when it is beside the checkout and always from a hard-coded copy.
* The same behaviour on ``InMemoryStore``, LangGraph's ``SqliteStore`` on a file and a
  notebook's own store (``Notebook.store``).
* ``enforce_budget`` brings every section and the whole notebook within budget and loses
  nothing: each cut piece can be fetched by the reference its marker names.
* Concurrent updates of different sections (tasks, threads, processes) lose nothing.
* ``should_update`` gives the same answer after a process restart.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

import agent_notebook.session as session_pkg
from agent_notebook import Notebook
from agent_notebook.core.tokens import CharEstimate
from agent_notebook.errors import InvalidInput
from agent_notebook.session import (
    SECTIONS,
    SessionBudgets,
    SessionNotebook,
    SessionNotebookSync,
)
from agent_notebook.session.sections import SECTION_NAMES, parse, part, render_parts, template
from agent_notebook.storage.base import MomentFilter
from tests.support import ROOT
from tests.support.waiting import HANG_GUARD_S

SEED_DIR = ROOT.parent / "shared" / "seeds"
SRC = str(ROOT / "src")

# -- the seed's expectations, hard-coded (the seed file is not in every checkout) ------------

EXPECTED_CONSTRUCTOR = ["store", "thread_id"]
EXPECTED_METHODS: dict[str, list[str]] = {
    "initialize": [],
    "load": [],
    "save": ["content"],
    "update_section": ["name", "content"],
    "get_section": ["name"],
    "should_update": ["messages"],
    "estimate_tokens": ["content"],
    "condense_section": ["name", "max_tokens"],
    "enforce_budget": ["max_total"],
}
EXPECTED_SECTIONS: dict[str, str] = {
    "Current State": "Where the conversation stands right now",
    "Task Specification": "What the user asked for",
    "Files and Functions": "Key files and code locations discussed",
    "Workflow": "Steps taken or planned",
    "Errors and Corrections": "Problems encountered and how they were resolved",
    "Key Results": "Important outputs or findings",
    "Worklog": "Chronological activity log",
}
EXPECTED_CONSTANTS: dict[str, int] = {
    "DEFAULT_MESSAGE_THRESHOLD": 6,
    "DEFAULT_TOOL_CALL_THRESHOLD": 4,
    "DEFAULT_MAX_SECTION_TOKENS": 500,
    "DEFAULT_MAX_TOTAL_TOKENS": 3000,
}
EXPECTED_NAMESPACE_ROOT, EXPECTED_KEY = "session", "notebook"
EXPECTED_CHARS_PER_TOKEN = 4


def _seed_text() -> str | None:
    found = sorted(SEED_DIR.glob("000_*.txt")) if SEED_DIR.is_dir() else []
    return found[0].read_text(encoding="utf-8") if found else None


def _table_rows(text: str, title: str) -> list[list[str]]:
    """The tab-separated rows of the table under the line ``title`` (header row dropped)."""
    lines = text.splitlines()
    start = lines.index(title) + 1
    rows: list[list[str]] = []
    for line in lines[start:]:
        if "\t" in line:
            rows.append(line.split("\t"))
        elif rows:  # the first line after the table ends it; prose before it is skipped
            break
    return rows[1:]


def _names(params: str) -> list[str]:
    """``"store: BaseStore, thread_id: str"`` -> ``["store", "thread_id"]``."""
    return [p.split(":")[0].split("=")[0].strip() for p in params.split(",") if p.strip()]


def parse_seed(text: str) -> dict[str, Any]:
    constructor = re.search(r"^SessionNotebook\((.*)\)\s*$", text, re.M)
    storage = re.search(r'namespace \("(\w+)", thread_id\), key "(\w+)"', text)
    chars = re.search(r"\((\d+) chars per token\)", text)
    assert constructor and storage and chars, "the seed's layout changed"
    methods = {}
    for row in _table_rows(text, "Methods"):
        m = re.fullmatch(r"(\w+)\((.*)\)", row[0].strip())
        assert m, row
        methods[m[1]] = _names(m[2])
    constants = {}
    for title in ("Update Thresholds", "Token Budgets"):
        for row in _table_rows(text, title):
            constants[row[0].strip()] = int(row[1].replace(",", ""))
    return {
        "constructor": _names(constructor[1]),
        "methods": methods,
        "sections": {r[0].strip(): r[1].strip() for r in _table_rows(text, "Notebook Sections")},
        "constants": constants,
        "storage": (storage[1], storage[2]),
        "chars_per_token": int(chars[1]),
    }


HARD_CODED = {
    "constructor": EXPECTED_CONSTRUCTOR,
    "methods": EXPECTED_METHODS,
    "sections": EXPECTED_SECTIONS,
    "constants": EXPECTED_CONSTANTS,
    "storage": (EXPECTED_NAMESPACE_ROOT, EXPECTED_KEY),
    "chars_per_token": EXPECTED_CHARS_PER_TOKEN,
}


@pytest.fixture(params=["hard-coded", "seed-file"])
def expected(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "hard-coded":
        return HARD_CODED
    text = _seed_text()
    if text is None:
        pytest.skip(f"no seed 000 in {SEED_DIR} (the hard-coded copy still runs)")
    return parse_seed(text)


def test_seed_file_agrees_with_the_hard_coded_copy() -> None:
    text = _seed_text()
    if text is None:
        pytest.skip(f"no seed 000 in {SEED_DIR}")
    assert parse_seed(text) == HARD_CODED


def test_constructor_takes_store_then_thread_id(expected: dict[str, Any]) -> None:
    for cls in (SessionNotebook, SessionNotebookSync):
        params = list(inspect.signature(cls).parameters.values())
        assert [p.name for p in params[:2]] == expected["constructor"]
        assert all(p.default is not inspect.Parameter.empty for p in params[2:]), cls


def _check_method(cls: type, name: str, params: list[str], *, is_async: bool) -> None:
    fn = getattr(cls, name, None)
    assert fn is not None, f"{cls.__name__}.{name} is missing"
    assert inspect.iscoroutinefunction(fn) is is_async, f"{cls.__name__}.{name}"
    got = list(inspect.signature(fn).parameters.values())[1:]  # without self
    assert [p.name for p in got[: len(params)]] == params, f"{cls.__name__}.{name}"
    assert all(p.default is not inspect.Parameter.empty for p in got[len(params) :])


def test_methods_are_coroutines_with_the_seed_parameters(expected: dict[str, Any]) -> None:
    assert len(expected["methods"]) == 9
    for name, params in expected["methods"].items():
        _check_method(SessionNotebook, name, params, is_async=True)


def test_sync_class_has_the_same_methods_synchronous(expected: dict[str, Any]) -> None:
    for name, params in expected["methods"].items():
        _check_method(SessionNotebookSync, name, params, is_async=False)


def test_sections_in_seed_order_with_purposes(expected: dict[str, Any]) -> None:
    assert list(SECTIONS.items()) == list(expected["sections"].items())
    assert tuple(expected["sections"]) == session_pkg.SECTION_NAMES


def test_constants_have_the_seed_values(expected: dict[str, Any]) -> None:
    for name, value in expected["constants"].items():
        assert getattr(session_pkg, name) == value, name
    defaults = SessionBudgets()
    assert (
        defaults.message_threshold,
        defaults.tool_call_threshold,
        defaults.max_section_tokens,
        defaults.max_total_tokens,
    ) == tuple(expected["constants"].values())


def test_estimate_tokens_is_chars_over_four(expected: dict[str, Any]) -> None:
    nb = SessionNotebook(InMemoryStore(), "t")
    per = expected["chars_per_token"]
    assert asyncio.run(nb.estimate_tokens("x" * (per * 100))) == 100
    assert asyncio.run(nb.estimate_tokens("x" * (per * 100 + 1))) == 101
    assert asyncio.run(nb.estimate_tokens("")) == 0


def test_stored_at_the_seed_namespace_and_key(expected: dict[str, Any]) -> None:
    store = InMemoryStore()
    nb = SessionNotebook(store, "thread-7")

    async def go() -> str:
        await nb.initialize()
        await nb.update_section("Current State", "Implementing auth middleware")
        return await nb.load()

    content = asyncio.run(go())
    root, key = expected["storage"]
    item = store.get((root, "thread-7"), key)
    assert item is not None
    assert item.namespace == (root, "thread-7") and item.key == key
    assert item.value["content"] == content
    assert "Implementing auth middleware" in item.value["content"]
    assert store.list_namespaces(prefix=(root,)) == [(root, "thread-7")]


# -- any BaseStore ----------------------------------------------------------------------------

STORE_KINDS = ["in-memory", "sqlite-store-file", "notebook-store"]


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    if request.param == "in-memory":
        yield InMemoryStore()
    elif request.param == "sqlite-store-file":
        conn = sqlite3.connect(tmp_path / "store.db", isolation_level=None, check_same_thread=False)
        sqlite_store = SqliteStore(conn)
        sqlite_store.setup()
        yield sqlite_store
        conn.close()
    else:
        with Notebook.open(tmp_path / "home") as notebook:
            yield notebook.store


SAMPLE = {
    "Current State": "Implementing auth middleware",
    "Task Specification": "Add token checks to every /api route\nKeep /health public",
    "Files and Functions": "- auth/middleware.py:42\n- tests/test_auth.py",
    "Workflow": "1. write the check\n2. wire it in\n3. run the tests",
    "Errors and Corrections": "verify_token() raised on expired tokens -> return 401 instead",
    "Key Results": "all 48 tests pass",
    "Worklog": "10:02 started\n10:15 middleware written\n10:31 tests green",
}


def test_initialize_creates_the_template(store: BaseStore) -> None:
    nb = SessionNotebook(store, "t1")
    text = asyncio.run(nb.initialize())
    assert asyncio.run(nb.load()) == text
    lines = text.splitlines()
    positions = []
    for name, purpose in EXPECTED_SECTIONS.items():
        i = lines.index(f"## {name}")
        assert lines[i + 1] == f"_{purpose}_"
        positions.append(i)
    assert positions == sorted(positions)
    assert all(asyncio.run(nb.get_section(n)) == "" for n in EXPECTED_SECTIONS)
    # a second initialize keeps what is there
    asyncio.run(nb.update_section("Key Results", "found it"))
    assert "found it" in asyncio.run(nb.initialize())
    assert asyncio.run(nb.get_section("Key Results")) == "found it"


def test_update_and_get_section_round_trip(store: BaseStore) -> None:
    nb = SessionNotebook(store, "t2")

    async def go() -> dict[str, str]:
        await nb.initialize()
        for name, text in SAMPLE.items():
            await nb.update_section(name, text)
        await nb.update_section("Current State", "Reviewing the middleware")  # replaces
        return {name: await nb.get_section(name) for name in SAMPLE}

    got = asyncio.run(go())
    assert got == {**SAMPLE, "Current State": "Reviewing the middleware"}
    # a second object on the same store (a restarted app) reads the same
    again = SessionNotebook(store, "t2")
    assert asyncio.run(again.get_section("Worklog")) == SAMPLE["Worklog"]
    # another thread's notebook is separate
    assert asyncio.run(SessionNotebook(store, "t3").get_section("Worklog")) == ""


def test_save_keeps_every_header(store: BaseStore) -> None:
    nb = SessionNotebook(store, "t4")
    asyncio.run(nb.save("## Key Results\nfound the bug\n\n## Current State\nfixing it\n"))
    text = asyncio.run(nb.load())
    for name, purpose in EXPECTED_SECTIONS.items():
        assert f"## {name}\n_{purpose}_" in text
    assert asyncio.run(nb.get_section("Key Results")) == "found the bug"
    assert asyncio.run(nb.get_section("Current State")) == "fixing it"
    assert asyncio.run(nb.get_section("Worklog")) == ""
    # the whole loaded text saves back unchanged
    asyncio.run(nb.save(text))
    assert asyncio.run(nb.load()) == text


def test_save_rejects_leading_junk(store: BaseStore) -> None:
    nb = SessionNotebook(store, "t5")
    asyncio.run(nb.update_section("Workflow", "step one"))
    before = asyncio.run(nb.load())
    with pytest.raises(InvalidInput, match="section header"):
        asyncio.run(nb.save("Here is the notebook:\n## Current State\nx"))
    with pytest.raises(InvalidInput):
        asyncio.run(nb.save("no headers at all"))
    assert asyncio.run(nb.load()) == before


def test_unknown_section_names_the_valid_ones(store: BaseStore) -> None:
    nb = SessionNotebook(store, "t6")
    calls: list[Callable[[], Any]] = [
        lambda: nb.update_section("Current state", "x"),
        lambda: nb.get_section("Notes"),
        lambda: nb.condense_section("Log", 10),
    ]
    for call in calls:
        with pytest.raises(InvalidInput) as err:
            asyncio.run(call())
        for name in EXPECTED_SECTIONS:
            assert name in str(err.value)
    assert store.get(("session", "t6"), "notebook") is None  # nothing was written


@pytest.mark.parametrize("thread_id", ["a.b", "run.1", ".", "", "  "])
def test_thread_ids_with_periods_or_blank_are_rejected(store: BaseStore, thread_id: str) -> None:
    for cls in (SessionNotebook, SessionNotebookSync):
        with pytest.raises(InvalidInput, match="thread id"):
            cls(store, thread_id)


def test_notebook_store_keeps_the_notebook_in_notebook_db(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Notebook.open(home) as notebook:
        asyncio.run(notebook.session_notebook("t").update_section("Workflow", SAMPLE["Workflow"]))
    conn = sqlite3.connect(home / "notebook.db")
    try:
        rows = conn.execute("SELECT prefix, key FROM store").fetchall()
    finally:
        conn.close()
    assert rows == [("session.t", "notebook")]
    with Notebook.open(home) as notebook:  # a restarted app reads it back
        assert (
            asyncio.run(notebook.session_notebook("t").get_section("Workflow"))
            == (SAMPLE["Workflow"])
        )


# -- budgets ------------------------------------------------------------------------------------

MARKER = re.compile(
    r"\[condensed: earlier text moved to (moment (m_\d+)(?: \([A-Za-z ]+\))?|store item \S+)\]"
)
HUGE = "Workflow"  # the section filled with one long line without newlines


def _lines(name: str, tokens: int) -> str:
    """Distinct lines of varied length, about ``tokens`` tokens in all."""
    out: list[str] = []
    size, k = 0, 0
    while size < 4 * tokens:
        out.append(f"{name} line {k:04d}: " + " ".join(f"w{k}.{j}" for j in range(k % 9 + 2)))
        size += len(out[-1]) + 1
        k += 1
    return "\n".join(out)


def _one_line(tokens: int) -> str:
    words, size, k = [], 0, 0
    while size < 4 * tokens:
        word = f"step{k}"
        words.append(word)
        size += len(word) + 1
        k += 1
    return " ".join(words)


def fill_twice(budgets: SessionBudgets) -> dict[str, str]:
    """Sections of varied sizes totalling about twice ``max_total_tokens``: two within the
    section budget, the rest over it, one a single line; the section-capped total is still
    over budget, so both passes of enforce_budget cut."""
    total = 2 * budgets.max_total_tokens - CharEstimate().count(template())
    share = {
        "Current State": 0.9 * budgets.max_section_tokens / total,
        "Task Specification": 0.5 * budgets.max_section_tokens / total,
        "Files and Functions": 0.15,
        "Workflow": 0.25,
        "Errors and Corrections": 0.95 * budgets.max_section_tokens / total,
        "Key Results": 0.18,
    }
    share["Worklog"] = 1 - sum(share.values())
    return {
        name: _one_line(int(total * s)) if name == HUGE else _lines(name, int(total * s))
        for name, s in share.items()
    }


def check_within_budget(
    nb: SessionNotebookSync, budgets: SessionBudgets, max_total: int | None = None
) -> dict[str, str]:
    text = nb.load()
    sections = parse(text)
    for name, body in sections.items():
        assert nb.estimate_tokens(body) <= budgets.max_section_tokens, name
    assert nb.estimate_tokens(text) <= (max_total or budgets.max_total_tokens)
    return sections


def check_nothing_lost(
    sections: dict[str, str], originals: dict[str, str], fetch: Callable[[str], str]
) -> list[str]:
    """Each section is its kept text plus a marker; the fetched cut pieces followed by the
    kept text are the original exactly. Returns the references seen."""
    references = []
    for name, original in originals.items():
        body = sections[name]
        lines = body.split("\n")
        found = [m for line in lines if (m := MARKER.fullmatch(line))]
        kept = "\n".join(line for line in lines if not MARKER.fullmatch(line))
        pieces = [fetch(m[1]) for m in found]
        references += [m[1] for m in found]
        # what was cut, then what was kept, is the original to the character
        assert "".join([*pieces, kept]) == original, name
        if not found:
            assert body == original, name
    return references


BUDGETS = {
    "seed-defaults": SessionBudgets(),
    "small": SessionBudgets(max_section_tokens=40, max_total_tokens=300),
}


@pytest.mark.parametrize("budgets", BUDGETS.values(), ids=BUDGETS.keys())
def test_enforce_budget_fits_and_loses_nothing(tmp_path: Path, budgets: SessionBudgets) -> None:
    with Notebook.open(tmp_path / "home") as notebook:
        nb = SessionNotebook(notebook.store, "t", notebook=notebook, budgets=budgets)
        originals = fill_twice(budgets)

        async def fill_and_enforce() -> dict[str, str]:
            for name, text in originals.items():
                await nb.update_section(name, text)
            total = await nb.estimate_tokens(await nb.load())
            assert 1.8 * budgets.max_total_tokens < total < 2.3 * budgets.max_total_tokens
            return await nb.enforce_budget(budgets.max_total_tokens)

        refs = asyncio.run(fill_and_enforce())
        over = {n for n, t in originals.items() if len(t) > 4 * budgets.max_section_tokens}
        assert over and set(refs) >= over
        assert all(r.startswith("moment m_") for r in refs.values())
        sections = check_within_budget(nb.sync, budgets)
        seen = check_nothing_lost(sections, originals, nb.sync.fetch_cut)
        assert sorted(seen) == sorted(refs.values())
        # the cuts of one change are one moment, of the thread's long-term session
        (cut,) = {r.split()[1] for r in seen}
        assert notebook.get_moment(cut).session == notebook.thread_session("t")
        assert [m.id for m in notebook.moments() if m.speaker == "session-notebook"] == [cut]

        # a second call finds nothing to do and changes nothing
        before, moments = nb.sync.load(), len(notebook.moments())
        assert asyncio.run(nb.enforce_budget(budgets.max_total_tokens)) == {}
        assert nb.sync.load() == before
        assert len(notebook.moments()) == moments


# Lines that read as headers (escaped or not), blank lines, trailing newlines, quote references.
_CUT_LINES = st.sampled_from(
    ["", "## Worklog", "\\## Worklog", "\\\\## Key Results  ", "- ⟦m_3@0+60⟧", "- done", "##"]
)


@given(
    st.dictionaries(
        st.sampled_from(SECTION_NAMES),
        st.lists(_CUT_LINES | st.text(max_size=30), max_size=6).map("\n".join),
        min_size=1,
    )
)
def test_the_cuts_of_several_sections_read_back_exactly(cuts: dict[str, str]) -> None:
    together = render_parts(cuts)
    assert {name: part(together, name) for name in cuts} == cuts
    assert all(part(together, name) is None for name in SECTION_NAMES if name not in cuts)


def test_one_change_cutting_several_sections_records_one_moment(tmp_path: Path) -> None:
    with Notebook.open(tmp_path / "home", background_embedding=False) as notebook:
        nb = notebook.session_notebook("t").sync
        originals = {  # in the sections' order, one of them with a header-like line
            "Key Results": "## Worklog\n" + _lines("Key Results", 900),
            "Worklog": _lines("Worklog", 1000),
        }
        for name, text in originals.items():
            nb.update_section(name, text)
        refs = nb.enforce_budget()
        (cut,) = [m for m in notebook.moments() if m.speaker == "session-notebook"]
        assert refs == {name: f"moment {cut.id} ({name})" for name in originals}
        assert cut.relations.links == [f"session-notebook:t#{name}" for name in originals]
        # derived text: indexed by its words, not by concepts of its own
        assert cut.metadata.concepts == [] and cut.metadata.retrieval_keys == []
        assert [m for m, _ in notebook.backend.search_text("w49.5", MomentFilter(), 5)] == [cut.id]
        for name, original in originals.items():
            kept = nb.get_section(name).rsplit("\n", 1)[0]
            assert nb.fetch_cut(refs[name]) + kept == original, name
        # a section's part whose header a redaction took reads as redacted, not as another's
        text = cut.content.text.replace("\n## Worklog\n", "\n[redacted]\n")
        content = cut.content.model_copy(update={"text": text})
        notebook.backend.put_moments([cut.model_copy(update={"content": content})])
        assert nb.fetch_cut(refs["Worklog"]) == f"[the Worklog part of {cut.id}: redacted]"


def test_enforce_budget_with_a_smaller_total(tmp_path: Path) -> None:
    with Notebook.open(tmp_path / "home") as notebook:
        nb = notebook.session_notebook("t").sync
        originals = fill_twice(nb.budgets)
        for name, text in originals.items():
            nb.update_section(name, text)
        refs = nb.enforce_budget(1200)
        over = {
            n for n, t in originals.items() if nb.estimate_tokens(t) > nb.budgets.max_section_tokens
        }
        assert set(refs) > over  # a section within its own budget gave up text too
        sections = check_within_budget(nb, nb.budgets, max_total=1200)
        check_nothing_lost(sections, originals, nb.fetch_cut)
        assert nb.enforce_budget(1200) == {}


def test_enforce_budget_without_a_notebook_keeps_cut_text_in_the_store() -> None:
    store = InMemoryStore()
    nb = SessionNotebookSync(store, "t")
    originals = fill_twice(nb.budgets)
    for name, text in originals.items():
        nb.update_section(name, text)
    refs = nb.enforce_budget()
    assert refs
    for reference in refs.values():
        assert re.fullmatch(r"store item session/t/cuts/cut_\d+", reference)
        key = reference.rsplit("/", 1)[1]
        item = store.get(("session", "t", "cuts"), key)
        assert item is not None and item.value["text"] == nb.fetch_cut(reference)
    seen = check_nothing_lost(parse(nb.load()), originals, nb.fetch_cut)
    assert sorted(seen) == sorted(refs.values())


@pytest.mark.parametrize("thread_id", ["t", "a-rather-long-thread-identifier-42"])
def test_enforce_budget_without_a_notebook_meets_the_limits(thread_id: str) -> None:
    nb = SessionNotebookSync(InMemoryStore(), thread_id)
    for name, text in fill_twice(nb.budgets).items():
        nb.update_section(name, text)
    nb.enforce_budget()
    check_within_budget(nb, nb.budgets)
    before = nb.load()
    assert nb.enforce_budget() == {}
    assert nb.load() == before


def test_a_long_line_cut_twice_is_kept_verbatim(tmp_path: Path) -> None:
    with Notebook.open(tmp_path / "home") as notebook:
        nb = notebook.session_notebook("t").sync
        line = _one_line(1500)
        nb.update_section("Workflow", line)
        reference = nb.enforce_budget(400)["Workflow"]  # over the section budget, then the total
        kept = nb.get_section("Workflow").rsplit("\n", 1)[0]
        assert nb.estimate_tokens(nb.load()) <= 400
        assert nb.fetch_cut(reference) + kept == line


def test_condense_one_section(tmp_path: Path) -> None:
    with Notebook.open(tmp_path / "home") as notebook:
        nb = notebook.session_notebook("t")
        log = _lines("Worklog", 1000)
        huge = _one_line(800)

        async def go() -> tuple[str | None, str | None, str | None]:
            await nb.update_section("Worklog", log)
            await nb.update_section("Workflow", huge)
            await nb.update_section("Current State", "short")
            return (
                await nb.condense_section("Worklog", 200),
                await nb.condense_section("Workflow", 100),
                await nb.condense_section("Current State", 100),
            )

        log_ref, huge_ref, none = asyncio.run(go())
        assert none is None
        assert log_ref is not None and huge_ref is not None
        sync = nb.sync
        assert sync.get_section("Current State") == "short"
        assert sync.estimate_tokens(sync.get_section("Worklog")) <= 200
        assert sync.estimate_tokens(sync.get_section("Workflow")) <= 100
        assert sync.get_section("Worklog").endswith(f"moved to {log_ref}]")
        check_nothing_lost(
            parse(sync.load()),
            {"Worklog": log, "Workflow": huge, "Current State": "short"},
            lambda r: notebook.get_moment(r.removeprefix("moment ")).content.text,
        )
        # the default limit is the section budget; the condensed section already fits it
        assert asyncio.run(nb.condense_section("Worklog", None)) is None


def test_section_content_with_a_header_line_stays_in_its_section() -> None:
    nb = SessionNotebookSync(InMemoryStore(), "t")
    nb.update_section("Worklog", "10:00 start")
    content = "Quoting the README:\n## Worklog\nthis line is part of Current State"
    nb.update_section("Current State", content)
    assert nb.get_section("Current State") == content
    assert nb.get_section("Worklog") == "10:00 start"


def test_guidance_line_in_content_is_kept() -> None:
    nb = SessionNotebookSync(InMemoryStore(), "t")
    content = "_Where the conversation stands right now_\nstill here"
    nb.update_section("Current State", content)
    assert nb.get_section("Current State") == content


# -- concurrency --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["in-memory", "notebook-store"])
def test_concurrent_async_updates_of_two_sections(tmp_path: Path, kind: str) -> None:
    notebook = Notebook.open(tmp_path / "home") if kind == "notebook-store" else None
    store = notebook.store if notebook is not None else InMemoryStore()
    one, two = SessionNotebook(store, "t"), SessionNotebook(store, "t")

    async def go() -> list[tuple[str, str]]:
        seen = []
        for i in range(50):
            await asyncio.gather(
                one.update_section("Current State", f"state {i}"),
                two.update_section("Worklog", f"log {i}"),
            )
            seen.append((await one.get_section("Current State"), await two.get_section("Worklog")))
        return seen

    try:
        seen = asyncio.run(go())
    finally:
        if notebook is not None:
            notebook.close()
    assert seen == [(f"state {i}", f"log {i}") for i in range(50)]


def test_two_threads_update_different_sections(tmp_path: Path) -> None:
    with Notebook.open(tmp_path / "home") as notebook:
        nb = notebook.session_notebook("t").sync
        start = threading.Barrier(2)
        errors: list[BaseException] = []

        def writer(section: str, label: str) -> None:
            try:
                start.wait()
                for i in range(100):
                    nb.update_section(section, f"{label} {i}")
            except BaseException as err:  # noqa: BLE001 - reported by the main thread
                errors.append(err)

        threads = [
            threading.Thread(target=writer, args=("Key Results", "result")),
            threading.Thread(target=writer, args=("Errors and Corrections", "error")),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(HANG_GUARD_S)
        assert not errors
        assert nb.get_section("Key Results") == "result 99"
        assert nb.get_section("Errors and Corrections") == "error 99"
        assert nb._read() is not None and nb._read().revision == 200  # type: ignore[union-attr]


WRITER = """
import sys
from agent_notebook import Notebook

home, section, label, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with Notebook.open(home) as nb:
    notebook = nb.session_notebook("t").sync
    print("ready", flush=True)
    sys.stdin.readline()  # both writers start together
    for i in range(count):
        notebook.update_section(section, f"{label} {i}")
    print("done", flush=True)
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _spawn(script: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )


@pytest.mark.slow
def test_two_processes_update_different_sections(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Notebook.open(home) as nb:
        nb.session_notebook("t").sync.initialize()  # revision 1
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    count = 30
    children = [
        _spawn(script, str(home), "Current State", "state", str(count)),
        _spawn(script, str(home), "Worklog", "log", str(count)),
    ]
    try:
        for child in children:
            assert child.stdout is not None
            assert child.stdout.readline() == "ready\n", child.stderr and child.stderr.read()
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        results = [child.communicate(timeout=120) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.communicate()
    for child, (out, err) in zip(children, results, strict=True):
        assert child.returncode == 0, err
        assert out == "done\n"
    with Notebook.open(home) as nb:
        sync = nb.session_notebook("t").sync
        assert sync.get_section("Current State") == f"state {count - 1}"
        assert sync.get_section("Worklog") == f"log {count - 1}"
        stored = sync._read()
        assert stored is not None and stored.revision == 1 + 2 * count  # every update counted


# -- should_update across a restart -------------------------------------------------------------

SCENARIOS = """
from langchain_core.messages import AIMessage, HumanMessage

def calls(n):
    return [{"name": "read_file", "args": {"path": f"f{i}.py"}, "id": f"call_{i}"} for i in range(n)]

BASE = [
    HumanMessage("add auth to the API", id="h0"),
    AIMessage("on it", id="a1"),
    HumanMessage("keep /health public", id="h2"),
]

def new(n):
    return [HumanMessage(f"follow-up {i}", id=f"n{i}") for i in range(n)]

SCENARIOS = {
    "nothing new": BASE,
    "5 new messages": BASE + new(5),
    "6 new messages": BASE + new(6),
    "3 tool calls": BASE + [AIMessage("", tool_calls=calls(3), id="t3")],
    "4 tool calls": BASE + [AIMessage("", tool_calls=calls(4), id="t4")],
}
"""

MARKER_CHILD = """
import json, sys
from agent_notebook import Notebook

exec(open(sys.argv[2], encoding="utf-8").read())
with Notebook.open(sys.argv[1]) as nb:
    notebook = nb.session_notebook("t").sync
    notebook.mark_updated(BASE)
    print(json.dumps({k: notebook.should_update(v) for k, v in SCENARIOS.items()}))
"""

EXPECTED_ANSWERS = {
    "nothing new": False,
    "5 new messages": False,
    "6 new messages": True,
    "3 tool calls": False,
    "4 tool calls": True,
}


def test_should_update_gives_the_same_answer_after_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    scenarios_file = tmp_path / "scenarios.py"
    scenarios_file.write_text(SCENARIOS, encoding="utf-8")
    script = tmp_path / "mark.py"
    script.write_text(MARKER_CHILD, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(home), str(scenarios_file)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    in_child = json.loads(done.stdout)

    namespace: dict[str, Any] = {}
    exec(SCENARIOS, namespace)
    scenarios: dict[str, list[BaseMessage]] = namespace["SCENARIOS"]
    with Notebook.open(home) as nb:
        notebook = nb.session_notebook("t")
        in_parent = {k: asyncio.run(notebook.should_update(v)) for k, v in scenarios.items()}
        # without the child's mark, the base messages count too: 3 + 5 new reach 6
        unmarked = nb.session_notebook("u").sync
        assert unmarked.should_update(scenarios["5 new messages"]) is True
    assert in_child == in_parent == EXPECTED_ANSWERS


def test_should_update_counts_from_the_last_mark() -> None:
    nb = SessionNotebookSync(InMemoryStore(), "t")
    history: list[BaseMessage] = [HumanMessage(f"m{i}", id=f"m{i}") for i in range(4)]
    assert nb.should_update(history) is False  # 4 < 6
    history += [HumanMessage("m4", id="m4"), HumanMessage("m5", id="m5")]
    assert nb.should_update(history) is True
    nb.mark_updated(history)
    assert nb.should_update(history) is False
    history.append(
        AIMessage(
            "", tool_calls=[{"name": "x", "args": {}, "id": f"c{i}"} for i in range(4)], id="ai"
        )
    )
    assert nb.should_update(history) is True


# -- compaction ---------------------------------------------------------------------------------


def test_render_for_compaction_has_the_content_not_the_guidance() -> None:
    nb = SessionNotebook(InMemoryStore(), "t")

    async def go() -> tuple[str, str]:
        empty = await nb.render_for_compaction()
        await nb.update_section("Current State", SAMPLE["Current State"])
        await nb.update_section("Files and Functions", SAMPLE["Files and Functions"])
        return empty, await nb.render_for_compaction()

    empty, text = asyncio.run(go())
    assert SAMPLE["Current State"] in text
    assert SAMPLE["Files and Functions"] in text
    assert "## Current State" in text and "## Files and Functions" in text
    for name, purpose in EXPECTED_SECTIONS.items():
        assert purpose not in text and purpose not in empty
        if name not in ("Current State", "Files and Functions"):
            assert f"## {name}" not in text
    assert text.index("## Current State") < text.index("## Files and Functions")
