"""The caps of a guest's write-back (``guests:`` in ``config.yaml``,
:class:`~agent_notebook.config.guests.GuestLimits`), checked inside the write-back's own
transaction so that HTTP, MCP and the web page share them and a refused write-back leaves
nothing behind.

What a guest has written is counted in the notebook's counters (one transaction with the
write, so a refused or failed write-back counts nothing): ``write-back-bytes:<guest>``, the
bytes it wrote in all, and ``write-back-hour:<guest>``, its current clock hour and the
write-backs in it as one number (``hour * HOURLY_SPAN + count``: a new hour raises the
counter to ``hour * HOURLY_SPAN``), so each guest has two counters whatever its age. The
count per session is read from the session's audit log (the entries by ``guest:…``)."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime

from ..config.guests import HOURLY_SPAN, GuestLimits
from ..errors import RateLimited, TooLarge
from ..model import Session
from ..storage import StorageBackend

_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _key(guest: str) -> str:
    """The guest's part of a counter's name: its name, or a digest of an unusual one."""
    if _PLAIN_NAME.fullmatch(guest):
        return guest
    return "sha256-" + hashlib.sha256(guest.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def size_of(text: str, why: str) -> int:
    return len(text.encode("utf-8", "surrogatepass")) + len(why.encode("utf-8", "surrogatepass"))


def check_size(limits: GuestLimits, size: int) -> None:
    """A write-back of ``size`` bytes within the per-write-back cap (before any read)."""
    cap = limits.write_back_max_bytes
    if size > cap:
        raise TooLarge(
            f"write_back: {size} bytes (text and why) is over guests.write_back_max_bytes, "
            f"{cap} bytes a write-back: write a shorter text (the owner sets the cap in "
            "config.yaml); nothing was written",
            cap="guests.write_back_max_bytes",
            limit=cap,
        )


def check_session(limits: GuestLimits, session: Session) -> None:
    """The session can take one more guest write-back."""
    cap = limits.write_backs_per_session
    taken = sum(1 for d in session.decisions if d.who.startswith("guest:"))
    if taken >= cap:
        raise RateLimited(
            f"write_back: session {session.id} has {taken} write-backs by guests, "
            f"guests.write_backs_per_session is {cap}: it takes no more (the owner sets the "
            "cap in config.yaml); nothing was written",
            cap="guests.write_backs_per_session",
            limit=cap,
        )


def count_write_back(
    backend: StorageBackend, limits: GuestLimits, guest: str, size: int, now: datetime
) -> None:
    """Count one write-back of ``size`` bytes by ``guest`` at ``now``, or raise at a cap.
    Call it inside the write-back's transaction: the raise undoes the counting."""
    key = _key(guest)
    hour = int(now.timestamp()) // 3600
    counter = f"write-back-hour:{key}"
    backend.raise_counter(counter, hour * HOURLY_SPAN)
    in_hour = backend.next_number(counter) - hour * HOURLY_SPAN
    per_hour = limits.write_backs_per_hour
    if in_hour > per_hour:
        wait = 3600 - int(now.timestamp()) % 3600
        raise RateLimited(
            f"write_back: guest {guest!r} has made {per_hour} write-backs this hour, "
            f"guests.write_backs_per_hour is {per_hour}: retry in {wait} s, at the next hour "
            "(UTC); nothing was written",
            cap="guests.write_backs_per_hour",
            limit=per_hour,
            retry_after_s=wait,
        )
    total = backend.next_number(f"write-back-bytes:{key}", size) + size - 1
    cap = limits.write_back_total_bytes
    if total > cap:
        raise TooLarge(
            f"write_back: guest {guest!r} has written back {total - size} bytes, "
            f"guests.write_back_total_bytes is {cap}: {size} more would pass it (the owner "
            "sets the cap in config.yaml); nothing was written",
            cap="guests.write_back_total_bytes",
            limit=cap,
        )
