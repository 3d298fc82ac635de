"""Strict tooling is part of the suite: ruff (lint and format), mypy --strict, and the
import contract (import-linter: the layers of docs/development.md (once the README's "Development"), declared
in pyproject.toml)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        pytest.param(["mypy"], marks=pytest.mark.slow),  # a minute without its cache
        ["lint-imports"],
    ],
    ids=["ruff-check", "ruff-format", "mypy", "import-layers"],
)
def test_tool_passes(command: list[str]) -> None:
    # This checkout's package, whichever one the environment has installed
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    result = subprocess.run(
        [str(BIN / command[0]), *command[1:]],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


#: Clock readings of the ``time`` module; comparing one (or a value made from one) is a
#: speed check, and speed belongs in bench/ (a loaded machine is slow, not wrong).
CLOCKS = {
    f"{name}{ns}"
    for name in ("time", "monotonic", "perf_counter", "process_time")
    for ns in ("", "_ns")
}


def _reads_clock(node: ast.AST, tainted: set[str]) -> bool:
    """Whether ``node`` uses a clock's value (not inside an f-string: a unique name)."""
    if isinstance(node, ast.JoinedStr):
        return False
    if isinstance(node, ast.Call):
        func = node.func
        if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)) in CLOCKS:
            return True
    if isinstance(node, ast.Name) and node.id in tainted:
        return True
    return any(_reads_clock(child, tainted) for child in ast.iter_child_nodes(node))


def elapsed_time_comparisons(source: str) -> list[int]:
    """Lines of ``source`` comparing a clock reading, directly or through the names assigned
    from one (``started = time.monotonic()`` … ``time.monotonic() - started < 120``), or
    giving Hypothesis a deadline."""
    tree = ast.parse(source)
    tainted: set[str] = set()
    while True:  # names assigned from clock readings, and from those names, to a fixed point
        before = len(tainted)
        for node in ast.walk(tree):
            assigned = isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
            if assigned and node.value and _reads_clock(node.value, tainted):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                tainted |= {t.id for t in targets if isinstance(t, ast.Name)}
        if len(tainted) == before:
            break
    deadlines = {  # Hypothesis' settings(deadline=...) fails an example that takes long
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for word in node.keywords
        if word.arg == "deadline"
        and not (isinstance(word.value, ast.Constant) and word.value.value is None)
    }
    compared = {
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare) and _reads_clock(node, tainted)
    }
    return sorted(compared | deadlines)


def test_no_test_compares_elapsed_time() -> None:
    found = {
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for line in elapsed_time_comparisons(path.read_text(encoding="utf-8"))
    }
    assert not found, (
        "a test compares elapsed time (fails on a loaded machine; measure speed in bench/, "
        f"wait with tests/support/waiting.py): {sorted(found)}"
    )


#: The scanner's samples below are code it reads, never runs; the keyword stands apart so
#: that this file holds no elapsed-time assertion of its own, even to a text search.
CHECK = "assert"


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        (f"t = time.monotonic()\nwork()\n{CHECK} time.monotonic() - t < 120\n", [3]),
        ("end = monotonic() + 5\nwhile monotonic() < end:\n    pass\n", [2]),
        (
            f"a = time.perf_counter_ns()\nspent = time.perf_counter_ns() - a\n{CHECK} spent < 9\n",
            [3],
        ),
        ("name = f'x-{time.monotonic_ns()}'\ntime.sleep(0.1)\nassert name != 'y'\n", []),
        ("time.sleep(0.1)\nassert count < 10\nwhen = datetime.now()\nassert when > T0\n", []),
        ("@settings(max_examples=9, deadline=500)\ndef test(): pass\n", [1]),
        ("@settings(max_examples=9, deadline=None)\ndef test(): pass\n", []),
    ],
    ids=[
        "since-start",
        "deadline-loop",
        "through-a-name",
        "a-unique-name",
        "no-clock",
        "hypothesis-deadline",
        "no-hypothesis-deadline",
    ],
)
def test_the_elapsed_time_check_finds_clock_comparisons(source: str, lines: list[int]) -> None:
    assert elapsed_time_comparisons(source) == lines


def _is_test_module(dotted: str) -> bool:
    last = dotted.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def imported_test_modules(source: str) -> list[str]:
    """The test modules (``test_*``, ``conftest``) that ``source`` imports, by any form of
    import (``import test_x``, ``from test_x import y``, ``from tests.server import test_x``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found += [name for name in names if _is_test_module(name)]
    return found


def test_no_test_imports_another_test_file() -> None:
    """What tests share lives in tests/support/ (a test file imported by another runs its
    module-level code twice, under two names, and ties the two files' layouts together)."""
    found = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for name in imported_test_modules(path.read_text(encoding="utf-8"))
    }
    assert not found, f"move what these share to tests/support/: {sorted(found)}"


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from test_server import Server\n", ["test_server"]),
        ("import test_mcp\n", ["test_mcp"]),
        ("from tests.server import test_server\n", ["tests.server.test_server"]),
        ("from tests.server.test_server import Server\n", ["tests.server.test_server"]),
        ("def f():\n    from conftest import make_backend\n", ["conftest"]),
        ("from tests.support.server import Server\nimport pytest\n", []),
    ],
    ids=["from-a-test", "import-a-test", "a-test-from-a-package", "dotted", "conftest", "support"],
)
def test_the_import_check_finds_test_modules(source: str, found: list[str]) -> None:
    assert imported_test_modules(source) == found
