"""The fact engine (:mod:`agent_notebook.facts`) applied on record, and the current view.

The raw moments are written first, in their own transaction; what the rules derive comes
second, in another (a failure there loses no moment, and is logged): the decisions and
pending items read from the moments go into the session's ``decisions`` and ``pending``
(with their ``source`` moment), a pending item a later moment resolves is closed (its
``closed_by`` and a resolution that names that moment), links go into ``relations.links``
as ``relation:m_N`` (``duplicate_of`` on the repeat and ``repeated_by`` on the first said,
whose importance a repeat raises; ``superseded_by`` on the earlier fact
with its ``valid_until`` set to the later moment's time, ``conflicts_with`` on both), and
an expiry read from the text ("until Friday") into ``expires`` unless the caller gave one.

:class:`FactKeeper` keeps one engine for the whole notebook, fed in the order the moments
were recorded, so a statement meets what was said before it in any session (a job changed
in a later conversation, a plan carried over several days); a pending item is closed in the
session it was opened in. It catches up from the backend (the ``facts.window`` moments
recorded before) when another writer recorded in between. Vectors are made off the hot path, so on record only exact repeats are folded;
paraphrases need the vectors (see ``bench/facts_beam.py``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ..errors import NotebookError
from ..model import Decision, KeptLine, Moment, PendingItem, Session, fact_link
from ..storage import StorageBackend

if TYPE_CHECKING:  # the rules load on the first record with facts on (~0.1 s of regexes)
    from ..facts import Closure, FactEngine, FactJudge, FactLink, Findings, Statement

__all__ = [
    "FactKeeper",
    "FactsApplied",
    "as_of_until",
    "still_current",
    "view_limit",
    "without_redacted",
]

log = logging.getLogger(__name__)


@dataclass
class FactsApplied:
    """What one record added: counts, for a caller or a test to see."""

    decisions: int = 0
    pending: int = 0
    closed: int = 0
    links: list[str] = field(default_factory=list)


#: Unit vectors of texts, for the paraphrase gate (``facts.paraphrases``); None: none made.
Vectorize = Callable[[Sequence[str]], list[list[float]] | None]


def statement_of(moment: Moment, vector: Sequence[float] | None = None) -> Statement:
    from ..facts import Statement

    return Statement(
        moment.id, moment.content.text, moment.timestamp, moment.role, moment.speaker, vector
    )


def statement_of_kept(kept: KeptLine) -> Statement:
    """The statement a rollup's kept line was (its original may be archived)."""
    from ..facts import Statement

    speaker = kept.speaker.strip()
    text = kept.text.removeprefix(f"{speaker}: ") if speaker else kept.text
    return Statement(kept.source, text, kept.said, kept.role, kept.speaker, None)


class FactKeeper:
    """Applies the fact rules to the moments a notebook records (one per notebook)."""

    def __init__(
        self, backend: StorageBackend, window: int, vectorize: Vectorize | None = None
    ) -> None:
        self.backend = backend
        self.window = window
        self.vectorize = vectorize
        #: Asked about the links the rules propose (``facts.LlmJudge``); None: the rules
        #: alone. Engines made after it is set use it.
        self.judge: FactJudge | None = None
        self._lock = threading.Lock()
        #: The notebook's engine, the last moment it was fed and how many it was fed since
        #: it was made (None: caught up anew).
        self._engine: tuple[FactEngine, str, int] | None = None

    def after_record(self, session_id: str, moments: Sequence[Moment]) -> FactsApplied:
        """Derive and store what ``moments`` (just recorded in ``session_id``, in order) add.
        The moments are written already: a failure here is logged, never raised, and the
        engine is dropped (the next record catches up from the backend)."""
        texts = [m for m in moments if m.content.text.strip() and m.redacted is None]
        if not texts:
            return FactsApplied()
        try:
            vectors = self.vectorize([m.content.text for m in texts]) if self.vectorize else None
            with self._lock:
                engine, fed = self._caught_up(moments)
                first = min(m.number for m in moments)
                findings = []
                kept_in: dict[str, str] = {}  # a kept line's source -> the rollup keeping it
                for n, m in enumerate(texts):
                    statement = statement_of(m, vectors[n] if vectors else None)
                    self._recall(engine, statement, first, kept_in)
                    findings.append(engine.observe(statement))
                self._engine = (engine, moments[-1].id, fed + len(texts))
            return self._store(session_id, moments, findings, kept_in)
        except (NotebookError, ValidationError) as err:
            log.warning("facts of %s in %s not derived: %s", moments[-1].id, session_id, err)
            self.forget()
            return FactsApplied()

    def reindex(self, batch: int = 500, progress: Callable[[int], None] | None = None) -> int:
        """File every moment under the keys of what it states (``metadata.fact_keys``, the
        fact index), read in the order recorded as on record: for a notebook recorded
        before the index, or with facts off. Links and decisions are not derived again.
        Each batch is one transaction that changes the keys alone (a moment another writer
        changed meanwhile keeps its change). Returns how many moments were filed anew."""
        from ..facts import FactEngine

        refiled = 0
        engine, fed = FactEngine(), 0
        keys: dict[str, list[str]] = {}
        for moment in self.backend.iter_moments(batch):
            if fed >= 2 * self.window:  # what the engine holds stays bounded, as on record
                engine, fed = FactEngine(), 0
            found: list[str] = []
            if moment.content.text.strip() and moment.redacted is None and moment.rollup is None:
                found = engine.observe(statement_of(moment)).keys
                fed += 1
            if found != moment.metadata.fact_keys:
                keys[moment.id] = found
            if len(keys) >= batch:
                refiled += self._file(keys)
            if progress is not None:
                progress(1)
        refiled += self._file(keys)
        self.forget()
        return refiled

    def _file(self, keys: dict[str, list[str]]) -> int:
        """Set the fact keys of the moments ``keys`` names, in one transaction; empties it."""
        with self.backend.atomic():
            moments = self.backend.get_moments(list(keys))
            for moment in moments:
                moment.metadata.fact_keys = keys[moment.id]
            self.backend.put_moments(moments)
        keys.clear()
        return len(moments)

    def forget(self) -> None:
        """Drop the engine (after a redaction, a deletion or an import: what it read may be
        gone); the next record catches up from the backend."""
        with self._lock:
            self._engine = None

    def _caught_up(self, moments: Sequence[Moment]) -> tuple[FactEngine, int]:
        """The notebook's engine, fed the ``window`` moments recorded before ``moments``,
        and how many it was fed. Moments are numbered in the order recorded, so the cache
        holds when the moment numbered just before these is the last one it was fed: no
        scan of the notebook. An engine fed twice the window is made anew from the window,
        so what it holds (and what each record compares with) stays bounded in a
        long-lived process however large the notebook grows."""
        first = min(m.number for m in moments)
        if self._engine is not None:
            engine, last, fed = self._engine
            if last == f"m_{first - 1}" and fed < 2 * self.window:
                return engine, fed
        wanted = [f"m_{n}" for n in range(max(1, first - self.window), first)]
        new = {m.id for m in moments}
        earlier = sorted(
            (m for m in self.backend.get_moments(wanted) if m.id not in new and m.rollup is None),
            key=lambda m: m.number,
        )
        from ..facts import FactEngine

        engine = FactEngine(judge=self.judge)
        fed = 0
        for m in earlier:
            if m.content.text.strip() and m.redacted is None:
                engine.observe(statement_of(m))
                fed += 1
        return engine, fed

    def _recall(
        self, engine: FactEngine, statement: Statement, before: int, kept_in: dict[str, str]
    ) -> None:
        """Give ``engine`` the latest statements filed under the keys of ``statement`` (the
        fact index, in any session, below moment ``before``) that it does not hold: what
        was said of the same subject beyond the window. A rollup is filed under the keys of
        the lines it keeps word for word (its originals may be archived): those lines are
        given as the statements they were, and ``kept_in`` learns which rollup keeps each."""
        keys = engine.keys_of(statement)
        if not keys:
            return
        found = self.backend.fact_key_members(keys, before, FACT_KEY_REACH)
        wanted = [f"m_{n}" for n in found if not engine.knows(f"m_{n}")]
        for moment in sorted(self.backend.get_moments(wanted), key=lambda m: m.number):
            if moment.redacted is not None or not moment.content.text.strip():
                continue
            if moment.rollup is not None:
                for kept in moment.rollup.kept:
                    if set(kept.fact_keys) & set(keys):
                        kept_in[kept.source] = moment.id
                        if not engine.knows(kept.source):
                            engine.recall(
                                statement_of_kept(kept), superseded=kept.superseded_by is not None
                            )
                continue
            ended = any(link.startswith("superseded_by:") for link in moment.relations.links)
            engine.recall(statement_of(moment), superseded=ended)

    def _store(
        self,
        session_id: str,
        moments: Sequence[Moment],
        findings: Iterable[Findings],
        kept_in: dict[str, str],
    ) -> FactsApplied:
        applied = FactsApplied()
        found = list(findings)
        if not any(
            f.decisions or f.pending or f.closures or f.links or f.expires or f.keys for f in found
        ):
            return applied
        with self.backend.atomic():
            session = self.backend.get_session(session_id)
            if session is None:
                return applied
            changed = {m.id: self.backend.get_moment(m.id) or m for m in moments}
            touched: set[str] = set()
            others: dict[str, Session] = {}  # sessions whose pending items were closed here
            for f in found:
                self._session_facts(session, f, applied)
                for c in f.closures:
                    self._close(session, others, c, changed, applied)
                for d in f.decisions:
                    if d.replaces:
                        self._replace(session, others, d.replaces, d.source, changed)
                for link in f.links:
                    if link.relation == "superseded_by" and link.source in kept_in:
                        rollup = self._end_kept(kept_in[link.source], link, changed)
                        if rollup is not None:
                            applied.links.append(f"{rollup} kept {link.source} superseded")
                            touched.add(rollup)
                    moment = changed.get(link.source) or self.backend.get_moment(link.source)
                    if moment is None:
                        continue
                    changed[moment.id] = moment
                    entry = fact_link(link.relation, link.target)
                    if entry not in moment.relations.links:
                        moment.relations.links = [*moment.relations.links, entry]
                        applied.links.append(f"{link.source} {entry}")
                        touched.add(moment.id)
                    if link.relation == "superseded_by" and moment.valid_until is None:
                        moment.valid_until = link.valid_until
                        touched.add(moment.id)
                    if link.relation == "duplicate_of":
                        first = changed.get(link.target) or self.backend.get_moment(link.target)
                        if first is not None and _repeated(first, link.source):
                            changed[first.id] = first
                            touched.add(first.id)
                own = changed.get(f.statement)
                if f.expires is not None and own is not None and own.expires is None:
                    own.expires = f.expires
                    touched.add(own.id)
                if own is not None and f.keys and own.metadata.fact_keys != f.keys:
                    own.metadata.fact_keys = list(f.keys)
                    touched.add(own.id)
            if touched:
                self.backend.put_moments([changed[i] for i in sorted(touched)])
            if applied.decisions or applied.pending or applied.closed or others:
                self.backend.put_session(session)
            for other in others.values():
                self.backend.put_session(other)
        return applied

    def _end_kept(self, rollup_id: str, link: FactLink, changed: dict[str, Moment]) -> str | None:
        """Mark the line of rollup ``rollup_id`` that keeps ``link.source`` as a moment is
        marked when a later one ends it (``valid_until``, ``superseded_by``), in its text too;
        the rollup's id, or None when it keeps no such line still standing."""
        from ..compaction.rollup import kept_line

        rollup = changed.get(rollup_id) or self.backend.get_moment(rollup_id)
        if rollup is None or rollup.rollup is None:
            return None
        lines = list(rollup.rollup.kept)
        for n, kept in enumerate(lines):
            if kept.source == link.source and kept.superseded_by is None:
                ended = kept.model_copy(
                    update={"valid_until": link.valid_until, "superseded_by": link.target}
                )
                lines[n] = ended
                text = rollup.content.text.replace(kept_line(kept), kept_line(ended), 1)
                changed[rollup_id] = rollup.model_copy(
                    update={
                        "content": rollup.content.model_copy(update={"text": text}),
                        "rollup": rollup.rollup.model_copy(update={"kept": lines}),
                    }
                )
                return rollup_id
        return None

    def _replace(
        self,
        here: Session,
        others: dict[str, Session],
        replaced: str,
        by: str,
        changed: dict[str, Moment],
    ) -> None:
        """Mark the decision read from ``replaced`` as replaced by the one read from ``by``,
        in the session it was logged in (this one or another)."""
        session = self._session_of(here, others, replaced, changed)
        if session is None:
            return
        for n, entry in enumerate(session.decisions):
            if entry.source == replaced and entry.replaced_by is None:
                session.decisions = [
                    *session.decisions[:n],
                    entry.model_copy(update={"replaced_by": by}),
                    *session.decisions[n + 1 :],
                ]
                if session is not here:
                    others[session.id] = session
                return

    def _session_of(
        self, here: Session, others: dict[str, Session], source: str, changed: dict[str, Moment]
    ) -> Session | None:
        """The session the moment ``source`` was said in, as this record holds it."""
        moment = changed.get(source) or self.backend.get_moment(source)
        if moment is None:
            return None
        if moment.session == here.id:
            return here
        return others.get(moment.session) or self.backend.get_session(moment.session)

    def _close(
        self,
        here: Session,
        others: dict[str, Session],
        closure: Closure,
        changed: dict[str, Moment],
        applied: FactsApplied,
    ) -> None:
        """Close ``closure``'s item in the session it was opened in (this one or another)."""
        source = closure.item.source
        session = self._session_of(here, others, source, changed)
        if session is None:
            return
        for item in session.pending:
            if item.source == source and item.what == closure.item.what and item.closed is None:
                item.closed = closure.when
                item.closed_by = closure.closed_by
                item.resolution = f"closed by {closure.closed_by}"
                applied.closed += 1
                if session is not here:
                    others[session.id] = session
                break

    @staticmethod
    def _session_facts(session: Session, found: Findings, applied: FactsApplied) -> None:
        for d in found.decisions:
            session.decisions = [
                *session.decisions,
                Decision(when=d.when, what=d.what, why=d.why, who=d.who, source=d.source),
            ]
            applied.decisions += 1
        from ..facts.text import item_words  # loaded with the rules, on the first record

        for p in found.pending:
            if any(
                item_words(i.what) == item_words(p.what)
                for i in session.pending
                if i.closed is None
            ):
                continue  # the same question asked again is the one item
            item = PendingItem(
                id=f"p_{len(session.pending) + 1}", what=p.what, since=p.since, source=p.source
            )
            session.pending = [*session.pending, item]
            applied.pending += 1


#: How many of the latest statements filed under one key of the fact index a new
#: statement meets beyond the engine's window: each older one was ended (or left standing)
#: when those were said, and the cost of a record stays the same as the notebook grows.
FACT_KEY_REACH = 8

#: What each repeat adds to the importance of the moment first said, up to the cap (1.0 is
#: pinned: a repeat does not pin).
REPEAT_IMPORTANCE = 0.1
REPEAT_IMPORTANCE_CAP = 0.9


def _repeated(first: Moment, repeat: str) -> bool:
    """Mark ``first`` repeated by ``repeat``: a ``repeated_by`` link, and more importance."""
    entry = fact_link("repeated_by", repeat)
    if entry in first.relations.links:
        return False
    first.relations.links = [*first.relations.links, entry]
    importance = first.metadata.importance
    if importance < REPEAT_IMPORTANCE_CAP:
        first.metadata.importance = min(REPEAT_IMPORTANCE_CAP, importance + REPEAT_IMPORTANCE)
    return True


def still_current(moment: Moment, at: datetime) -> bool:
    """Whether ``moment`` is part of the current view at ``at``: said by then, and neither
    superseded nor expired by then."""
    return moment.timestamp <= at and moment.holds_at(at)


#: A current view asks search for this many times the hits it returns: some will be
#: superseded or expired, and are left out after ranking.
CURRENT_VIEW_OVERFETCH = 3


def view_limit(limit: int, filtered: bool) -> int:
    """How many hits to ask search for, to return ``limit`` after the current view."""
    return limit * CURRENT_VIEW_OVERFETCH if filtered else limit


def as_of_until(as_of: datetime, until: datetime | None) -> datetime:
    """The ``until`` filter of a search ``as_of`` a time: nothing said after it."""
    return as_of if until is None else min(until, as_of)


def without_redacted(session: Session, moment_ids: Collection[str]) -> Session:
    """``session`` without the decisions and pending items the rules read from the moments
    ``moment_ids`` (being redacted): derived from that text, they go with it, leaving no
    ``[redacted]`` husk among the decisions (the audit log notes the redaction itself).
    What was entered by hand (no ``source``) stays. The same object when none was read
    from them."""
    decisions = [d for d in session.decisions if d.source not in moment_ids]
    pending = [p for p in session.pending if p.source not in moment_ids]
    if len(decisions) == len(session.decisions) and len(pending) == len(session.pending):
        return session
    return session.model_copy(update={"decisions": decisions, "pending": pending})
