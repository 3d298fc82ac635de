"""The writes the SQL backends (SQLite, PostgreSQL) run alike: counters, sessions, the
removal of moments with what is derived from them, the cold archive, and the concept pairs
a write changes. Each runs inside ``atomic()``; what truly differs between the backends
(how the full-text index and the vectors follow a removal, how concept pairs are added,
how an archive row reads) is a method each backend implements.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from ...model import ArchiveEntry, Moment, MomentContent, Session
from .. import rows
from . import sealed
from .backend import SqlBackend

#: The tables that pair a concept with a moment: active, and archived.
ConceptPairs = Literal["concept_moments", "archived_concepts"]


class SqlWrites(SqlBackend):
    """Writes shared by the SQL backends."""

    #: The schema's statement that writes an archive row (``_archive_row``'s columns).
    _upsert_archived: ClassVar[str]

    # -- what each backend does its own way -------------------------------------------------

    @abstractmethod
    def _index_terms(
        self, moments: Sequence[Moment], replaced: dict[int, Moment], removed: int = 0
    ) -> None:
        """Keep the term statistics in step with a write of ``moments`` over ``replaced``
        (their stored versions; ``removed`` of them are being deleted)."""

    @abstractmethod
    def _link_concepts(self, table: ConceptPairs, pairs: Sequence[tuple[str, int]]) -> None:
        """Add ``(stored concept name, moment number)`` pairs to ``table``, naming the new
        concepts."""

    @abstractmethod
    def _unlink_concepts(self, pairs: Sequence[tuple[str, int]]) -> None:
        """Take ``(stored concept name, moment number)`` pairs out of ``concept_moments``."""

    @abstractmethod
    def _remove_vectors(self, nums: Sequence[int]) -> None:
        """Delete the vectors of moments ``nums`` (and what follows them)."""

    @abstractmethod
    def _archive_row(self, entry: ArchiveEntry) -> tuple[Any, ...]: ...

    @abstractmethod
    def _archived_of(self, session_id: str) -> list[int]:
        """The numbers of the archived moments of ``session_id``."""

    # -- counters ---------------------------------------------------------------------------

    def next_number(self, counter: str, count: int = 1) -> int:
        m = self._dialect.mark
        with self._joined():  # one statement: no savepoint needed inside a transaction
            (last,) = self._write(
                f"INSERT INTO counters (name, value) VALUES ({m}, {m}) "
                "ON CONFLICT (name) DO UPDATE SET value = counters.value + excluded.value "
                "RETURNING value",
                (counter, count),
            ).fetchone()
            return int(last) - count + 1

    def raise_counter(self, counter: str, at_least: int) -> None:
        d = self._dialect
        with self.atomic():
            self._write(
                f"INSERT INTO counters (name, value) VALUES ({d.mark}, {d.mark}) "
                f"ON CONFLICT (name) DO UPDATE SET value = {d.greatest}(counters.value, "
                "excluded.value)",
                (counter, at_least),
            )

    # -- sessions ---------------------------------------------------------------------------

    def put_session(self, session: Session) -> None:
        row = rows.session_row(session)
        if self.cipher is not None:
            row = (row[0], row[1], sealed.session_body(self.cipher, session))
        m = self._dialect.mark
        with self.atomic():
            self._write(
                f"INSERT INTO sessions (id, started_us, body) VALUES ({m}, {m}, {m}) "
                "ON CONFLICT (id) DO UPDATE SET started_us = excluded.started_us, "
                "body = excluded.body",
                row,
            )

    def delete_session(self, session_id: str) -> None:
        m = self._dialect.mark
        with self.atomic():
            found = self._query(f"SELECT num FROM moments WHERE session_id = {m}", (session_id,))
            self._remove_moments([num for (num,) in found])
            archived = self._archived_of(session_id)
            self._write_by_num("DELETE FROM archived_concepts WHERE num", archived)
            self._write_by_num("DELETE FROM archived WHERE num", archived)
            self._write(f"DELETE FROM sessions WHERE id = {m}", (session_id,))

    # -- moments ----------------------------------------------------------------------------

    def _remove_moments(self, nums: Sequence[int]) -> None:
        """Delete moments and what is derived from them: their words' document frequencies
        (and lengths), full-text rows, concept pairs and vectors."""
        gone = self._moments_by_num(nums)
        emptied = [m.model_copy(update={"content": MomentContent()}) for m in gone.values()]
        self._index_terms(emptied, gone, removed=len(gone))  # their words leave the counts
        numbers = list(gone)
        self._remove_vectors(numbers)
        self._index_fact_keys([], gone)
        # by (concept, number), from their bodies: the pairs have no index by number alone
        # (a delete by number would read them all, for each moment)
        self._unlink_concepts(
            [(self._name(c), num) for num, m in gone.items() for c in m.metadata.concepts]
        )
        self._write_by_num("DELETE FROM moments WHERE num", numbers)

    def _index_concepts(self, moments: Sequence[Moment], replaced: dict[int, Moment]) -> None:
        """Pair each of ``moments`` with its concepts, in place of ``replaced``'s pairs."""
        self._unlink_concepts(
            [(self._name(c), num) for num, old in replaced.items() for c in old.metadata.concepts]
        )
        self._link_concepts(
            "concept_moments",
            [(self._name(c), m.number) for m in moments for c in m.metadata.concepts],
        )

    def _index_fact_keys(self, moments: Sequence[Moment], replaced: dict[int, Moment]) -> None:
        """File each of ``moments`` under its fact keys, in place of ``replaced``'s. Done in
        every write (SQLite's deferred upkeep aside): few moments have keys, and the facts
        of the next record read them at once."""
        m = self._dialect.mark
        old = {
            (self._name(k), num) for num, was in replaced.items() for k in was.metadata.fact_keys
        }
        new = {(self._name(k), x.number) for x in moments for k in x.metadata.fact_keys}
        if gone := sorted(old - new):
            self._write_many(f"DELETE FROM fact_keys WHERE name = {m} AND num = {m}", gone)
        if added := sorted(new - old):
            self._write_many(
                f"INSERT INTO fact_keys (name, num) VALUES ({m}, {m}) ON CONFLICT DO NOTHING",
                added,
            )

    # -- the cold archive -------------------------------------------------------------------

    def archive_moments(self, entries: Sequence[ArchiveEntry]) -> None:
        nums = [e.number for e in entries]
        with self.atomic():
            # only a moment archived again has pairs to replace (a delete by number reads
            # every pair: the pairs have no index by number alone)
            again = [e.number for e in self.get_archived([e.id for e in entries])]
            self._remove_moments(nums)
            self._write_many(self._upsert_archived, [self._archive_row(e) for e in entries])
            self._write_by_num("DELETE FROM archived_concepts WHERE num", again)
            pairs = [(self._name(c), e.number) for e in entries for c in e.concepts]
            self._link_concepts("archived_concepts", pairs)

    def _archive_body(self, entry: ArchiveEntry) -> str:
        if self.cipher is None:
            return rows.archive_row(entry)[1]
        return sealed.archive_body(self.cipher, entry)
