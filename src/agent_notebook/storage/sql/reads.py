"""The reads the SQL backends (SQLite, PostgreSQL) run alike: the same statements, apart
from the driver's placeholder (:attr:`SqlReads._mark`) and how a column is compared with
one ignoring case (:attr:`SqlReads._nocase`), through each backend's own ``_query``.

Reads of the derived indexes (concepts) call :meth:`StorageBackend.settle` first: SQLite
indexes new moments in batches; on PostgreSQL it does nothing.

Key rotation (:meth:`SqlReads.reseal`) is shared too: the rows are the same, sealed the same
way (:mod:`.sqlite.sealed`); each backend says how it writes a moment row back and how it
counts the index terms again once their keyed tokens changed (:meth:`SqlReads._resealed`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.crypto import sealed_key_id
from ..core.lexical import terms
from ..errors import StorageError
from ..model import ConceptEntry, Moment, Session, moment_number
from . import rows, sql
from .base import MomentBrief, MomentFilter, StorageBackend
from .sqlite import sealed

if TYPE_CHECKING:
    from ..core.crypto import Cipher


class SqlReads(StorageBackend):
    """Reads shared by the SQL backends, parameterised by the driver's placeholder."""

    #: The driver's placeholder.
    _mark: ClassVar[str] = "?"
    #: A comparison of a column with a placeholder ignoring case (see ``sql.filter_sql``).
    _nocase: ClassVar[str] = "{} = {} COLLATE NOCASE"
    #: The schema's statement that writes a whole moment row (``_moment_row``'s columns).
    _upsert_moment: ClassVar[str]
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

    @abstractmethod
    def _rows_by_num(self, select: str, nums: Sequence[int]) -> list[Any]:
        """Rows of ``select`` (ending in ``WHERE num IN``) for ``nums``."""

    @abstractmethod
    def _moment_row(self, moment: Moment) -> tuple[Any, ...]: ...

    @abstractmethod
    def _write(self, statement: str, params: Sequence[Any] = ()) -> None:
        """Run a write inside the open ``atomic()`` block."""

    @abstractmethod
    def _write_many(self, statement: str, params: Sequence[Sequence[Any]]) -> None: ...

    def _open_vector(self, num: int, blob: bytes) -> bytes:
        """A stored vector's bytes (one stored before encryption was on passes through)."""
        blob = bytes(blob)
        if self.cipher is None or sealed_key_id(blob) is None:
            return blob
        return self.cipher.decrypt(blob, sealed.vector_aad(num), f"{self.location}: a vector")

    # -- sessions ---------------------------------------------------------------------------

    def get_session(self, session_id: str) -> Session | None:
        found = self._query(f"SELECT body FROM sessions WHERE id = {self._mark}", (session_id,))
        return sealed.session_from_row(self.cipher, found[0][0]) if found else None

    def count_sessions(self) -> int:
        return int(self._query("SELECT count(*) FROM sessions")[0][0])

    # -- moments ----------------------------------------------------------------------------

    def get_moment(self, moment_id: str) -> Moment | None:
        num = moment_number(moment_id)
        found = self._query(
            f"SELECT {rows.MOMENT_READ} FROM moments WHERE num = {self._mark}", (num,)
        )
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

    # -- key rotation -------------------------------------------------------------------------

    def reseal(self, batch: int = 500) -> int:
        """Seal every row under the cipher's key (after a key rotation, the cipher opens the
        old key too; rows stored in plain text are sealed as well). One transaction per
        batch: a kill leaves each row under the old key or the new one, and running this
        again finishes the job. Returns how many rows were sealed again."""
        cipher = self.cipher
        if cipher is None:
            raise StorageError(f"{self.location}: reseal needs a cipher")
        m = self._mark

        def stale(body: str) -> bool:
            return not sealed.is_sealed(body) or (
                cipher.text_key_id(sealed.sealed_part(body)) != cipher.key_id
            )

        self.settle()  # the word counts are made again below from the full-text index
        done, after = 0, 0
        while True:
            with self.atomic():
                found = self._query(
                    f"SELECT {rows.MOMENT_READ} FROM moments WHERE num > {m} "
                    f"ORDER BY num LIMIT {m}",
                    (after, batch),
                )
                if not found:
                    break
                after = found[-1][0]
                moments = self._moments_from([row for row in found if stale(row[-1])])
                self._write_many(self._upsert_moment, [self._moment_row(x) for x in moments])
                vectors = self._rows_by_num(
                    "SELECT num, vector FROM moment_vectors WHERE num IN", [row[0] for row in found]
                )
                resealed = [
                    (cipher.encrypt(self._open_vector(n, v), sealed.vector_aad(n)), n)
                    for n, v in vectors
                    if sealed_key_id(bytes(v)) != cipher.key_id
                ]
                # The vector's value is unchanged: the change log (PostgreSQL's seq) is not
                # told, so no server's index loads it again.
                self._write_many(
                    f"UPDATE moment_vectors SET vector = {m} WHERE num = {m}", resealed
                )
                done += len(moments) + len(resealed)
        with self.atomic():
            body_resealers: dict[tuple[str, str], Callable[[str], str]] = {  # table, key: body
                ("sessions", "id"): lambda body: sealed.session_body(
                    cipher, sealed.session_from_row(cipher, body)
                ),
                ("archived", "num"): lambda body: sealed.archive_body(
                    cipher, sealed.archive_from_row(cipher, body)
                ),
            }
            for (table, key), reseal_body in body_resealers.items():
                for row_key, body in self._query(f"SELECT {key}, body FROM {table}"):
                    if stale(body):
                        self._write(
                            f"UPDATE {table} SET body = {m} WHERE {key} = {m}",
                            (reseal_body(body), row_key),
                        )
                        done += 1
            prefix = "~" + cipher.key_id.hex() + ":"
            for cid, name in self._query("SELECT id, name FROM concepts"):
                if not name.startswith(prefix):
                    self._rename_concept(cid, name, cipher.seal_name(cipher.open_name(name)))
                    done += 1
            self._resealed()
        return done

    def _rename_concept(self, cid: int, old: str, name: str) -> None:
        """Rename concept ``cid`` (named ``old``); when a write under the new key made that
        name already, its moments join that one. Rows are found by name (SQLite's table is
        keyed by it)."""
        m = self._mark
        found = self._query(f"SELECT id FROM concepts WHERE name = {m}", (name,))
        if not found:
            self._write(f"UPDATE concepts SET name = {m} WHERE name = {m}", (name, old))
            return
        into = found[0][0]
        for table in ("concept_moments", "archived_concepts"):
            self._write(
                f"UPDATE {table} SET concept_id = {m} WHERE concept_id = {m} "
                f"AND num NOT IN (SELECT num FROM {table} WHERE concept_id = {m})",
                (into, cid, into),
            )
            self._write(f"DELETE FROM {table} WHERE concept_id = {m}", (cid,))
        self._write(f"DELETE FROM concepts WHERE name = {m}", (old,))

    @abstractmethod
    def _resealed(self) -> None:
        """Inside the last transaction of :meth:`reseal`: the keyed tokens changed with the
        key, so count each term's documents again (and leave none of the old ones)."""
