"""Sessions and their audit log: starting, reading (with the moments their stored row lags
behind counted in), changing one in a transaction, decisions, pending items, escalations,
links, a guest's write-back and a write guarded by the session's ETag."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import ValidationError

from ..core.validation import describe_validation_error, validate_record
from ..errors import Conflict, InvalidInput, NotFound
from ..model import (
    MOMENT_ID_RE,
    SESSION_ID_RE,
    Decision,
    Escalation,
    Link,
    PendingItem,
    Session,
    TaskStatus,
    check_session_id,
    moment_number,
    now_utc,
    session_id_for,
)
from ..storage import StorageBackend
from ..storage.base import Activity
from . import guest_caps
from .checks import aware, check_who, offset_of, optional_limit, required
from .etags import check_if_match, etag_of

if TYPE_CHECKING:
    from .context import NotebookContext

#: How many of the latest moment ids a session keeps in ``context.recent_moments``.
RECENT_MOMENTS = 20

WriteBackKind = Literal["decision", "pending", "escalation_outcome"]
SessionOrder = Literal["started", "-started", "activity"]
SESSION_ORDERS: tuple[str, ...] = ("started", "-started", "activity")
_T = TypeVar("_T")
_Item = TypeVar("_Item", PendingItem, Escalation)


class Sessions:
    """The sessions of one notebook (see :meth:`Notebook.start_session` and the rest)."""

    def __init__(self, context: NotebookContext) -> None:
        self.context = context

    @property
    def backend(self) -> StorageBackend:
        return self.context.backend

    def start(self, task: str = "", *, started: datetime | None = None) -> Session:
        when = now_utc() if started is None else aware(started, "started")
        with self.backend.atomic():
            number = self.backend.next_number(f"session:{when.date().isoformat()}")
            session = validate_record(
                Session,
                {"id": session_id_for(when.date(), number), "task": task, "started": when},
                "session",
            )
            self.backend.put_session(session)
        return session

    def get(self, session_id: str) -> Session:
        return self.with_lag(session_id)[0]

    def exists(self, session_id: str) -> bool:
        return bool(SESSION_ID_RE.fullmatch(session_id)) and self.backend.has_session(session_id)

    def require(self, session_id: str) -> None:
        """Raise NotFound unless ``session_id`` is stored (the row is not read)."""
        if not self.backend.has_session(check_session_id(session_id)):
            raise self._missing(session_id)

    def _missing(self, session_id: str) -> NotFound:
        return NotFound(
            f"no session {session_id} in {self.backend.location}; "
            "'agent-notebook sessions' lists them"
        )

    def with_lag(self, session_id: str) -> tuple[Session, int]:
        """The session with the moments its stored row lags behind counted in, and how many
        they were. The row counts the moments up to the newest of its ``recent_moments``
        (a record does not rewrite it each time); the moments of the session above that
        number are the ones it lags behind, so the stats and that mark, stored together,
        always agree, whoever writes the row."""
        found = self.backend.get_session(check_session_id(session_id))
        if found is None:
            raise self._missing(session_id)
        return self.caught_up(found)

    def caught_up(self, session: Session) -> tuple[Session, int]:
        counted = max(map(moment_number, session.context.recent_moments), default=0)
        lagging = self.backend.session_activity_after(session.id, counted)
        if lagging:
            self.count(session, lagging)
        return session, len(lagging)

    def count(self, session: Session, moments: Sequence[Activity]) -> None:
        """Count recorded ``moments`` into ``session``'s stats and recent moments (each
        field assigned once: the models validate every assignment)."""
        if not moments:
            return
        stats, context = session.stats, session.context
        times = [m.timestamp for m in moments]
        firsts = [t for t in (stats.first_activity, min(times)) if t is not None]
        lasts = [t for t in (stats.last_activity, max(times)) if t is not None]
        stats.moments += len(moments)
        stats.tokens += sum(self.context.tokens.count(m.text) for m in moments)
        stats.bytes += sum(len(m.text.encode("utf-8")) for m in moments)
        stats.first_activity, stats.last_activity = min(firsts), max(lasts)
        context.raw_history_size += len(moments)
        context.recent_moments = [*context.recent_moments, *(m.id for m in moments)][
            -RECENT_MOMENTS:
        ]

    def settle(self) -> None:
        """Write the stored rows that lag behind their moments, caught up."""
        behind = [s.id for s in self.backend.list_sessions() if self.caught_up(s)[1]]
        if not behind:
            return  # no transaction (nor a YAML notebook's writer lock) for nothing
        with self.backend.atomic():
            for session_id in behind:
                stored = self.backend.get_session(session_id)
                if stored is not None and (caught_up := self.caught_up(stored))[1]:
                    self.backend.put_session(caught_up[0])

    def list(self, offset: int = 0, limit: int | None = None) -> list[Session]:
        found = self.backend.list_sessions(offset_of(offset), optional_limit(limit))
        return [self.caught_up(s)[0] for s in found]

    def find(
        self,
        text: str,
        status: TaskStatus | str | None,
        order: SessionOrder,
        offset: int,
        limit: int | None,
    ) -> builtins.list[Session]:
        """Sessions whose id or task holds ``text`` (any case), of ``status``, in ``order``
        (``started``: oldest first, as :meth:`list`; ``-started``, ``activity``: newest
        first). Reads every session's record: for lists of sessions, not of moments."""
        if order not in SESSION_ORDERS:
            raise InvalidInput(
                f"sessions: order {order!r} is not one of {', '.join(SESSION_ORDERS)}; "
                "leave it out for the oldest first"
            )
        try:
            wanted = None if status in (None, "") else TaskStatus(status)
        except ValueError:
            raise InvalidInput(
                f"sessions: status {status!r} is not one of "
                f"{', '.join(t.value for t in TaskStatus)}; nothing was listed"
            ) from None
        words = text.strip().casefold()
        found = [
            s
            for s in self.list()
            if (wanted is None or s.task_status is wanted)
            and (not words or words in s.id.casefold() or words in s.task.casefold())
        ]
        if order == "-started":
            found.reverse()
        elif order == "activity":
            found.sort(key=lambda s: s.stats.last_activity or s.started, reverse=True)
        start = offset_of(offset)
        end = None if optional_limit(limit) is None else start + (limit or 0)
        return found[start:end]

    def update(
        self,
        session_id: str,
        *,
        task: str | None = None,
        task_status: TaskStatus | str | None = None,
        condensed_history: str | None = None,
    ) -> Session:
        changes: dict[str, Any] = {}
        if task is not None:
            changes["task"] = task
        if task_status is not None:
            changes["task_status"] = task_status
        return self.change(
            session_id, lambda s: _apply(s, changes, condensed_history), "session update"
        )

    def change(self, session_id: str, change: Callable[[Session], _T], what: str) -> _T:
        """Read, change and write a session in one transaction; return what ``change`` gives."""
        with self.backend.atomic():
            session = self.get(session_id)
            before = session.model_dump()
            try:
                result = change(session)
            except ValidationError as err:
                raise InvalidInput(f"{what}: {describe_validation_error(err)}") from None
            if session.model_dump() != before:
                self.backend.put_session(validate_record(Session, session.model_dump(), what))
            return result

    def write_if_match(
        self, session_id: str, if_match: str | None, write: Callable[[], _T]
    ) -> tuple[_T, str]:
        with self.backend.atomic():
            if if_match is not None:
                current = etag_of(self.get(session_id))
                check_if_match(if_match, current, f"session {session_id}")
            result = write()
            return result, etag_of(self.get(session_id))

    # -- the audit log, pending threads, escalations, links ----------------------------------

    def decide(self, session_id: str, what: str, why: str = "", who: str = "owner") -> Decision:
        check_who(who, "decision")
        return self._log(session_id, what, why, who)

    def _log(self, session_id: str, what: str, why: str, who: str) -> Decision:
        """Append a decision; ``who`` checked by the caller (a guest's is ``guest:NAME``)."""
        required(what, "decision", "what was decided")
        decision = validate_record(
            Decision, {"when": now_utc(), "what": what, "why": why, "who": who}, "decision"
        )

        def append(s: Session) -> Decision:
            s.decisions.append(decision)
            return decision

        return self.change(session_id, append, "decision")

    def open_pending(self, session_id: str, what: str) -> PendingItem:
        required(what, "pending item", "what is open")

        def add(s: Session) -> PendingItem:
            item = validate_record(
                PendingItem,
                {"id": f"p_{len(s.pending) + 1}", "what": what, "since": now_utc()},
                "pending item",
            )
            s.pending.append(item)
            return item

        return self.change(session_id, add, "pending item")

    def close_pending(self, session_id: str, pending_id: str, resolution: str = "") -> PendingItem:
        def close(s: Session) -> PendingItem:
            item = _find(s.pending, pending_id, "pending item", s.id)
            if item.closed is not None:
                raise Conflict(f"{pending_id} of {s.id} was closed already at {item.closed}")
            item.closed = now_utc()
            item.resolution = resolution
            return item

        return self.change(session_id, close, "pending item")

    def escalate(self, session_id: str, to: str, why: str = "", slice: str = "") -> Escalation:
        required(to, "escalation", "the agent it goes to")

        def add(s: Session) -> Escalation:
            item = validate_record(
                Escalation,
                {
                    "id": f"e_{len(s.escalations) + 1}",
                    "when": now_utc(),
                    "to": to,
                    "why": why,
                    "slice": slice,
                },
                "escalation",
            )
            s.escalations.append(item)
            return item

        return self.change(session_id, add, "escalation")

    def resolve_escalation(self, session_id: str, escalation_id: str, outcome: str) -> Escalation:
        required(outcome, "escalation outcome", "the outcome")

        def resolve(s: Session) -> Escalation:
            item = _find(s.escalations, escalation_id, "escalation", s.id)
            if item.resolved is not None:
                raise Conflict(f"{escalation_id} of {s.id} has an outcome already")
            item.outcome = outcome
            item.resolved = now_utc()
            return item

        return self.change(session_id, resolve, "escalation")

    def link(
        self,
        session_id: str,
        target: str,
        relation: str,
        note: str,
    ) -> Link:
        if SESSION_ID_RE.fullmatch(target):
            self.get(target)
        elif MOMENT_ID_RE.fullmatch(target) and self.backend.get_moment(target) is None:
            raise NotFound(f"no moment {target} in {self.backend.location}")
        link = validate_record(Link, {"target": target, "relation": relation, "note": note}, "link")

        def append(s: Session) -> Link:
            s.links.append(link)
            return link

        return self.change(session_id, append, "link")

    def write_back(
        self,
        guest: str | None,
        session_id: str,
        kind: WriteBackKind,
        text: str,
        *,
        why: str = "",
        escalation_id: str | None = None,
    ) -> Decision:
        """One write-back, with its audit entry, in one rewrite of the session; a guest's
        within its caps (:mod:`.guest_caps`), counted in the same transaction."""
        limits = self.context.config.guests
        if guest is None:  # the owner, writing back as a guest would
            who = "owner"
        else:
            name = guest.strip()
            if not name or len(name) > 100:
                raise InvalidInput("write_back: guest must be a name of 1 to 100 characters")
            who = f"guest:{name}"
            guest_caps.check_size(limits, guest_caps.size_of(text, why))
        required(text, "write_back", "the decision, the open item or the outcome, as text")
        if kind not in ("decision", "pending", "escalation_outcome"):
            raise InvalidInput(
                f"write_back: kind {kind!r} is not decision, pending or escalation_outcome"
            )
        if kind == "escalation_outcome" and escalation_id is None:
            raise InvalidInput("write_back: an escalation outcome needs escalation_id")
        now = now_utc()

        def write(s: Session) -> Decision:
            if guest is not None:
                guest_caps.check_session(limits, s)
                size = guest_caps.size_of(text, why)
                guest_caps.count_write_back(self.backend, limits, name, size, now)
            what = text
            if kind == "pending":
                required(text, "pending item", "what is open")
                item = validate_record(
                    PendingItem,
                    {"id": f"p_{len(s.pending) + 1}", "what": text, "since": now},
                    "pending item",
                )
                s.pending.append(item)
                what = f"opened pending {item.id}: {text}"
            elif kind == "escalation_outcome":
                escalation = _find(s.escalations, escalation_id or "", "escalation", s.id)
                if escalation.resolved is not None:
                    raise Conflict(f"{escalation_id} of {s.id} has an outcome already")
                escalation.outcome, escalation.resolved = text, now
                what = f"outcome of {escalation_id}: {text}"
            decision = validate_record(
                Decision, {"when": now, "what": what, "why": why, "who": who}, "decision"
            )
            s.decisions.append(decision)
            return decision

        return self.change(session_id, write, "write_back")


def _apply(session: Session, changes: dict[str, Any], condensed_history: str | None) -> Session:
    for key, value in changes.items():
        setattr(session, key, value)
    if condensed_history is not None:
        session.context.condensed_history = condensed_history
    return session


def _find(items: Sequence[_Item], item_id: str, kind: str, session_id: str) -> _Item:
    for item in items:
        if item.id == item_id:
            return item
    raise NotFound(f"no {kind} {item_id} in session {session_id}")
