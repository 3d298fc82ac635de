"""The fact engine: statements go in, in the order they were said; what each one adds comes
out: the decisions and open threads it states, the open threads it closes, and its links to
earlier statements (a repeat, an update that ends one, a contradiction) and its expiry.

Pure and in memory: no I/O, no model; vectors, when the caller has them, are given with the
statements (unit length) and only gate paraphrases. Deterministic: the same statements in
the same order give the same findings.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final, Literal

from ..core.lexical import tokenize
from .claims import Claim, claims_in, reported_changes_in
from .experience import Affirmed, Denial, affirmed_clauses, denials_in, experience_conflict
from .expiry import expires_from_text
from .judge import FactJudge, Verdict
from .quantities import Quantity, meets, quantities_in
from .relate import contradicts, negations_of, numbers_of, overlap, supersedes
from .text import (
    CALENDAR_WORDS,
    content_stems,
    item_words,
    prose,
    rule_language,
    sentences,
    spelled_out,
)
from .threads import OpenLine, PendingKind, closes, decisions_in, open_lines_in

__all__ = [
    "Closure",
    "FactEngine",
    "FactLink",
    "FactRules",
    "Findings",
    "FoundDecision",
    "FoundPending",
    "Relation",
    "Statement",
]

Relation = Literal["duplicate_of", "superseded_by", "conflicts_with"]


@dataclass(frozen=True, slots=True)
class Statement:
    """One thing said: a moment's id, text, time (aware), role and speaker, and its vector
    (unit length) when the caller has one."""

    id: str
    text: str
    when: datetime
    role: str = "user"
    speaker: str = ""
    vector: Sequence[float] | None = None

    @property
    def who(self) -> str:
        return self.speaker or self.role

    @property
    def person(self) -> str:
        """Who, case aside: "Maya" and "maya" in two sessions are one person."""
        return self.who.casefold()


@dataclass(frozen=True, slots=True)
class FoundDecision:
    what: str
    why: str
    who: str
    when: datetime
    source: str
    #: The statement whose decision this one replaces ("Scratch that, let's drive"), if any.
    replaces: str = ""


@dataclass(frozen=True, slots=True)
class FoundPending:
    what: str
    kind: PendingKind
    who: str
    since: datetime
    source: str


@dataclass(frozen=True, slots=True)
class Closure:
    """``closed_by`` resolves ``item``."""

    item: FoundPending
    closed_by: str
    when: datetime


@dataclass(frozen=True, slots=True)
class FactLink:
    """``source`` → ``target``: ``duplicate_of`` (source repeats target), ``superseded_by``
    (target ends source; ``valid_until`` is target's time) or ``conflicts_with`` (both ways)."""

    source: str
    relation: Relation
    target: str
    valid_until: datetime | None = None
    #: The sentence of the later statement that made the link.
    because: str = ""


@dataclass(frozen=True, slots=True)
class Findings:
    statement: str
    decisions: list[FoundDecision] = field(default_factory=list)
    pending: list[FoundPending] = field(default_factory=list)
    closures: list[Closure] = field(default_factory=list)
    links: list[FactLink] = field(default_factory=list)
    expires: datetime | None = None
    #: What the statement states a fact about: the keys it is filed under, by which a
    #: later statement finds it (:meth:`FactEngine.keys_of`, :meth:`FactEngine.recall`).
    keys: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class FactRules:
    """The thresholds of the rules."""

    #: A paraphrase: cosine of the vectors at least this, and…
    paraphrase_cosine: float = 0.9
    #: …content-word overlap (Jaccard) at least this.
    paraphrase_overlap: float = 0.5
    #: Fewer content words than this: too little to call a repeat ("ok thanks").
    min_repeat_words: int = 3
    #: A "never" claim and an affirmed one: at least this many content words in common.
    min_experience_words: int = 2


@dataclass(slots=True)
class _Seen:
    """What the engine keeps of an earlier statement."""

    statement: Statement
    stems: frozenset[str]
    numbers: frozenset[str]
    negations: int
    claims: list[Claim]
    #: The content stems of its "I have never …" objects, and of its affirmed first-person
    #: sentences of experience ("I have added …", "I used …").
    never: list[Denial]
    affirmed: list[Affirmed]
    #: Its quantities ("$65 snack budget", "3 PM"), see :mod:`.quantities`.
    quantities: list[Quantity] = field(default_factory=list)
    superseded: bool = False
    duplicate_of: str | None = None
    #: Met again through the fact index (:meth:`FactEngine.recall`), not said just before:
    #: it links, but no "it" points at it.
    recalled: bool = False


class FactEngine:
    """Feed statements in the order said (:meth:`observe`); each call returns what that
    statement adds. The engine holds what it needs of the earlier ones."""

    def __init__(self, rules: FactRules | None = None, judge: FactJudge | None = None) -> None:
        self.rules = rules or FactRules()
        #: Asked about each link the rules propose, and each pair they only suspect.
        self.judge = judge
        self._seen: list[_Seen] = []
        #: Claims by key: the statement's position, the claim and whose fact it is (the
        #: speaker's, or for an assistant's report the person it served).
        self._claims: dict[tuple[str, str], list[tuple[int, Claim, str]]] = {}
        self._with_never: list[int] = []
        self._quantities: dict[str, list[tuple[int, Quantity]]] = {}
        self._by_text: dict[str, str] = {}
        self._open: list[tuple[FoundPending, OpenLine]] = []
        #: The decisions standing so far: their statement and the content stems of what.
        self._decided: list[tuple[str, frozenset[str]]] = []
        #: Who spoke last of the people (not a model): whom an assistant's report serves.
        self._last_person = ""
        #: The ids of the statements held, observed or recalled.
        self._known: set[str] = set()
        #: What :meth:`keys_of` read of a statement about to be observed, by its id: its
        #: prose (None: not in a language of the rules) and its claims and quantities.
        self._prose_ahead: dict[str, str | None] = {}
        self._read_ahead: dict[str, tuple[list[Claim], list[Quantity]]] = {}

    def observe_all(self, statements: Iterable[Statement]) -> list[Findings]:
        return [self.observe(s) for s in statements]

    def observe(self, statement: Statement) -> Findings:
        text = self._readable(statement)
        if text is None:  # no cue words for its language: nothing, not a guess
            return Findings(statement.id)
        seen = self._remember(statement, text)
        findings = Findings(
            statement.id,
            decisions=[
                FoundDecision(
                    d.what,
                    d.why,
                    statement.who,
                    statement.when,
                    statement.id,
                    self._replaced(d.what, text, statement.id),
                )
                for d in decisions_in(text, statement.role)
                if not self._restated(d.what, text, statement.id)
            ],
            expires=None
            if statement.role == "assistant"
            else expires_from_text(text, statement.when),
        )
        findings.closures.extend(self._closures(statement, text, bool(findings.decisions)))
        opened = [
            line for line in open_lines_in(text, statement.role) if not self._still_open(line)
        ]
        for line in opened:
            item = FoundPending(line.what, line.kind, statement.who, statement.when, statement.id)
            findings.pending.append(item)
            self._open.append((item, line))
        findings.links.extend(self._repeat(seen))
        if seen.duplicate_of is None:
            findings.links.extend(self._updates_and_conflicts(seen))
        findings.keys.extend(self._keys(seen))
        self._index(seen)
        if statement.role != "assistant":
            self._last_person = statement.person
        return findings

    # -- the fact index ---------------------------------------------------------------------

    def keys_of(self, statement: Statement) -> list[str]:
        """The keys ``statement`` (about to be observed) would be filed under, as far as it
        names its subjects: the caller fetches the earlier statements filed under them and
        gives them to :meth:`recall` first."""
        text = self._prose_ahead[statement.id] = self._readable(statement)
        if text is None:
            return []
        claims, quantities = self._read(statement, text)
        self._read_ahead[statement.id] = (claims, quantities)
        who = self._last_person if statement.role == "assistant" else statement.person
        return _index_keys([(c, who) for c in claims if not c.refers_back], quantities, who)

    def knows(self, statement_id: str) -> bool:
        return statement_id in self._known

    def recall(self, statement: Statement, superseded: bool = False) -> None:
        """Hold ``statement``, said before everything held and met again through the fact
        index, so that what is observed next can end or contradict its claims. It adds no
        finding of its own, opens nothing and decides nothing; ``superseded``: a later
        statement has ended it already."""
        if statement.id in self._known or (text := self._readable(statement)) is None:
            return
        seen = self._remember(statement, text, resolve_it=False)
        seen.recalled = True
        seen.superseded = superseded
        self._index(seen)

    # -- what an earlier statement leaves --------------------------------------------------

    def _readable(self, statement: Statement) -> str | None:
        """The prose of ``statement``, None when it reads as a language the rules have no
        cue words for; made once when :meth:`keys_of` made it first."""
        if statement.id in self._prose_ahead:
            return self._prose_ahead.pop(statement.id)
        text = prose(statement.text)
        return text if rule_language(text) is not None else None

    def _read(self, statement: Statement, text: str) -> tuple[list[Claim], list[Quantity]]:
        """The claims (before "it" is resolved) and quantities of ``statement``."""
        if (ahead := self._read_ahead.pop(statement.id, None)) is not None:
            return ahead
        # What an assistant says is its answer, not a fact of the speaker's: no claims.
        if statement.role == "assistant":
            return reported_changes_in(text), []
        quantities = [q for sentence in sentences(text) for q in quantities_in(sentence)]
        return claims_in(text), quantities

    def _remember(self, statement: Statement, text: str, resolve_it: bool = True) -> _Seen:
        never: list[Denial] = []
        affirmed: list[Affirmed] = []
        said, quantities = self._read(statement, text)
        for sentence in sentences(text) if statement.role != "assistant" else ():
            low = spelled_out(sentence)
            never += denials_in(sentence, low, self.rules.min_experience_words)
            affirmed += [(stems, sentence) for stems in affirmed_clauses(low)]
        # "it" with nothing spoken of just before names nothing: that claim is dropped (as
        # is any "it" of a recalled statement, whose turns before are not held)
        resolve = self._resolved if resolve_it else (lambda claim: claim)
        claims = [c for c in map(resolve, said) if not c.refers_back]
        return _Seen(
            statement,
            stems=content_stems(text),
            numbers=numbers_of(text) | _calendar_words(text),
            negations=negations_of(text),
            claims=claims,
            never=never,
            affirmed=affirmed,
            quantities=quantities,
        )

    def _resolved(self, claim: Claim) -> Claim:
        """``claim`` with "it" read as the thing of the latest value said in the turns just
        before (the claim itself when it names its subject, or when none was said)."""
        if not claim.refers_back:
            return claim
        said = [seen for seen in self._seen[-2 * _IT_REACH :] if not seen.recalled]
        for earlier in reversed(said[-_IT_REACH:]):
            for old in reversed(earlier.claims):
                if old.attribute == "value" and old.head:
                    return replace(
                        claim,
                        owner=old.owner,
                        subject=old.subject,
                        head=old.head,
                        refers_back=False,
                    )
        return claim

    # -- repeats -------------------------------------------------------------------------

    def _repeat(self, seen: _Seen) -> list[FactLink]:
        if len(seen.stems) < self.rules.min_repeat_words:
            return []
        key = " ".join(tokenize(seen.statement.text))
        if (original := self._by_text.get(key)) is not None:
            seen.duplicate_of = original
            return [FactLink(seen.statement.id, "duplicate_of", original, because="the same words")]
        self._by_text[key] = seen.statement.id
        vector = seen.statement.vector
        if vector is None:
            return []
        for earlier in reversed(self._seen):
            other = earlier.statement.vector
            if other is None or earlier.duplicate_of is not None:
                continue
            if (
                overlap(seen.stems, earlier.stems) >= self.rules.paraphrase_overlap
                and seen.numbers == earlier.numbers
                and seen.negations == earlier.negations
                and _cosine(vector, other) >= self.rules.paraphrase_cosine
            ):
                seen.duplicate_of = earlier.statement.id
                return [
                    FactLink(
                        seen.statement.id,
                        "duplicate_of",
                        earlier.statement.id,
                        because="a paraphrase",
                    )
                ]
        return []

    # -- updates and contradictions --------------------------------------------------------

    def _updates_and_conflicts(self, seen: _Seen) -> list[FactLink]:
        """Links from the claims of ``seen`` to those of earlier statements that could meet
        them (the same attribute and head or owner: an index, not a scan of everything)."""
        new = seen.statement
        ended: dict[int, str] = {}
        conflicting: dict[int, str] = {}
        suspected: dict[int, str] = {}
        for index, because, update in self._quantity_updates(seen):
            (ended if update else suspected).setdefault(index, because)
        for claim in seen.claims:
            who = self._last_person if claim.on_behalf else new.person
            for index, old, earlier_who in self._claims.get(_key(claim), ()):
                earlier = self._seen[index]
                if claim.owner in _FIRST_PERSON and earlier_who != who:
                    continue  # "I", "my" of another speaker: another person
                if not earlier.superseded and index not in ended and supersedes(claim, old):
                    if earlier_who != who and not claim.update:
                        # Two people, two values, no word of a change: they disagree.
                        conflicting.setdefault(index, claim.sentence)
                    else:
                        ended[index] = claim.sentence
                elif index not in conflicting and contradicts(claim, old):
                    conflicting[index] = claim.sentence
        # "Never" claims are rare: only the statements that hold one are looked at again.
        for index in (
            range(len(self._seen)) if seen.never else self._with_never if seen.affirmed else ()
        ):
            earlier = self._seen[index]
            if index in conflicting or earlier.statement.person != new.person:
                continue
            if because := experience_conflict(
                seen.never, seen.affirmed, earlier.never, earlier.affirmed
            ):
                conflicting[index] = because
        if self.judge is not None:
            self._judged(seen, ended, conflicting, suspected)
        links: list[FactLink] = []
        for index, because in sorted(ended.items()):
            earlier = self._seen[index]
            earlier.superseded = True
            links.append(FactLink(earlier.statement.id, "superseded_by", new.id, new.when, because))
        for index, because in sorted(conflicting.items()):
            if index in ended:
                continue
            other = self._seen[index].statement.id
            links.append(FactLink(new.id, "conflicts_with", other, because=because))
            links.append(FactLink(other, "conflicts_with", new.id, because=because))
        return links

    def _judged(
        self,
        seen: _Seen,
        ended: dict[int, str],
        conflicting: dict[int, str],
        suspected: dict[int, str],
    ) -> None:
        """What the judge says of each pair the rules link or suspect, in place."""
        assert self.judge is not None
        pairs: dict[int, Verdict] = {i: "none" for i in suspected}
        pairs |= {i: "conflicts_with" for i in conflicting}
        pairs |= {i: "superseded_by" for i in ended}
        for index, proposed in sorted(pairs.items()):
            earlier = self._seen[index]
            verdict = self.judge.judge(earlier.statement.text, seen.statement.text, proposed)
            if verdict == proposed:
                continue
            because = ended.pop(index, "") or conflicting.pop(index, "") or suspected.get(index, "")
            if verdict == "superseded_by" and not earlier.superseded:
                ended[index] = f"{because} (judged: {self.judge.name})"
            elif verdict == "conflicts_with":
                conflicting[index] = f"{because} (judged: {self.judge.name})"

    def _quantity_updates(self, seen: _Seen) -> list[tuple[int, str, bool]]:
        """The earlier statements whose quantity an update of ``seen`` ends: for each update,
        the latest quantity of its kind, of the same speaker, that it meets (words in
        common, both aims or neither: :func:`.quantities.meets`), of the old value when the
        update names it; none when that one says the same value (a restatement). The same for a quantity said
        with no update cue, as a suspicion (``False``): only a judge may make it a link."""
        found = []
        for q in seen.quantities:
            if not q.update and self.judge is None:
                continue
            for index, old in reversed(self._quantities.get(q.kind, ())):
                earlier = self._seen[index]
                if earlier.statement.person != seen.statement.person:
                    continue
                if not meets(q, old) or (q.was and old.value not in (q.was, q.value)):
                    continue
                if old.value != q.value and not earlier.superseded:
                    found.append((index, f"{q.kind.removeprefix('n:')} now {q.value}", q.update))
                break
        return found

    def _index(self, seen: _Seen) -> None:
        position = len(self._seen)
        self._seen.append(seen)
        self._known.add(seen.statement.id)
        for q in seen.quantities:
            self._file(self._quantities.setdefault(q.kind, []), (position, q))
        if seen.never:
            self._with_never.append(position)
        for claim in seen.claims:
            who = self._last_person if claim.on_behalf else seen.statement.person
            self._file(self._claims.setdefault(_key(claim), []), (position, claim, who))

    def _file(self, entries: list[Any], entry: tuple[Any, ...]) -> None:
        """Add ``entry`` (its first item a position in ``_seen``) to ``entries`` in the
        order said: a recalled statement was said before those held, and "the latest of
        its kind" must stay the latest said."""
        if self._seen[entry[0]].recalled:
            bisect.insort(entries, entry, key=lambda e: self._seen[e[0]].statement.when)
        else:
            entries.append(entry)

    def _keys(self, seen: _Seen) -> list[str]:
        """The fact index's keys of ``seen``, its "it" resolved."""
        return _index_keys(
            [(c, self._last_person if c.on_behalf else seen.statement.person) for c in seen.claims],
            seen.quantities,
            seen.statement.person,
        )

    # -- decisions that change -------------------------------------------------------------

    def _replaced(self, what: str, text: str, source: str) -> str:
        """The standing decision that ``what`` (decided in ``text``) replaces, and files it as
        standing. Only a decision said as a change of mind ("scratch that", "instead", "on
        second thought", "shifted from X to Y") replaces one: the latest on the same matter
        (a word of what was decided in common), else the latest. Without such words two
        decisions stand together: measured on labelled chats, decisions that share words
        are mostly additions ("I'll add a walk" after "I'll add yoga") or restatements."""
        stems = content_stems(what)
        replaced = ""
        if _REVERSAL.search(text.casefold()):
            replaced = next(
                (source for source, earlier in reversed(self._decided) if stems & earlier),
                self._decided[-1][0] if self._decided else "",
            )
        if replaced:
            self._decided = [(s, e) for s, e in self._decided if s != replaced]
        self._decided.append((source, stems))
        return replaced

    def _restated(self, what: str, text: str, source: str) -> bool:
        """Whether ``what`` (decided in ``text``) says a standing decision again: two thirds
        of its words, two at least, were decided before, with no word of a change of mind,
        and no doubt was voiced with the earlier one (a later word then settles it: "I'm
        not sure I made the right call choosing X" → "I'll go with X")."""
        stems = content_stems(what)
        if _REVERSAL.search(text.casefold()):
            return False
        for earlier_source, earlier in self._decided:
            shared = len(stems & earlier)
            if earlier_source == source or shared < 2 or shared * 3 < 2 * len(stems):
                continue
            said = next((s for s in self._seen if s.statement.id == earlier_source), None)
            return said is None or not _DOUBT.search(said.statement.text.casefold())
        return False

    # -- open threads ----------------------------------------------------------------------

    def _still_open(self, line: OpenLine) -> bool:
        """Whether the same item is open already (the same question asked again)."""
        words = item_words(line.what)
        return any(item_words(o.what) == words for _, o in self._open)

    def _closures(self, statement: Statement, text: str, decided: bool) -> list[Closure]:
        done = []
        still = []
        just_said = {s.statement.id for s in self._seen[-_SETTLE_REACH:]}
        for item, line in self._open:
            same = item.who.casefold() == statement.person
            recent = item.source in just_said
            if item.source != statement.id and closes(
                line, text, same, statement.role, decided, recent
            ):
                done.append(Closure(item, statement.id, statement.when))
            else:
                still.append((item, line))
        self._open = still
        return done


_FIRST_PERSON: Final = frozenset(["i", "we", "my", "our"])
#: How many turns back a decision that shares one word with a question still answers it.
_SETTLE_REACH: Final = 3
#: How many turns back "it" may point.
_IT_REACH: Final = 4
#: A decision said as a change of mind replaces the one before it.
_REVERSAL: Final = re.compile(
    r"\b(?:scratch that|on second thought|change of plans?|instead|after all|no wait|never mind|"
    r"rather than|actually,? (?:let's|let us|we'll|we will|i'll|i will|we should|we are)|"
    r"(?:switched|shifted|moved|changed)\b[^.,;]{0,30}\bfrom\b[^.,;]+\bto)\b"
)


#: Doubt voiced with a decision: a later one on the same matter settles it, not repeats it.
_DOUBT: Final = re.compile(
    r"\b(?:not sure|unsure|debating|second[- ]guess\w*|torn|hesitant|doubts?|having doubts)\b"
)


def _index_keys(
    claims: Iterable[tuple[Claim, str]], quantities: Sequence[Quantity], who: str
) -> list[str]:
    """The fact index's keys of a statement by ``who``: its claims' keys (an attribute of
    its person's own, "employer/i/maya", with the person; a thing's, "value/launch",
    without: two people may speak of one launch) and its quantities' ("q/budget/maya")."""
    keys = []
    for claim, person in claims:
        attribute, on = _key(claim)
        owner = person if claim.owner in _FIRST_PERSON else ""
        keys.append("/".join(part for part in (attribute, on, owner) if part))
    keys += [f"q/{q.kind}/{who}" for q in quantities]
    return list(dict.fromkeys(keys))


def _key(claim: Claim) -> tuple[str, str]:
    """Where a claim is filed: two claims meet only under the same key."""
    by_head = claim.attribute in ("value", "count")
    return claim.attribute, claim.head if by_head else claim.owner


def _calendar_words(text: str) -> frozenset[str]:
    """The weekdays and months ``text`` names: like its numbers, a value a paraphrase keeps
    ("kickoff Wednesday at 10" is not "kickoff Monday at 10")."""
    return CALENDAR_WORDS.intersection(re.findall(r"[a-z]+", text.casefold()))


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two unit vectors: their dot product."""
    return math.fsum(x * y for x, y in zip(a, b, strict=True))
