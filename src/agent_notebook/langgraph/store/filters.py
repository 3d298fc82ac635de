"""A store search's ``filter`` in PostgreSQL, meaning what it means on a SQLite notebook.

A SQLite notebook's store is LangGraph's ``SqliteStore``, which reads a filtered field with
``json_extract`` and compares it as SQLite compares values; LangGraph's ``PostgresStore``
compares the field's text instead (``7 > 25`` as text) and reads a dotted key as one label.
The notebook's PostgreSQL store (:mod:`.postgres`) builds its conditions here instead, so
that one filter selects the same items on both (``tests/langgraph/test_store_filters.py``):

* a key is a path: ``"meta.rank"`` is ``value["meta"]["rank"]`` (objects only, as
  ``$.meta.rank`` in SQLite), and only letters, digits, ``_``, ``-`` and dots are allowed
  (LangGraph's own check, raising ``ValueError``);
* a field that is missing and one that is JSON ``null`` are alike: ``None`` (``$eq``)
  matches both, ``$ne`` matches neither (``$ne: None`` is "there and not null");
* ``$eq``/``$ne`` with a number (a boolean is 1 or 0, as in SQLite) compare numbers and
  booleans by value, and a string only strings; ``$ne`` is the field there, not equal;
* ``$gt``/``$gte``/``$lt``/``$lte`` with a number compare the field as a number: a string
  by its leading number, else 0 (SQLite's ``CAST(... AS REAL)``); with a string, strings by
  code point (SQLite's ``BINARY``), a number or boolean sorting before every string;
* a value that is neither (a list, an object, ``None``) under an order operator sorts after
  every field (SQLite compares it as a blob): ``$gt`` never matches, ``$lt`` any field.
* a list or an object under ``$eq``/``$ne`` (or plain) is compared as JSON: on SQLite as
  its text, so an object's keys must come in the order they were stored in.

Numbers are compared as ``numeric`` (SQLite: as doubles), which differs only for integers
beyond 2**53. The conditions are SQL with ``%s`` parameters, in LangGraph's
``_get_filter_condition`` form.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from ..private import sqlite_store_validate_filter_key

__all__ = ["as_conditions", "filter_condition"]

ORDER: Final = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
#: A string's leading number, as SQLite's CAST to REAL reads it (leading spaces skipped).
_LEADING_NUMBER: Final = r"'^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)'"


def as_conditions(where: Mapping[str, Any]) -> dict[str, Any]:
    """``where`` with every key checked and every plain value as ``{"$eq": value}`` (a
    mapping is one of operators already, as in ``SqliteStore``), so that LangGraph's
    ``PostgresStore`` builds every condition with :func:`filter_condition`."""
    for key in where:
        sqlite_store_validate_filter_key(key)
    return {
        key: value if isinstance(value, dict) else {"$eq": value} for key, value in where.items()
    }


def filter_condition(key: str, op: str, value: Any) -> tuple[str, list[Any]]:
    """The SQL condition of ``key``'s field against ``value`` under ``op``, and its
    parameters (see the module's docstring); ``ValueError`` for another operator."""
    sqlite_store_validate_filter_key(key)
    field = "value" + "".join(f" -> '{label}'" for label in key.split("."))
    kind = f"jsonb_typeof({field})"
    there = f"coalesce({kind}, 'null') <> 'null'"
    if op == "$eq":
        return _equal(field, kind, value)
    if op == "$ne":
        if value is None:
            return there, []
        equal, params = _equal(field, kind, value)
        return f"({there} AND NOT coalesce({equal}, false))", params
    if op not in ORDER:
        raise ValueError(f"Unsupported operator: {op}")
    sign = ORDER[op]
    if isinstance(value, int | float):  # a bool too: 1 or 0
        cast = _number(
            field,
            kind,
            f"WHEN 'string' THEN coalesce(substring({field} #>> '{{}}' from "
            f"{_LEADING_NUMBER})::numeric, 0) WHEN 'object' THEN 0 WHEN 'array' THEN 0 ",
        )
        return f"{cast} {sign} %s::numeric", [float(value)]
    below = "true" if sign.startswith("<") else "false"  # numbers sort before strings
    if isinstance(value, str):
        return (
            f"(CASE WHEN {kind} IN ('number', 'boolean') THEN {below} "
            f"WHEN {kind} = 'string' THEN ({field} #>> '{{}}') COLLATE \"C\" {sign} %s "
            f"WHEN {kind} IN ('object', 'array') THEN ({field})::text COLLATE \"C\" {sign} %s "
            "END)",
            [value, value],
        )
    return (there if below == "true" else "false"), []


def _equal(field: str, kind: str, value: Any) -> tuple[str, list[Any]]:
    if value is None:
        return f"coalesce({kind}, 'null') = 'null'", []
    if isinstance(value, int | float):
        return f"{_number(field, kind)} = %s::numeric", [float(value)]
    return f"{field} = %s::jsonb", [json.dumps(value)]


def _number(field: str, kind: str, others: str = "") -> str:
    """The field as a number: a number's value, a boolean's 1 or 0, ``others``' cases for
    the other kinds (else NULL: no match)."""
    return (
        f"(CASE {kind} WHEN 'number' THEN ({field})::numeric "
        f"WHEN 'boolean' THEN ({field})::boolean::int::numeric {others}END)"
    )
