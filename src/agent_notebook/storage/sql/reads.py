"""The reads the SQL backends (SQLite, PostgreSQL) run alike: the same statements, apart
from what their :class:`~.dialect.Dialect` fills in, through each backend's own ``_query``.

Reads of the derived indexes (concepts) call :meth:`StorageBackend.settle` first: SQLite
indexes new moments in batches; on PostgreSQL it does nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import ClassVar, Literal

from ...errors import InvalidInput
from ...model import CUT_SPEAKER, ArchiveEntry, ConceptEntry, Moment, Session, moment_number
from .. import rows
from ..base import MomentBrief, MomentFilter
from . import sealed
from .backend import SqlBackend


class SqlReads(SqlBackend):
    """Reads shared by the SQL backends."""

    #: The schema's select of :class:`MomentBrief` fields (ending in the moment number).
    _select_briefs: ClassVar[str]

    # -- counters ---------------------------------------------------------------------------

    def counters(self) -> dict[str, int]:
        order = f"name{self._dialect.binary}"
        return dict(self._query(f"SELECT name, value FROM counters ORDER BY {order}"))

    # -- sessions ---------------------------------------------------------------------------

    def get_session(self, session_id: str) -> Session | None:
        m = self._dialect.mark
        found = self._query(f"SELECT body FROM sessions WHERE id = {m}", (session_id,))
        return sealed.session_from_row(self.cipher, found[0][0]) if found else None

    def has_session(self, session_id: str) -> bool:
        m = self._dialect.mark
        return bool(self._query(f"SELECT 1 FROM sessions WHERE id = {m}", (session_id,)))

    def list_sessions(self, offset: int = 0, limit: int | None = None) -> list[Session]:
        d = self._dialect
        found = self._query(
            f"SELECT body FROM sessions ORDER BY started_us, id{d.binary} "
            f"LIMIT {d.mark} OFFSET {d.mark}",
            (d.limit(limit), offset),
        )
        return [sealed.session_from_row(self.cipher, body) for (body,) in found]

    def count_sessions(self) -> int:
        return int(self._query("SELECT count(*) FROM sessions")[0][0])

    # -- moments ----------------------------------------------------------------------------

    def get_moment(self, moment_id: str) -> Moment | None:
        found = self._moments_by_num([moment_number(moment_id)])
        return next(iter(found.values()), None)

    def get_moments(self, moment_ids: Sequence[str]) -> list[Moment]:
        nums = [moment_number(mid) for mid in moment_ids]
        found = self._moments_by_num(nums)
        return [found[n] for n in nums if n in found]

    def moment_briefs(self, moment_ids: Sequence[str]) -> list[MomentBrief]:
        # Read from the columns and the JSON body in SQL: no moment is parsed or validated.
        nums = [moment_number(mid) for mid in moment_ids]
        found = {
            row[0]: MomentBrief(
                number=row[0],
                session=row[1],
                timestamp=rows.from_us(row[2]),
                role=row[3],
                speaker=row[4],
                importance=row[5],
                decay_rate=row[6],
                redacted=bool(row[7]),
                asks=bool(row[8]),
            )
            for row in self._rows_by_num(self._select_briefs, nums)
        }
        return [found[n] for n in nums if n in found]

    def list_moments(
        self, session_id: str | None = None, offset: int = 0, limit: int | None = None
    ) -> list[Moment]:
        d = self._dialect
        where = "" if session_id is None else f"WHERE session_id = {d.mark} "
        found = self._query(
            f"SELECT {rows.MOMENT_READ} FROM moments {where}"
            f"ORDER BY num LIMIT {d.mark} OFFSET {d.mark}",
            (*([] if session_id is None else [session_id]), d.limit(limit), offset),
        )
        return self._moments_from(found)

    def count_moments(self, session_id: str | None = None) -> int:
        if session_id is None:
            return int(self._query("SELECT count(*) FROM moments")[0][0])
        found = self._query(
            f"SELECT count(*) FROM moments WHERE session_id = {self._dialect.mark}", (session_id,)
        )
        return int(found[0][0])

    def moment_numbers(self, where: MomentFilter) -> list[int]:
        conditions, params = self._dialect.filter(where)
        select = "SELECT m.num FROM moments m" + (
            " WHERE " + " AND ".join(conditions) if conditions else ""
        )
        return [num for (num,) in self._query(select + " ORDER BY m.num", params)]

    def media_signatures(self, kind: Literal["image", "audio"]) -> list[tuple[int, str]]:
        if self.cipher is not None:  # sealed bodies: read through the moments, opened
            return super().media_signatures(kind)
        if kind not in ("image", "audio"):
            raise InvalidInput(f"media kind {kind!r} is not image or audio")
        d = self._dialect
        found = self._query(  # read in SQL: no moment is parsed
            f"SELECT num, sig FROM (SELECT num, {d.json_field.format('body')} AS sig "
            "FROM moments) s WHERE sig IS NOT NULL AND sig != '' ORDER BY num",
            (d.json_path("content", f"{kind}_signature"),),
        )
        return [(int(num), str(sig)) for num, sig in found]

    # -- text vectors -----------------------------------------------------------------------

    def get_vectors(
        self, model: str, after: int = 0, limit: int | None = None
    ) -> list[tuple[int, bytes]]:
        d = self._dialect
        found = self._query(
            f"SELECT num, vector FROM moment_vectors WHERE {self._vector_model} "
            f"AND num > {d.mark} ORDER BY num LIMIT {d.mark}",
            (model, after, d.limit(limit)),
        )
        if self.cipher is not None:
            found = [(n, self._open_vector(n, v)) for n, v in found]
        return [(n, bytes(v)) for n, v in found]

    def unembedded(self, model: str, limit: int | None = None, after: int = 0) -> list[int]:
        d = self._dialect
        found = self._query(
            f"SELECT m.num FROM moments m WHERE m.num > {d.mark} AND m.speaker != {d.mark} "
            "AND NOT EXISTS (SELECT 1 FROM moment_vectors v WHERE v.num = m.num "
            f"AND {self._vector_model}) ORDER BY m.num LIMIT {d.mark}",
            (after, CUT_SPEAKER, model, d.limit(limit)),
        )
        return [num for (num,) in found]

    # -- the fact index ---------------------------------------------------------------------

    def fact_key_members(self, keys: Sequence[str], before: int, at_most: int) -> list[int]:
        # Kept in step by every write (``SqlWrites._index_fact_keys``): no upkeep to settle.
        m = self._dialect.mark
        found: set[int] = set()
        for key in dict.fromkeys(keys):
            found.update(
                num
                for (num,) in self._query(
                    f"SELECT num FROM fact_keys WHERE name = {m} AND num < {m} "
                    f"ORDER BY num DESC LIMIT {m}",
                    (self._name(key), before, at_most),
                )
            )
        return sorted(found)

    # -- concepts ---------------------------------------------------------------------------

    def get_concept(self, concept: str) -> ConceptEntry | None:
        self.settle()
        found = self._query(
            "SELECT cm.num, m.session_id FROM concepts c "
            "JOIN concept_moments cm ON cm.concept_id = c.id JOIN moments m ON m.num = cm.num "
            f"WHERE c.name = {self._dialect.mark} ORDER BY cm.num",
            (self._name(concept),),
        )
        return concept_entry(concept, found) if found else None

    def concept_members(self, concept: str, at_most: int) -> list[int] | None:
        self.settle()
        # A concept pair goes with its moment in one transaction (``_remove_moments``), so
        # the moments table is not read: a third of the concept signal's cost at 100k.
        m = self._dialect.mark
        found = self._query(
            "SELECT cm.num FROM concepts c JOIN concept_moments cm ON cm.concept_id = c.id "
            f"WHERE c.name = {m} ORDER BY cm.num LIMIT {m}",
            (self._name(concept), at_most + 1),
        )
        return None if len(found) > at_most else [num for (num,) in found]

    def list_concepts(self, offset: int = 0, limit: int | None = None) -> list[ConceptEntry]:
        self.settle()
        d = self._dialect
        named = "SELECT id, name FROM concepts c WHERE EXISTS " + (
            "(SELECT 1 FROM concept_moments cm WHERE cm.concept_id = c.id)"
        )
        if self.cipher is None:
            found = self._query(
                f"{named} ORDER BY name{d.binary} LIMIT {d.mark} OFFSET {d.mark}",
                (d.limit(limit), offset),
            )
            page = [(name, cid) for cid, name in found]
        else:  # sealed names do not sort in SQL: every name is opened and sorted here
            ordered = sorted((self._unname(name), cid) for cid, name in self._query(named))
            page = ordered[offset:] if limit is None else ordered[offset : offset + limit]
        members = self._rows_by_num(
            "SELECT cm.concept_id, cm.num, m.session_id FROM concept_moments cm "
            "JOIN moments m ON m.num = cm.num WHERE cm.concept_id",
            [cid for _, cid in page],
        )
        by_concept = {
            cid: [(num, sid) for _, num, sid in group]
            for cid, group in itertools.groupby(sorted(members), key=lambda r: r[0])
        }
        return [concept_entry(name, by_concept.get(cid, [])) for name, cid in page]

    def count_concepts(self) -> int:
        self.settle()
        return int(self._query("SELECT count(DISTINCT concept_id) FROM concept_moments")[0][0])

    # -- the cold archive -------------------------------------------------------------------

    def get_archived(self, moment_ids: Sequence[str]) -> list[ArchiveEntry]:
        nums = [moment_number(mid) for mid in moment_ids]
        found = self._rows_by_num("SELECT num, body FROM archived WHERE num", nums)
        entries = {num: sealed.archive_from_row(self.cipher, body) for num, body in found}
        return [entries[n] for n in nums if n in entries]

    def list_archived(self, offset: int = 0, limit: int | None = None) -> list[ArchiveEntry]:
        d = self._dialect
        found = self._query(
            f"SELECT body FROM archived ORDER BY num LIMIT {d.mark} OFFSET {d.mark}",
            (d.limit(limit), offset),
        )
        return [sealed.archive_from_row(self.cipher, body) for (body,) in found]

    def count_archived(self) -> int:
        return int(self._query("SELECT count(*) FROM archived")[0][0])

    def archived_with_concept(self, concept: str) -> list[str]:
        found = self._query(
            "SELECT ac.num FROM concepts c JOIN archived_concepts ac ON ac.concept_id = c.id "
            f"WHERE c.name = {self._dialect.mark} ORDER BY ac.num",
            (self._name(concept),),
        )
        return [f"m_{num}" for (num,) in found]


def concept_entry(concept: str, found: Sequence[tuple[int, str]]) -> ConceptEntry:
    """The entry of ``concept`` from its ``(moment number, session id)`` rows in order."""
    return ConceptEntry(
        concept=concept,
        moments=[f"m_{num}" for num, _ in found],
        sessions=sorted({sid for _, sid in found}),
    )
