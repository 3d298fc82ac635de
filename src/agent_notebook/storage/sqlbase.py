"""The reads the SQL backends (SQLite, PostgreSQL) run alike: the same statements, apart
from the driver's placeholder (:attr:`SqlReads._mark`) and how a column is compared with
one ignoring case (:attr:`SqlReads._nocase`), through each backend's own ``_query``.

Reads of the derived indexes (concepts) call :meth:`StorageBackend.settle` first: SQLite
indexes new moments in batches; on PostgreSQL it does nothing.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..model import ConceptEntry, Moment, Session, moment_number
from ..search.lexical import terms
from . import rows, sql
from .base import MomentBrief, MomentFilter, StorageBackend
from .sqlite import sealed

if TYPE_CHECKING:
    from ..privacy.crypto import Cipher


class SqlReads(StorageBackend):
    """Reads shared by the SQL backends, parameterised by the driver's placeholder."""

    #: The driver's placeholder.
    _mark: ClassVar[str] = "?"
    #: A comparison of a column with a placeholder ignoring case (see ``sql.filter_sql``).
    _nocase: ClassVar[str] = "{} = {} COLLATE NOCASE"
    cipher: Cipher | None

    def _terms(self, text: str) -> list[str]:
        """The index terms of ``text`` as stored: keyed tokens when encrypted."""
        return terms(text) if self.cipher is None else sealed.index_terms(self.cipher, text)

    def _name(self, concept: str) -> str:
        return concept if self.cipher is None else self.cipher.seal_name(concept)

    def _unname(self, stored: str) -> str:
        return stored if self.cipher is None else self.cipher.open_name(stored)

    @abstractmethod
    def _query(self, statement: str, params: Sequence[Any] = ()) -> list[Any]: ...

    @abstractmethod
    def _moments_from(self, found: list[Any]) -> list[Moment]: ...

    @abstractmethod
    def _moments_by_num(self, nums: Sequence[int]) -> dict[int, Moment]: ...

    @abstractmethod
    def _brief_rows(self, nums: Sequence[int]) -> list[Any]:
        """The rows of the schema's ``SELECT_BRIEFS`` for ``nums``."""

    # -- sessions ---------------------------------------------------------------------------

    def get_session(self, session_id: str) -> Session | None:
        found = self._query(f"SELECT body FROM sessions WHERE id = {self._mark}", (session_id,))
        return sealed.session_from_row(self.cipher, found[0][0]) if found else None

    def count_sessions(self) -> int:
        return int(self._query("SELECT count(*) FROM sessions")[0][0])

    # -- moments ----------------------------------------------------------------------------

    def get_moment(self, moment_id: str) -> Moment | None:
        num = moment_number(moment_id)
        found = self._query(f"SELECT text, body FROM moments WHERE num = {self._mark}", (num,))
        return self._moments_from(found)[0] if found else None

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
            for row in self._brief_rows(nums)
        }
        return [found[n] for n in nums if n in found]

    def count_moments(self, session_id: str | None = None) -> int:
        if session_id is None:
            return int(self._query("SELECT count(*) FROM moments")[0][0])
        found = self._query(
            f"SELECT count(*) FROM moments WHERE session_id = {self._mark}", (session_id,)
        )
        return int(found[0][0])

    def moment_numbers(self, where: MomentFilter) -> list[int]:
        conditions, params = sql.filter_sql(where, self._mark, self._nocase)
        select = "SELECT m.num FROM moments m" + (
            " WHERE " + " AND ".join(conditions) if conditions else ""
        )
        return [num for (num,) in self._query(select + " ORDER BY m.num", params)]

    # -- concepts ---------------------------------------------------------------------------

    def get_concept(self, concept: str) -> ConceptEntry | None:
        self.settle()
        found = self._query(
            "SELECT cm.num, m.session_id FROM concepts c "
            "JOIN concept_moments cm ON cm.concept_id = c.id JOIN moments m ON m.num = cm.num "
            f"WHERE c.name = {self._mark} ORDER BY cm.num",
            (self._name(concept),),
        )
        return sql.concept_entry(concept, found) if found else None

    def count_concepts(self) -> int:
        self.settle()
        return int(self._query("SELECT count(DISTINCT concept_id) FROM concept_moments")[0][0])

    # -- the cold archive -------------------------------------------------------------------

    def count_archived(self) -> int:
        return int(self._query("SELECT count(*) FROM archived")[0][0])

    def archived_with_concept(self, concept: str) -> list[str]:
        found = self._query(
            "SELECT ac.num FROM concepts c JOIN archived_concepts ac ON ac.concept_id = c.id "
            f"WHERE c.name = {self._mark} ORDER BY ac.num",
            (self._name(concept),),
        )
        return [f"m_{num}" for (num,) in found]
