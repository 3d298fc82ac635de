"""The owner's methods on the facts and on forgetting, part of :class:`~.facade.Notebook`:
the audit log read and corrected, pending items listed and reworded, conflicts listed and
resolved (:mod:`.owner_facts`), the forgetting policy (:mod:`.forgetting`, applied by
:mod:`.maintenance`), and deletion, redaction and forgetting a concept. A mixin so the facade's own module stays short; each method hands the
call to its part, where the checks are."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..model import Moment, NotebookStats, PendingItem

if TYPE_CHECKING:
    from .forgetting import PolicyReport
    from .maintenance import Maintenance, SessionDeletion
    from .owner_facts import ConflictPair, ConflictResolution, LoggedDecision, OwnerFacts
    from .redaction import ForgetReport


class FactsFacade:
    """Mixed into :class:`~.facade.Notebook`, which sets the two parts."""

    _owner_facts: OwnerFacts
    _maintenance: Maintenance

    def decision_log(self, session_id: str | None = None) -> list[LoggedDecision]:
        """Every session's audit log (or one's), each entry with its ``d_N`` and, when a
        later entry corrects it, ``edited_by`` (see :mod:`.owner_facts`)."""
        return self._owner_facts.decision_log(session_id)

    def edit_decision(
        self,
        session_id: str,
        decision_id: str,
        *,
        what: str | None = None,
        why: str | None = None,
        who: str = "owner",
    ) -> LoggedDecision:
        """Correct decision ``d_N``: a new entry that ``edits`` it is appended (the log keeps both)."""
        return self._owner_facts.edit_decision(session_id, decision_id, what, why, who)

    def pending_items(
        self, session_id: str | None = None, *, open_only: bool = False
    ) -> list[tuple[str, PendingItem]]:
        """``(session id, item)`` of every session's pending items (or one's)."""
        return self._owner_facts.pending(session_id, open_only)

    def edit_pending(
        self, session_id: str, pending_id: str, what: str, *, who: str = "owner"
    ) -> PendingItem:
        """Reword an open pending item; the audit log notes the text it had."""
        return self._owner_facts.edit_pending(session_id, pending_id, what, who)

    def mark_moment(
        self, moment_id: str, *, importance: float | None = None, pinned: bool | None = None
    ) -> Moment:
        """Change a moment's importance (0 to 1) or pin (a pinned moment is never compacted);
        its text stays as recorded (see :mod:`.owner_facts`)."""
        return self._owner_facts.mark_moment(moment_id, importance, pinned)

    def conflicts(self, session_id: str | None = None) -> list[ConflictPair]:
        """The moments flagged ``conflicts_with`` each other, by pairs, oldest first."""
        return self._owner_facts.conflicts(session_id)

    def resolve_conflict(
        self,
        a: str,
        b: str,
        *,
        keep: str | None = None,
        dismiss: bool = False,
        reason: str = "",
        who: str = "owner",
    ) -> ConflictResolution:
        """``keep`` one side (the other is superseded by it) or ``dismiss`` the conflict
        (both stand); audited in each session involved (see :mod:`.owner_facts`)."""
        return self._owner_facts.resolve_conflict(a, b, keep, dismiss, reason, who)

    def forget_by_policy(
        self,
        *,
        older_than: str | timedelta | None = None,
        inactive_for: str | timedelta | None = None,
        keep_top: int | None = None,
        session: str | None = None,
        reason: str = "",
        who: str = "owner",
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> PolicyReport:
        """Redact the moments the forgetting policy picks (durations such as ``30d``; the
        top ``keep_top`` by decayed importance stay); see :mod:`.forgetting`."""
        return self._maintenance.forget_by_policy(
            older_than, inactive_for, keep_top, session, reason, who, dry_run, now
        )

    # -- deletion, redaction, stats (:mod:`.maintenance`) ---------------------------------

    def delete_session(self, session_id: str) -> SessionDeletion:
        """Delete a session for good, with its moments, archived records, media files and
        threads (see :meth:`.maintenance.Maintenance.delete_session`)."""
        return self._maintenance.delete_session(session_id)

    def redact_moments(self, moment_ids: Sequence[str], reason: str, who: str = "owner") -> None:
        """:meth:`redact` of several active moments in one pass (one purge of the files)."""
        self._maintenance.redact_moments(moment_ids, reason, who)

    def redact(self, moment_id: str, reason: str, who: str = "owner") -> Moment:
        """Remove a moment's content for good, everywhere it was copied, leaving a tombstone
        that says who, when and why (see :mod:`.redaction`)."""
        return self._maintenance.redact(moment_id, reason, who)

    def forget(
        self,
        concept: str,
        reason: str = "",
        *,
        who: str = "owner",
        dry_run: bool = False,
        words_only: bool = False,
    ) -> ForgetReport:
        """Redact every moment, rollup and session-notebook line tied to ``concept`` (the
        concept index, and the phrase appearing as words), then drop the concept from the
        index; with ``dry_run`` only list what would go (each moment's text in the report).
        Whole moments by default: what else a moment says about the concept would give it
        away. ``words_only`` redacts the phrase's words within them and keeps the rest."""
        return self._maintenance.forget(concept, reason, who, dry_run, words_only)

    def stats(self) -> NotebookStats:
        return self._maintenance.stats()
