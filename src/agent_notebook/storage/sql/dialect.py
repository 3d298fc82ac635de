"""Where the SQL backends' statements differ by dialect alone: a :class:`Dialect` for each
(:data:`SQLITE`, :data:`POSTGRES`) fills in the driver's placeholder, a comparison ignoring
case, code-point order, the larger of two values, a limit that is none, a JSON body's field,
and how a list of numbers is bound (one array in PostgreSQL, a placeholder each in SQLite).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ..base import MomentFilter
from ..rows import to_us


@dataclass(frozen=True)
class Dialect:
    #: The driver's placeholder.
    mark: str
    #: A column (the first ``{}``) compared with a placeholder ignoring case.
    nocase: str
    #: What follows a text column in ``ORDER BY`` for code-point order (SQLite's own).
    binary: str
    #: The SQL function of the larger of two values.
    greatest: str
    #: Whether a list of numbers binds as one array parameter (else a placeholder each).
    arrays: bool
    #: What ``LIMIT`` takes for no limit.
    unlimited: int | None
    #: A field of a JSON text column (the ``{}``), at the path of :meth:`json_path`.
    json_field: str

    def limit(self, limit: int | None) -> int | None:
        """``limit`` as ``LIMIT`` takes it (None: no limit)."""
        return self.unlimited if limit is None else limit

    def json_path(self, *keys: str) -> object:
        """The parameter of :attr:`json_field` for the field at ``keys``."""
        return list(keys) if self.arrays else "$." + ".".join(keys)

    def filter(self, where: MomentFilter) -> tuple[list[str], list[Any]]:
        """SQL conditions on ``moments m`` for ``where``, with their parameters."""
        mark = self.mark
        conditions: list[str] = []
        params: list[Any] = []
        if where.session is not None:
            conditions.append(f"m.session_id = {mark}")
            params.append(where.session)
        if where.since is not None:
            conditions.append(f"m.ts_us >= {mark}")
            params.append(to_us(where.since))
        if where.until is not None:
            conditions.append(f"m.ts_us < {mark}")
            params.append(to_us(where.until))
        if where.speaker is not None:
            speaker, role = (
                self.nocase.format("m.speaker", mark),
                self.nocase.format("m.role", mark),
            )
            conditions.append(f"({speaker} OR {role})")
            params += [where.speaker, where.speaker]
        return conditions, params


SQLITE: Final = Dialect(
    mark="?",
    nocase="{} = {} COLLATE NOCASE",
    binary="",
    greatest="max",
    arrays=False,
    unlimited=-1,
    json_field="json_extract({}, ?)",
)

POSTGRES: Final = Dialect(
    mark="%s",
    nocase="lower({}) = lower({})",
    binary=' COLLATE "C"',
    greatest="greatest",
    arrays=True,
    unlimited=None,
    json_field="{}::jsonb #>> %s::text[]",
)
