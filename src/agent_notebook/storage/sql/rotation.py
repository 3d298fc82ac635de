"""Key rotation in the SQL backends (:meth:`SqlKeyRotation.reseal`): the rows are the same
and sealed the same way (:mod:`.sealed`) in SQLite and PostgreSQL; each backend says how it
counts the index terms again once their keyed tokens changed (:meth:`SqlKeyRotation._resealed`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable

from ...core.crypto import sealed_key_id
from ...errors import StorageError
from .. import rows
from . import sealed
from .backend import SqlBackend


class SqlKeyRotation(SqlBackend):
    """Seals every row again under the cipher's key."""

    def reseal(self, batch: int = 500) -> int:
        """Seal every row under the cipher's key (after a key rotation, the cipher opens the
        old key too; rows stored in plain text are sealed as well). One transaction per
        batch: a kill leaves each row under the old key or the new one, and running this
        again finishes the job. Returns how many rows were sealed again."""
        cipher = self.cipher
        if cipher is None:
            raise StorageError(f"{self.location}: reseal needs a cipher")
        m = self._dialect.mark

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
                    "SELECT num, vector FROM moment_vectors WHERE num", [row[0] for row in found]
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
            for (name,) in self._query("SELECT DISTINCT name FROM fact_keys"):
                if not name.startswith(prefix):  # (a write under the new key may have
                    # filed some of its moments already: copied, not renamed)
                    self._write(
                        f"INSERT INTO fact_keys (name, num) SELECT {m}, num FROM fact_keys "
                        f"WHERE name = {m} ON CONFLICT DO NOTHING",
                        (cipher.seal_name(cipher.open_name(name)), name),
                    )
                    self._write(f"DELETE FROM fact_keys WHERE name = {m}", (name,))
                    done += 1
            self._resealed()
        return done

    def _rename_concept(self, cid: int, old: str, name: str) -> None:
        """Rename concept ``cid`` (named ``old``); when a write under the new key made that
        name already, its moments join that one. Rows are found by name (SQLite's table is
        keyed by it)."""
        m = self._dialect.mark
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
