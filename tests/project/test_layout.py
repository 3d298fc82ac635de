"""The middle floor's shape (issue 38): the modules of ``notebook/`` import each other
without a circle (the facade on top, each part below it; import-linter's contract checks
that none imports the facade), and no module of the package grows past 600 lines."""

from __future__ import annotations

from pathlib import Path

import grimp

from tests.support import ROOT

PACKAGE = "agent_notebook.notebook"
MAX_LINES = 600


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_circle_check_finds_one() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_notebook_modules_import_each_other_without_a_circle() -> None:
    graph = grimp.build_graph("agent_notebook")  # type-checking imports count too
    inside = {m for m in graph.modules if m == PACKAGE or m.startswith(PACKAGE + ".")}
    edges = {
        m: {i for i in graph.find_modules_directly_imported_by(m) if i in inside} for m in inside
    }
    assert circles(edges) == []


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in (ROOT / "src").rglob("*.py")
        if (n := len(Path(path).read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"split these modules (at most {MAX_LINES} lines each): {long}"
