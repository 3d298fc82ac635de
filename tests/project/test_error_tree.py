"""One exception tree: every exception class the package defines for its callers lives in
``agent_notebook.errors``, and that module's docstring draws all of them, each under its
real parent, with a line on when it is raised.

The package is walked (every module imported), so a class added anywhere else fails here
with its module named. A purely internal exception may stay where it is used if its name
is private and its docstring says why it is private.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from types import ModuleType

import pytest

import agent_notebook
from agent_notebook import errors

#: One line of the drawing: ``│   ├── Name   what raises it`` (the root has no connector).
TREE_LINE = re.compile(
    r"^    (?P<indent>(?:│   |    )*)(?P<branch>[├└]── )?(?P<name>[A-Za-z]\w*)"
    r"(?:\s{2,}(?P<when>\S.*))?$"
)


def package_modules() -> list[ModuleType]:
    """Every module of the package, imported (``__main__`` only runs the CLI)."""
    modules = [agent_notebook]
    for info in pkgutil.walk_packages(agent_notebook.__path__, "agent_notebook."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        modules.append(importlib.import_module(info.name))
    return modules


def defined_exceptions() -> list[tuple[str, type[BaseException]]]:
    """``(module, class)`` for each exception class defined at a module's top level."""
    found = []
    for module in package_modules():
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found.append((module.__name__, value))
    return found


def drawn_tree() -> dict[str, tuple[str | None, str]]:
    """``{name: (parent name, when raised)}`` read from the drawing in errors' docstring."""
    doc = errors.__doc__ or ""
    assert "::\n\n" in doc, "errors.py's docstring lost its drawn tree (a '::' block)"
    block = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    tree: dict[str, tuple[str | None, str]] = {}
    path: list[str] = []  # the names from the root down to the line above
    for line in block.splitlines():
        match = TREE_LINE.match(line)
        assert match, f"errors.py's tree: cannot read the line {line!r}"
        depth = len(match["indent"]) // 4 + (1 if match["branch"] else 0)
        assert depth <= len(path), f"errors.py's tree: {line!r} is indented past its parent"
        del path[depth:]
        name = match["name"]
        assert name not in tree, f"errors.py's tree draws {name} twice"
        tree[name] = (path[-1] if path else None, (match["when"] or "").strip())
        path.append(name)
    return tree


def test_every_public_exception_lives_in_errors() -> None:
    elsewhere = [
        f"{module}.{cls.__name__}"
        for module, cls in defined_exceptions()
        if module != errors.__name__ and not cls.__name__.startswith("_")
    ]
    assert not elsewhere, (
        f"exception classes defined outside agent_notebook.errors: {elsewhere}; move each "
        "into errors.py (drawn in its tree) and re-export the old name from its old module, "
        "or make it private (an underscore name) if it never leaves a public call"
    )


def test_private_exceptions_say_why() -> None:
    private = [cls for _, cls in defined_exceptions() if cls.__name__.startswith("_")]
    unexplained = [
        f"{cls.__module__}.{cls.__name__}"
        for cls in private
        if "private" not in (cls.__doc__ or "").lower()
    ]
    assert not unexplained, (
        f"private exception classes whose docstring does not say why they are private: "
        f"{unexplained}"
    )


def test_the_tree_draws_every_class_of_errors_under_its_real_parent() -> None:
    tree = drawn_tree()
    defined = {
        cls.__name__: cls for module, cls in defined_exceptions() if module == errors.__name__
    }
    assert set(tree) == set(defined), (
        f"errors.py's tree and its classes differ: not drawn {sorted(set(defined) - set(tree))}, "
        f"drawn but not defined {sorted(set(tree) - set(defined))}"
    )
    assert sorted(errors.__all__) == sorted(defined)
    roots = [name for name, (parent, _) in tree.items() if parent is None]
    assert roots == ["NotebookError"]
    for name, (parent, when) in tree.items():
        if parent is None:
            continue
        cls = defined[name]
        ours = [base.__name__ for base in cls.__bases__ if issubclass(base, errors.NotebookError)]
        assert ours == [parent], f"errors.py's tree draws {name} under {parent}, it is a {ours}"
        assert when, f"errors.py's tree says nothing of when {name} is raised"


#: The names the classes had before they moved into errors.py, in their old modules.
OLD_HOMES = [
    ("agent_notebook.chat", "ModelNotConfigured", "ModelNotConfigured"),
    ("agent_notebook.chat.models", "ModelNotConfigured", "ModelNotConfigured"),
    ("agent_notebook.compaction.summarize", "SummaryFailed", "SummaryFailed"),
    ("agent_notebook.core.crypto", "SealedBlobError", "SealedBlobError"),
    ("agent_notebook.core.crypto", "WrongKey", "WrongKey"),
    ("agent_notebook.ingest.source", "Problem", "MalformedItem"),
    ("agent_notebook.langgraph.checkpoint.base", "CheckpointPruned", "CheckpointPruned"),
    ("agent_notebook.langgraph.checkpoint.sqlite", "CheckpointPruned", "CheckpointPruned"),
    ("agent_notebook.langgraph.checkpoint.postgres", "CheckpointPruned", "CheckpointPruned"),
    ("agent_notebook.media.decode", "CorruptMedia", "CorruptMedia"),
    ("agent_notebook.server.errors", "Forbidden", "Forbidden"),
    ("agent_notebook.server.errors", "ModelFailed", "ModelFailed"),
    ("agent_notebook.session.updaters", "UpdateFailed", "UpdateFailed"),
    ("agent_notebook.session.updaters.base", "UpdateFailed", "UpdateFailed"),
    ("agent_notebook.session.updaters.llm", "Malformed", "MalformedAnswer"),
    ("agent_notebook.storage.base", "VectorChangesPruned", "VectorChangesPruned"),
]


@pytest.mark.parametrize(("module", "old", "new"), OLD_HOMES)
def test_old_names_still_import(module: str, old: str, new: str) -> None:
    assert getattr(importlib.import_module(module), old) is getattr(errors, new)


def test_every_error_is_a_notebook_error_with_its_builtin_kin() -> None:
    """What a caller may catch besides NotebookError, as the tree says."""
    assert issubclass(errors.MalformedItem, ValueError)
    assert issubclass(errors.MalformedAnswer, ValueError)
    assert issubclass(errors.VectorChangesPruned, LookupError)
    assert issubclass(errors.MissingDependency, ImportError)
    pruned = errors.VectorChangesPruned(7)
    assert pruned.after == 7
    assert str(pruned) == "the vector changes after 7 were pruned: load from 0"
    assert "MY_ENV=provider:name" in str(errors.ModelNotConfigured("MY_ENV"))
