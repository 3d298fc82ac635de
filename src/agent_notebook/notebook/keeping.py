"""What the facts layer holds as current decides what a rollup keeps (issue 41).

:class:`FactsKeeper` is the notebook's :class:`~agent_notebook.compaction.keep.Keeper`. On
top of what the moments carry (:class:`~agent_notebook.compaction.keep.LinkKeeper`: pins,
importance, supersession and conflict links, expiry), it reads the decisions and open items:

* with facts on, from the sessions' logs (``decisions``, ``pending``, with their ``source``
  moments): a standing decision or an open item is kept word for word; a replaced decision
  fades to "decided: X → Y, date", a closed item to "closed: X, date";
* with facts off, the same rules run over the moments being rolled up (decisions and open
  items, an item closed by a later moment among them), so a notebook recorded without facts
  keeps its decisions and open questions too.

A replaced fact fades to its subject and both values when the claim rules read them
("venue: Lakeside Pavilion → Casa Lucia, 25 Nov 2026"), else to both texts, short.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..compaction.keep import KeepList, LinkKeeper, day_of, short_text
from ..model import Moment, Session
from ..storage import StorageBackend

if TYPE_CHECKING:  # the rules load when a run reads them
    from ..facts.threads import OpenLine

__all__ = ["FactsKeeper"]

#: The fact index's keys of a state (a value, a count, an employer, a home, a quantity), as
#: opposed to an act ("went hiking"): a moment filed under one states a current fact.
STATE_KEYS = ("value/", "count/", "employer/", "home/", "q/")
#: A later moment closes an open item read with the facts off only this near after it.
CLOSING_REACH = 60


class FactsKeeper(LinkKeeper):
    """The notebook's keeper (see the module doc); one per compaction run: it remembers the
    sessions and the rules' reading of each moment, which every level asks again."""

    def __init__(
        self, backend: StorageBackend, keep_whole_importance: float, facts_on: bool
    ) -> None:
        super().__init__(keep_whole_importance)
        self.backend = backend
        self.facts_on = facts_on
        self._sessions: dict[str, Session | None] = {}
        self._read: dict[str, tuple[bool, list[OpenLine]]] = {}  # moment id -> rules' reading

    def keep_list(self, originals: Sequence[Moment], now: datetime) -> KeepList:
        found = KeepList()
        live = [m for m in originals if m.rollup is None and m.redacted is None]
        if self.facts_on:
            self._logged(live, found)
            for m in live:  # what it states of a thing's state, and still holds
                if m.holds_at(now) and any(k.startswith(STATE_KEYS) for k in m.metadata.fact_keys):
                    found.keep(m.id, "fact")
        else:
            self._ruled(live, found)
        plain = super().keep_list(live, now)
        for moment_id, line in plain.faded.items():
            if moment_id not in found.kept:  # a decision that stands is kept, whatever else
                found.fade(moment_id, line)
        for moment_id, kind in plain.kept.items():
            if moment_id not in found.faded:
                found.keep(moment_id, kind)
        return found

    # -- facts on: the logs -------------------------------------------------------------------

    def _logged(self, originals: Sequence[Moment], found: KeepList) -> None:
        ids = {m.id for m in originals}
        for session_id in dict.fromkeys(m.session for m in originals):
            session = self._session(session_id)
            if session is None:
                continue
            for decision in session.decisions:
                if decision.source not in ids:
                    continue
                if decision.replaced_by is None:
                    found.keep(decision.source, "decision")
                else:
                    later = self._decision_from(decision.replaced_by)
                    found.fade(
                        decision.source,
                        f"decided: {short_text(decision.what, 60)} → "
                        f"{short_text(later[0], 60) if later else decision.replaced_by}"
                        + (f", {day_of(later[1])}" if later else ""),
                    )
            for item in session.pending:
                if item.source not in ids:
                    continue
                if item.closed is None:
                    found.keep(item.source, "open")
                else:
                    found.fade(
                        item.source, f"closed: {short_text(item.what)}, {day_of(item.closed)}"
                    )

    def _session(self, session_id: str) -> Session | None:
        if session_id not in self._sessions:
            self._sessions[session_id] = self.backend.get_session(session_id)
        return self._sessions[session_id]

    def _decision_from(self, moment_id: str) -> tuple[str, datetime] | None:
        """What the decision read from ``moment_id`` says, and when, from its session's log."""
        moment = self.backend.get_moment(moment_id)
        session = self._session(moment.session) if moment is not None else None
        for decision in session.decisions if session is not None else []:
            if decision.source == moment_id:
                return decision.what, decision.when
        return None

    # -- facts off: the rules over the moments -------------------------------------------------

    def _ruled(self, originals: Sequence[Moment], found: KeepList) -> None:
        from ..facts.threads import closes

        for n, moment in enumerate(originals):
            decides, opened = self._reading(moment)
            if decides:
                found.keep(moment.id, "decision")
            for item in opened:
                closer = next(
                    (
                        later
                        for later in originals[n + 1 : n + 1 + CLOSING_REACH]
                        if closes(
                            item,
                            later.content.text,
                            later.speaker == moment.speaker,
                            later.role,
                            decided=self._reading(later)[0],
                        )
                    ),
                    None,
                )
                if closer is None:
                    found.keep(moment.id, "open")
                elif not decides:
                    found.fade(
                        moment.id, f"closed: {short_text(item.what)}, {day_of(closer.timestamp)}"
                    )

    def _reading(self, moment: Moment) -> tuple[bool, list[OpenLine]]:
        """Whether ``moment`` states a decision, and the items it opens (remembered)."""
        if moment.id not in self._read:
            from ..facts.text import rule_language
            from ..facts.threads import decisions_in, open_lines_in

            text, role = moment.content.text, moment.role
            if not text.strip() or rule_language(text) is None:
                self._read[moment.id] = (False, [])
            else:
                opened = list(open_lines_in(text, role))
                self._read[moment.id] = (bool(decisions_in(text, role)), opened)
        return self._read[moment.id]

    # -- a replaced fact, one line -------------------------------------------------------------

    def replaced_line(self, old: Moment, new: Moment | None) -> str:
        from ..facts.claims import claims_in, same_subject

        if new is not None:
            for before in claims_in(old.content.text):
                for after in claims_in(new.content.text):
                    if (
                        same_subject(before, after)
                        and before.attribute == after.attribute
                        and before.value != after.value
                    ):
                        subject = _subject_words(before.sentence, before.subject)
                        name = subject or before.attribute
                        if name == "value" or not name:
                            break
                        ended = f", {day_of(new.timestamp)}"
                        return (
                            f"{name}: {_as_written(before.value, before.sentence)} → "
                            f"{_as_written(after.value, after.sentence)}{ended}"
                        )
        return super().replaced_line(old, new)


def _subject_words(sentence: str, stems: frozenset[str]) -> str:
    """The words of ``sentence`` whose stems are ``stems`` ("venue" for {"venu"})."""
    from ..facts.text import content_stems

    words = [w for w in re.findall(r"[\w'-]+", sentence) if content_stems(w) & stems]
    return " ".join(dict.fromkeys(w.casefold() for w in words))


def _as_written(value: str, sentence: str) -> str:
    """``value`` (case-folded by the rules) as ``sentence`` writes it."""
    at = sentence.casefold().find(value)
    return sentence[at : at + len(value)] if at >= 0 else value
