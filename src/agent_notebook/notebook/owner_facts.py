"""The owner's hand on the facts (issue 30): the audit log read and corrected, pending items
edited, and the conflicts the fact rules flagged listed and resolved.

The audit log only grows. A decision is named by its place in its session's log, ``d_N``
(``d_1`` the first); an edit never rewrites an entry: it appends a new one whose ``edits``
names the entry it corrects, and the listing marks the older one ``edited_by``. A pending
item (an open thread, not the log) is edited in place, and the log notes the change with
the text it had. Closing an item that is closed already is a :class:`Conflict` (409 over
HTTP): nothing is changed, and the message says when it was closed.

A conflict is a pair of moments linked ``conflicts_with`` (on both). The owner keeps one
side: the other gets ``superseded_by`` the kept one and ``valid_until`` (the later of the
two times: a later statement that was wrong never held), so it leaves the current view; or
dismisses the conflict: both stand. Either way the ``conflicts_with`` links go, and each
session involved gets an audit entry naming both moments, who and why. It has no ``source``:
that field names the moment an entry's text was read from (a redaction of that moment
blanks the entry), and a resolution's text is the owner's, not the moment's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ..core.validation import validate_record
from ..errors import Conflict, InvalidInput, NotFound
from ..model import (
    Decision,
    Moment,
    PendingItem,
    Session,
    check_moment_id,
    fact_link,
    now_utc,
)
from .checks import check_who, required
from .subjects import ConflictPair, ConflictSide, SubjectView, conflict_ids, conflict_side, view_of

if TYPE_CHECKING:
    from ..facts import FactJudge
    from .facts import FactKeeper
    from .sessions import Sessions

__all__ = [
    "ConflictPair",
    "ConflictResolution",
    "ConflictSide",
    "LoggedDecision",
    "OwnerFacts",
    "SubjectView",
    "excerpt",
]

DECISION_ID_RE = re.compile(r"d_([1-9][0-9]*)")
#: How much of a moment's text a listing shows.
EXCERPT_CHARS = 160


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` on one line, cut at ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class LoggedDecision(Decision):
    """An entry of a session's audit log with its place: ``d_N`` of ``session``;
    ``edited_by`` names the later entry that corrects it, if any."""

    session: str
    id: str
    edited_by: str | None = None


class ConflictResolution(BaseModel):
    """What :meth:`OwnerFacts.resolve_conflict` did; ``entries``, the audit entries."""

    a: str
    b: str
    kept: str | None = None
    superseded: str | None = None
    dismissed: bool = False
    entries: list[Decision]


def decision_number(decision_id: str, where: str) -> int:
    found = DECISION_ID_RE.fullmatch(decision_id.strip())
    if found is None:
        raise InvalidInput(
            f"{where}: {decision_id!r} is not a decision id; decisions are named d_N by their "
            "place in the session's log (d_1 the first): 'agent-notebook decisions --session "
            "S' lists them"
        )
    return int(found.group(1))


def logged(session: Session) -> list[LoggedDecision]:
    """The session's audit log, each entry with its ``d_N`` and the entry that edits it."""
    edited: dict[str, str] = {}
    for n, d in enumerate(session.decisions, 1):
        if d.edits is not None:
            edited[d.edits] = f"d_{n}"
    return [
        LoggedDecision(
            **d.model_dump(), session=session.id, id=f"d_{n}", edited_by=edited.get(f"d_{n}")
        )
        for n, d in enumerate(session.decisions, 1)
    ]


class OwnerFacts:
    """Decisions, pending items and conflicts by the owner's hand (see the module), the
    notebook's ``nb.facts``: ``nb.facts.conflicts()``, ``nb.facts.decision_log()``…"""

    def __init__(self, sessions: Sessions, keeper: FactKeeper) -> None:
        self.sessions = sessions
        self.backend = sessions.backend
        self.keeper = keeper

    @property
    def enabled(self) -> bool:
        """Whether the rules read decisions, open items, updates and conflicts from what is
        recorded (``facts.enabled`` in ``config.yaml``)."""
        return self.sessions.context.config.facts.enabled

    def off_hint(self) -> str | None:
        """What to tell someone who lists decisions, pending items or conflicts, or reads
        what is known about someone, while the rules are off (None when on): only what was
        entered by hand is there, and how to turn them on. Every front end says this one
        wording (the command line on stderr, HTTP as the page's ``note``, MCP as a text
        block of the tool's result); :meth:`about` builds its ``note`` on it."""
        if self.enabled:
            return None
        return (
            "facts are off: decisions, pending items and conflicts are read from the "
            "conversation only with 'facts: {enabled: true}' in config.yaml (what was "
            "entered by hand is listed either way)"
        )

    @property
    def judge(self) -> FactJudge | None:
        """What judges the fact rules' proposals on record (None: the rules alone);
        ``nb.facts.judge = LlmJudge(model)`` (see :mod:`agent_notebook.facts.judge`)."""
        return self.keeper.judge

    @judge.setter
    def judge(self, judge: FactJudge | None) -> None:
        self.keeper.judge = judge

    # -- what is known of someone ------------------------------------------------------

    def reindex(self, progress: Callable[[int], None] | None = None) -> int:
        """File every moment under the subjects it states facts about (the fact index),
        so that a new statement meets the earlier ones on the same subject in any session:
        run once on a notebook recorded before the index, or with facts off. Returns how
        many moments were filed anew; safe to stop and run again."""
        return self.keeper.reindex(progress=progress)

    def about(self, name: str, *, as_of: datetime | None = None) -> SubjectView:
        """What the notebook knows about ``name`` (a speaker, someone named in the turns, or
        ``"me"`` for the owner) at ``as_of`` (now by default): each fact's current value with
        the moment it came from, its history (what held when, what replaced it) and the open
        conflicts among its moments; see :mod:`agent_notebook.notebook.subjects`."""
        hint = self.off_hint()
        note = None
        if hint is not None:
            note = (
                f"{hint}; no update was linked on record, so nothing is known to be "
                "superseded and every value said is listed as current"
            )
        return view_of(self.backend, name, as_of=as_of, facts_enabled=self.enabled, off_note=note)

    # -- the audit log and pending items -------------------------------------------------

    def decision_log(self, session_id: str | None = None) -> list[LoggedDecision]:
        """Every session's audit log (or one's), each entry with its ``d_N`` and, when a
        later entry corrects it, ``edited_by``."""
        sessions = [self.sessions.get(session_id)] if session_id else self.sessions.list(0, None)
        return [entry for s in sessions for entry in logged(s)]

    def edit_decision(
        self,
        session_id: str,
        decision_id: str,
        *,
        what: str | None = None,
        why: str | None = None,
        who: str = "owner",
    ) -> LoggedDecision:
        """Correct decision ``d_N``: a new entry that ``edits`` it is appended (the log
        keeps both)."""
        number = decision_number(decision_id, "edit decision")
        if what is None and why is None:
            raise InvalidInput(
                f"edit decision {decision_id}: give the new text (what), the new reason "
                "(why) or both; nothing was changed"
            )
        if what is not None:
            required(what, f"edit decision {decision_id}", "what was decided")
        check_who(who, f"edit decision {decision_id}")

        def append(s: Session) -> LoggedDecision:
            if number > len(s.decisions):
                raise NotFound(
                    f"no decision {decision_id} in session {s.id}: its log has "
                    f"{len(s.decisions)} entries ('agent-notebook decisions --session {s.id}')"
                )
            old = s.decisions[number - 1]
            new = validate_record(
                Decision,
                {
                    "when": now_utc(),
                    "what": old.what if what is None else what,
                    "why": old.why if why is None else why,
                    "who": who,
                    "source": old.source,
                    "edits": f"d_{number}",
                },
                "decision edit",
            )
            if (new.what, new.why) == (old.what, old.why):
                raise InvalidInput(
                    f"edit decision {decision_id}: the text and reason are those it has; "
                    "give a change (nothing was changed)"
                )
            s.decisions.append(new)
            return logged(s)[-1]

        return self.sessions.change(session_id, append, "decision edit")

    def edit_pending(
        self, session_id: str, pending_id: str, what: str, *, who: str = "owner"
    ) -> PendingItem:
        """Reword an open pending item; the audit log notes the text it had."""
        required(what, f"edit pending {pending_id}", "what is open")
        check_who(who, f"edit pending {pending_id}")

        def edit(s: Session) -> PendingItem:
            item = next((p for p in s.pending if p.id == pending_id), None)
            if item is None:
                raise NotFound(
                    f"no pending item {pending_id} in session {s.id}; "
                    f"'agent-notebook pending --session {s.id}' lists them"
                )
            if item.closed is not None:
                raise Conflict(
                    f"{pending_id} of {s.id} was closed at {item.closed}; a closed item "
                    "is part of the record and is not edited (open a new one)"
                )
            if item.what == what:
                return item
            s.decisions.append(
                validate_record(
                    Decision,
                    {"when": now_utc(), "what": f"edited pending {pending_id}", "who": who}
                    | {"why": f"was: {item.what}", "source": item.source},
                    "audit entry",
                )
            )
            item.what = what
            return item

        return self.sessions.change(session_id, edit, "pending item")

    def pending_items(
        self, session_id: str | None = None, *, open_only: bool = False
    ) -> list[tuple[str, PendingItem]]:
        """``(session id, item)`` of every session's pending items (or one's)."""
        sessions = [self.sessions.get(session_id)] if session_id else self.sessions.list(0, None)
        return [(s.id, p) for s in sessions for p in s.pending if not open_only or p.closed is None]

    # -- conflicts -----------------------------------------------------------------------

    def conflicts(self, session_id: str | None = None) -> list[ConflictPair]:
        """Every pair flagged ``conflicts_with`` (in ``session_id`` when given: a pair with
        a side there), oldest first."""
        backend = self.backend
        moments: Iterable[Moment] = (
            backend.list_moments(self.sessions.get(session_id).id)
            if session_id
            else backend.iter_moments()
        )
        pairs: set[tuple[str, str]] = set()
        for m in moments:
            for other in conflict_ids(m):
                pairs.add(tuple(sorted((m.id, other), key=lambda i: int(i[2:]))))  # type: ignore[arg-type]
        now = now_utc()
        found = []
        for a_id, b_id in sorted(pairs, key=lambda p: (int(p[0][2:]), int(p[1][2:]))):
            a, b = backend.get_moment(a_id), backend.get_moment(b_id)
            if a is None or b is None or a.redacted is not None or b.redacted is not None:
                continue
            first, second = sorted((a, b), key=lambda m: (m.timestamp, m.number))
            found.append(ConflictPair(a=conflict_side(first, now), b=conflict_side(second, now)))
        return found

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
        (both stand); audited in each session involved."""
        a_id, b_id = a, b
        check_moment_id(a_id)
        check_moment_id(b_id)
        check_who(who, f"resolve conflict {a_id} vs {b_id}")
        if dismiss == (keep is not None):
            raise InvalidInput(
                f"resolve conflict {a_id} vs {b_id}: give keep (the side that holds, m_N) "
                "or dismiss (both stand), one of them; nothing was changed"
            )
        if keep is not None and keep not in (a_id, b_id):
            raise InvalidInput(
                f"resolve conflict {a_id} vs {b_id}: keep {keep!r} is neither side; keep "
                f"{a_id} or {b_id}, or dismiss the conflict (both stand)"
            )
        backend = self.backend
        with backend.atomic():
            side_a, side_b = self._flagged(a_id, b_id)
            for m, other in ((side_a, b_id), (side_b, a_id)):
                gone = fact_link("conflicts_with", other)
                m.relations.links = [link for link in m.relations.links if link != gone]
            result = ConflictResolution(
                a=a_id, b=b_id, kept=keep, dismissed=keep is None, entries=[]
            )
            what = f"conflict {a_id} vs {b_id} dismissed: both stand"
            if keep is not None:
                winner, loser = (side_a, side_b) if keep == a_id else (side_b, side_a)
                _supersede(loser, winner)
                result.superseded = loser.id
                what = f"conflict {a_id} vs {b_id} resolved: kept {keep}, {loser.id} superseded"
            backend.put_moments([side_a, side_b])
            for session_id in dict.fromkeys((side_a.session, side_b.session)):
                entry = validate_record(
                    Decision, {"when": now_utc(), "what": what, "why": reason, "who": who}, what
                )
                self.sessions.change(session_id, _appending(entry), what)
                result.entries.append(entry)
        return result

    # -- a moment's marks --------------------------------------------------------------

    def mark_moment(
        self, moment_id: str, *, importance: float | None = None, pinned: bool | None = None
    ) -> Moment:
        """Change a moment's importance (0 to 1) or pin (a pinned moment is never
        compacted); only the marks change: a moment's text is immutable (redaction aside)."""
        if importance is not None and not 0.0 <= importance <= 1.0:
            raise InvalidInput(
                f"mark {moment_id}: importance {importance} is outside 0 to 1; give a number "
                "such as 0.8 (1.0 keeps the moment from compaction, like a pin); nothing changed"
            )
        backend = self.backend
        with backend.atomic():
            moment = backend.get_moment(moment_id)
            if moment is None:
                raise NotFound(f"mark: no moment {moment_id} in {backend.location}")
            if importance is not None:
                moment.metadata.importance = round(importance, 2)
            if pinned is not None:
                moment.metadata.pinned = pinned
            backend.put_moments([moment])
        return moment

    def _flagged(self, a_id: str, b_id: str) -> tuple[Moment, Moment]:
        """Both moments, checked to exist and to be flagged as conflicting."""
        backend = self.backend
        found = []
        for wanted in (a_id, b_id):
            got = backend.get_moment(wanted)
            if got is None:
                raise NotFound(f"resolve conflict: no moment {wanted} in {backend.location}")
            found.append(got)
        a, b = found
        if b_id not in conflict_ids(a) and a_id not in conflict_ids(b):
            raise NotFound(
                f"{a_id} and {b_id} are not flagged as conflicting (resolved already?); "
                "'agent-notebook conflicts' lists the open conflicts"
            )
        return a, b


def _supersede(loser: Moment, winner: Moment) -> None:
    """``loser`` ends where the later of the two was said (a later statement that was
    wrong never held)."""
    link = fact_link("superseded_by", winner.id)
    if link not in loser.relations.links:
        loser.relations.links = [*loser.relations.links, link]
    end = max(winner.timestamp, loser.timestamp)
    loser.valid_until = end if loser.valid_until is None else min(loser.valid_until, end)


def _appending(entry: Decision) -> Callable[[Session], None]:
    return lambda s: s.decisions.append(entry)
