"""Entries the privacy settings write in a session's audit log (its decisions)."""

from __future__ import annotations

from ..core.validation import validate_record
from ..model import Decision, Session, now_utc

__all__ = ["AUDIT_WHO", "note"]

#: Who the audit log names for what the privacy settings did (not the owner, not a guest).
AUDIT_WHO = "agent-notebook"


def note(session: Session, what: str, *, once: bool = False) -> None:
    """Append ``what`` to ``session``'s audit log (the caller writes the session); with
    ``once``, only if the log does not say it already."""
    if once and any(d.what == what and d.who == AUDIT_WHO for d in session.decisions):
        return
    session.decisions.append(
        validate_record(
            Decision, {"when": now_utc(), "what": what, "who": AUDIT_WHO}, "audit entry"
        )
    )
