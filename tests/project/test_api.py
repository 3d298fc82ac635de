"""The public API: every name a package exports exists, and the error tree is one tree."""

from __future__ import annotations

import importlib

import pytest

import agent_notebook.errors as errors

PACKAGES = [
    "agent_notebook",
    "agent_notebook.session",
    "agent_notebook.chat",
    "agent_notebook.storage",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_name_exists(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ and len(set(module.__all__)) == len(module.__all__)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name} exports names it lacks: {missing}"


def test_every_error_is_a_notebook_error() -> None:
    classes = [getattr(errors, n) for n in errors.__all__]
    assert all(issubclass(c, errors.NotebookError) for c in classes)
    assert issubclass(errors.InvalidInput, ValueError) and issubclass(errors.NotFound, LookupError)
