"""Validation with errors people can act on: a record checked against its model, and
pydantic's errors said in one line that names the place, the problem and, for an unknown
field, the fields valid there (every front end words its refusals this way)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, ValidationError

from ..errors import InvalidInput

_M = TypeVar("_M", bound=BaseModel)


def validate_record(cls: type[_M], data: Any, where: str) -> _M:
    """Validate ``data`` as ``cls``, turning pydantic's error into one that names ``where``."""
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        raise InvalidInput(f"{where}: {describe_validation_error(err, cls)}") from None


def describe_validation_error(err: ValidationError, model: type[BaseModel] | None = None) -> str:
    """pydantic's errors as one line, ``loc: message; …``. Given the ``model`` validated, an
    unknown field's message lists the fields valid at its place."""
    return describe_errors(err.errors(include_url=False), model)


def describe_errors(
    errors: Iterable[Mapping[str, Any]],
    model: type[BaseModel] | None = None,
    at: tuple[str | int, ...] = (),
) -> str:
    """Errors as pydantic lists them (``loc``, ``msg``, ``type``), as one line; an error of
    the whole input (an empty ``loc``) is its message alone. ``model`` is what was validated
    at ``at`` (FastAPI's body is at ``("body",)``)."""
    parts = []
    for e in errors:
        loc = tuple(e.get("loc", ()))
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        if e.get("type") == "extra_forbidden":
            inside = model is not None and loc[: len(at)] == at
            fields = _fields_at(model, loc[len(at) : -1]) if inside and model else None
            msg = "unknown field" + (f" (valid fields: {', '.join(fields)})" if fields else "")
        parts.append(f"{'.'.join(str(p) for p in loc)}: {msg}" if loc else msg)
    return "; ".join(parts)


def _fields_at(model: type[BaseModel], loc: Sequence[str | int]) -> list[str] | None:
    """The field names of the model found at ``loc`` inside ``model`` (None if unknown)."""
    current: type[BaseModel] | None = model
    for part in loc:
        if isinstance(part, int):  # a list item: its model was unwrapped with the list
            continue
        if current is None or part not in current.model_fields:
            return None
        current = _model_in(current.model_fields[part].annotation)
    return None if current is None else list(current.model_fields)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model inside a field's type (``Model``, ``Model | None``, ``list[Model]``…)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        if (found := _model_in(arg)) is not None:
            return found
    return None
