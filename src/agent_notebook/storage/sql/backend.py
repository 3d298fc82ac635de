"""The base of the SQL backends (SQLite, PostgreSQL): the few primitives each implements
(a read, a write inside ``atomic()``, how its driver's errors read), what its schema names
(the statement that writes a moment row, the condition that picks a vector model), its
:class:`~.dialect.Dialect`, and the helpers every shared part uses on top of them: rows by
moment number, moments from rows, and what a cipher changes (sealed names, index terms,
vectors). The shared reads, writes and key rotation build on this class
(:mod:`.reads`, :mod:`.writes`, :mod:`.rotation`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ValidationError

from ...core.crypto import sealed_key_id
from ...core.lexical import terms
from ...errors import StorageError
from ...model import Moment
from .. import rows
from ..base import StorageBackend
from . import sealed
from .dialect import Dialect

if TYPE_CHECKING:
    from ...core.crypto import Cipher

#: Numbers bound at most in one statement where each takes a placeholder (SQLite caps a
#: statement's parameters).
NUMBERS_PER_STATEMENT = 500


class SqlBackend(StorageBackend):
    """The primitives of a SQL backend and the helpers built on them."""

    _dialect: ClassVar[Dialect]
    #: The schema's statement that writes a whole moment row (``_moment_row``'s columns).
    _upsert_moment: ClassVar[str]
    #: The schema's condition on ``moment_vectors`` that picks the model named by its
    #: placeholder.
    _vector_model: ClassVar[str]
    #: The ``(table, column)`` pairs whose newest row tells how the notebook is sealed.
    _newest_rows: ClassVar[tuple[tuple[str, str], ...]]
    cipher: Cipher | None

    @abstractmethod
    def _mapped(self, doing: str) -> AbstractContextManager[None]:
        """A block whose driver errors become a StorageError saying what was ``doing``."""

    def _joined(self) -> AbstractContextManager[None]:
        """A block of writes that joins this thread's open transaction as it stands (no
        savepoint: an error inside leaves that transaction to be rolled back by its owner),
        or, outside one, runs in its own ``atomic()``. For one statement, or writes whose
        caller rolls back on any error (a record)."""
        return self.atomic()

    @abstractmethod
    def _query(self, statement: str, params: Sequence[Any] = ()) -> list[Any]: ...

    @abstractmethod
    def _write(self, statement: str, params: Sequence[Any] = ()) -> Any:
        """Run a write inside the open ``atomic()`` block; returns the driver's cursor."""

    @abstractmethod
    def _write_many(self, statement: str, params: Sequence[Sequence[Any]]) -> None: ...

    def _text_columns(self, moment: Moment) -> tuple[Any, ...]:
        """The columns of a moment row the backend's full-text index keeps beside it."""
        return ()

    # -- cipher -----------------------------------------------------------------------------

    def _terms(self, text: str) -> list[str]:
        """The index terms of ``text`` as stored: keyed tokens when encrypted."""
        return terms(text) if self.cipher is None else sealed.index_terms(self.cipher, text)

    def _name(self, concept: str) -> str:
        return concept if self.cipher is None else self.cipher.seal_name(concept)

    def _unname(self, stored: str) -> str:
        return stored if self.cipher is None else self.cipher.open_name(stored)

    def _open_vector(self, num: int, blob: bytes) -> bytes:
        """A stored vector's bytes (one stored before encryption was on passes through)."""
        blob = bytes(blob)
        if self.cipher is None or sealed_key_id(blob) is None:
            return blob
        return self.cipher.decrypt(blob, sealed.vector_aad(num), f"{self.location}: a vector")

    def _sealed_vectors(
        self, vectors: Sequence[tuple[int, str, bytes]]
    ) -> Sequence[tuple[int, str, bytes]]:
        """``(number, text, vector)`` as stored: when encrypted, the text as the index's
        tokens (what the text column holds) and the vector sealed."""
        if (cipher := self.cipher) is None:
            return vectors
        return [
            (num, sealed.index_text(cipher, text), cipher.encrypt(blob, sealed.vector_aad(num)))
            for num, text, blob in vectors
        ]

    def _check_sealing(self) -> None:
        """Refuse at open, before any write, a notebook sealed with another key (or sealed
        at all, without a key): the newest moment and session tell."""
        for table, order in self._newest_rows:
            found = self._query(f"SELECT body FROM {table} ORDER BY {order} DESC LIMIT 1")
            if found:
                sealed.check_key(self.cipher, found[0][0], self.location)

    # -- rows -------------------------------------------------------------------------------

    def _moment_row(self, moment: Moment) -> tuple[Any, ...]:
        if self.cipher is None:
            row = rows.moment_row(moment)
        else:
            row = sealed.moment_row(self.cipher, moment)
        return (*row, *self._text_columns(moment))

    def _moments_from(self, found: list[Any]) -> list[Moment]:
        try:
            return [sealed.moment_from_row(self.cipher, row) for row in found]
        except (ValueError, ValidationError) as err:
            raise StorageError(f"{self.location}: a stored moment does not load: {err}") from err

    def _moments_by_num(self, nums: Sequence[int]) -> dict[int, Moment]:
        """The stored moments among ``nums``, by number."""
        found = self._rows_by_num(f"SELECT {rows.MOMENT_READ} FROM moments WHERE num", nums)
        return {row[0]: m for row, m in zip(found, self._moments_from(found), strict=True)}

    def _rows_by_num(self, select: str, nums: Sequence[int]) -> list[Any]:
        """Rows of ``select`` (ending in a column of moment numbers) for ``nums``."""
        if self._dialect.arrays:
            return self._query(f"{select} = ANY({self._dialect.mark}::bigint[])", (list(nums),))
        found: list[Any] = []
        for start in range(0, len(nums), NUMBERS_PER_STATEMENT):
            chunk = nums[start : start + NUMBERS_PER_STATEMENT]
            found += self._query(f"{select} IN ({','.join('?' * len(chunk))})", chunk)
        return found

    def _write_by_num(self, statement: str, nums: Sequence[int]) -> None:
        """Run ``statement`` (ending in a column of moment numbers) for ``nums``."""
        if self._dialect.arrays:
            self._write(f"{statement} = ANY({self._dialect.mark}::bigint[])", (list(nums),))
        else:
            self._write_many(f"{statement} = ?", [(num,) for num in nums])
