"""``agent_notebook.__all__`` is the public API, complete and sorted (the check httpx makes
of its own ``__all__``): every public name bound in ``agent_notebook/__init__.py`` is listed,
including the ones loaded on first use, the list is sorted, and every name in it imports."""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType

import agent_notebook
from agent_notebook import errors

INIT = Path(agent_notebook.__file__)


def names_bound_in_init() -> set[str]:
    """Every name ``__init__.py`` binds at its top level, also under ``if TYPE_CHECKING``
    (where the names loaded on first use are imported for type checkers)."""
    names: set[str] = set()
    statements = list(ast.parse(INIT.read_text(encoding="utf-8")).body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.If | ast.Try):
            statements.extend([*node.body, *node.orelse])
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(
                name.id
                for target in targets
                for name in ast.walk(target)
                if isinstance(name, ast.Name)
            )
    return names


def is_submodule(name: str, value: object) -> bool:
    """``agent_notebook.cli`` and the like: bound on the package by importing them."""
    return isinstance(value, ModuleType) and value.__name__ == f"agent_notebook.{name}"


def test_all_is_sorted_without_repeats() -> None:
    exported = agent_notebook.__all__
    assert exported == sorted(exported), "sort agent_notebook.__all__"
    assert len(set(exported)) == len(exported), "agent_notebook.__all__ repeats a name"


def test_every_public_name_is_exported() -> None:
    bound = {
        name
        for name, value in vars(agent_notebook).items()
        if not name.startswith("_") and not is_submodule(name, value)
    }
    bound |= {name for name in names_bound_in_init() if not name.startswith("_")}
    missing = sorted(bound - set(agent_notebook.__all__))
    assert not missing, f"public names of agent_notebook missing from its __all__: {missing}"


def test_every_exported_name_imports() -> None:
    for name in agent_notebook.__all__:
        namespace: dict[str, object] = {}
        exec(f"from agent_notebook import {name}", namespace)
        assert namespace[name] is getattr(agent_notebook, name)


def test_every_error_of_the_tree_is_exported() -> None:
    missing = sorted(set(errors.__all__) - set(agent_notebook.__all__))
    assert not missing, f"errors of agent_notebook.errors missing from agent_notebook: {missing}"
