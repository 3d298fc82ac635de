"""The PostgreSQL backend's text vectors as a change log every server's in-process index
follows, and the claims that share the embedding work between servers.

Every write of a vector takes the next ``seq``; a removal leaves a tombstone in
``vector_drops`` with its own. Both are written under the notebook's writer lock, so a
reader that has seen seq N never later finds a committed change below it (see
``schema.MIGRATIONS``). Tombstones older than :data:`DROPS_KEPT` are pruned; an index that
has not looked since is loaded again (:class:`~..base.VectorChangesPruned`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Final

from ...errors import VectorChangesPruned
from ...model import CUT_SPEAKER
from .connection import PostgresConnection

#: How long a server's claim on a moment to embed holds (seconds); then anyone takes it.
CLAIM_LEASE_S: Final = 30.0
#: How long a tombstone of a removed vector is kept for the other servers' indexes to see;
#: an index that has not looked for longer is loaded again (``VectorChangesPruned``).
DROPS_KEPT: Final = timedelta(days=1)


class PostgresVectorLog(PostgresConnection):
    """Vectors with their change log, and the claims on moments to embed."""

    #: Who this instance is in ``vector_claims``.
    claimant: str

    def put_vectors(self, model: str, vectors: Sequence[tuple[int, str, bytes]]) -> None:
        stored = self._sealed_vectors(vectors)
        with self.atomic():
            self._write_many(
                "INSERT INTO moment_vectors (num, model, vector) "
                "SELECT num, %s, %s FROM moments WHERE num = %s AND text = %s "
                "ON CONFLICT (num) DO UPDATE SET model = excluded.model, "
                "vector = excluded.vector, seq = nextval('vector_seq')",
                [(model, blob, num, text) for num, text, blob in stored],
            )
            self._write(
                "DELETE FROM vector_claims WHERE model = %s AND num = ANY(%s::bigint[])",
                (model, [num for num, _, _ in stored]),
            )

    def vector_models(self) -> list[str]:
        found = self._query('SELECT DISTINCT model COLLATE "C" FROM moment_vectors ORDER BY 1')
        return [str(model) for (model,) in found]

    def _remove_vectors(self, nums: Sequence[int]) -> None:
        self._drop_vectors(nums)
        self._write("DELETE FROM vector_claims WHERE num = ANY(%s::bigint[])", (list(nums),))

    def _drop_vectors(self, nums: Sequence[int]) -> None:
        """Delete these moments' vectors, leaving a tombstone in the change log for every
        server's index (see ``vector_changes``), and prune the tombstones older than
        :data:`DROPS_KEPT`, moving the horizon past them."""
        if nums:
            self._write(
                "WITH gone AS (DELETE FROM moment_vectors WHERE num = ANY(%s::bigint[]) "
                "RETURNING num, model) INSERT INTO vector_drops (num, model) "
                "SELECT num, model FROM gone ORDER BY num",
                (list(nums),),
            )
            self._write(
                "WITH pruned AS (DELETE FROM vector_drops WHERE at < now() - %s "
                "RETURNING seq) UPDATE vector_drops_horizon "
                "SET seq = greatest(seq, (SELECT max(seq) FROM pruned)) "
                "WHERE EXISTS (SELECT 1 FROM pruned)",
                (DROPS_KEPT,),
            )

    def vector_changes(
        self, model: str, after: int = 0, limit: int | None = None
    ) -> tuple[list[tuple[int, bytes | None]], int]:
        """The vector writes and removals after change ``after``, in change order: a
        vector of another model replacing one of ``model`` reads as a removal. Safe to
        follow by seq alone: see the migration that added it (``schema.MIGRATIONS``)."""
        found = self._query(
            "SELECT seq, num, CASE WHEN model = %s THEN vector END FROM moment_vectors "
            "WHERE seq > %s UNION ALL SELECT seq, num, NULL FROM vector_drops "
            "WHERE seq > %s AND model = %s ORDER BY 1 LIMIT %s",
            (model, after, after, model, limit),
        )
        # read after the changes: a pruning between the two is seen, never missed
        if after and after < int(self._query("SELECT seq FROM vector_drops_horizon")[0][0]):
            raise VectorChangesPruned(after)
        changes = [
            (int(num), None if blob is None else bytes(self._open_vector(num, blob)))
            for _, num, blob in found
        ]
        return changes, int(found[-1][0]) if found else after

    def last_vector_change(self) -> int:
        return int(
            self._query(
                "SELECT greatest((SELECT max(seq) FROM moment_vectors), "
                "(SELECT max(seq) FROM vector_drops), 0)"
            )[0][0]
        )

    def claim_unembedded(self, model: str, limit: int, after: int = 0) -> list[int]:
        """Claim up to ``limit`` moments above ``after`` that have no vector of ``model``
        and no live claim, for ``CLAIM_LEASE_S``: each is embedded by one server. ``SKIP
        LOCKED`` lets servers claiming at once take different moments without waiting;
        the upsert's condition settles a race with a claim committed meanwhile. A killed
        server's claims lapse with their lease and are taken over."""
        found = self._query(
            "WITH free AS (SELECT m.num FROM moments m WHERE m.num > %s AND m.speaker != %s "
            "AND NOT EXISTS (SELECT 1 FROM moment_vectors v WHERE v.num = m.num AND v.model = %s) "
            "AND NOT EXISTS (SELECT 1 FROM vector_claims c WHERE c.num = m.num "
            "AND c.model = %s AND c.until > clock_timestamp()) "
            "ORDER BY m.num LIMIT %s FOR UPDATE OF m SKIP LOCKED) "
            "INSERT INTO vector_claims (num, model, owner, until) "
            "SELECT num, %s, %s, clock_timestamp() + make_interval(secs => %s) FROM free "
            "ON CONFLICT (num, model) DO UPDATE SET owner = excluded.owner, "
            "until = excluded.until WHERE vector_claims.until <= clock_timestamp() "
            "RETURNING num",
            (after, CUT_SPEAKER, model, model, limit, model, self.claimant, CLAIM_LEASE_S),
        )
        return sorted(int(num) for (num,) in found)
