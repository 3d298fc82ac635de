"""The facade's flat names for what now lives in a named part (``nb.compact`` is
``nb.archive.compact``), kept for one release so that code written against them runs on;
new code uses the part (see ``docs/notebook.md``: "The notebook's parts")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

_P = ParamSpec("_P")
_R = TypeVar("_R")


class Alias(Generic[_P, _R]):
    """``name = Alias("archive", Archive.compact)`` on the facade: ``nb.name(...)`` calls
    ``nb.archive.compact(...)``, with its signature for type checkers and its docstring for
    ``help()``."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, _P], _R]) -> None:
        self.part = part
        self.method = method
        self.__doc__ = f"Alias of ``nb.{part}.{method.__name__}``: {method.__doc__ or ''}"

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> Callable[_P, _R]: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Self | Callable[_P, _R]:
        if obj is None:
            return self
        bound: Callable[_P, _R] = getattr(getattr(obj, self.part), self.method.__name__)
        return bound
