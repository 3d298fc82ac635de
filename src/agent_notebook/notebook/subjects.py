"""What the notebook knows about someone (issue 39, item 6): a view of one subject, built
from the raw log and auditable, behind ``nb.facts.about(name)``.

The moments about a subject are those it said (its speaker's name, case aside: the same name
in two sessions is one person) and those that name it (the concept index, then a whole-word
match of the name). Each is read with the fact rules' claims (:func:`facts.claims.claims_in`):
a speaker's first-person claims ("I work at…", "my number is…") and what it states of things
("the budget is…") are its facts; in a turn that names it, what is said of it ("Maya moved to
Leeds", "her number is…"). Claims are grouped by key: the attribute, and for a value the
head word of what it is about (``employer``, ``home``, ``value:budget``).

For each key, the values that hold at ``as_of`` (now by default) are current, each with the
moment it came from; the others are its history, each with when it stopped holding and why:
a later moment on the same key superseded it (the ``superseded_by`` link the rules stored,
and ``valid_until``), it expired, or it was a story about the past ("Back in 2019 I worked
at Tesco": never current, and it ends nothing). With the fact rules off no link is stored,
so nothing is known to be superseded: every value said is current, and the view says so
(``facts_enabled`` false, and a ``note``). Redacted moments are never read, so what forget
and redact remove is gone from the view. The open conflicts among the subject's moments
(``conflicts_with``) come with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from ..errors import InvalidInput
from ..model import Moment, normalize_concept, now_utc, split_link
from ..storage import MomentFilter, StorageBackend

if TYPE_CHECKING:
    from ..facts.claims import Claim

__all__ = [
    "ConflictPair",
    "ConflictSide",
    "SubjectFact",
    "SubjectValue",
    "SubjectView",
    "conflict_ids",
    "conflict_side",
    "view_of",
]

#: The names that mean the notebook's owner: the user's turns with no speaker named.
OWNER_NAMES = frozenset(["me", "owner"])
#: A subject's name is a name, not a query.
MAX_NAME = 200
#: At most this many moments naming a subject are read by their words (the concept index
#: has no such bound); the view says when there were more.
MAX_WORD_MATCHES = 2000
#: Acts that say again where one lives or works ("I work at Tesco" is an employer claim
#: and an act "work"): the act is left out of the view beside the place.
_PLACE_ACTS = frozenset(["work", "start", "join", "move", "live", "reloc", "relocat", "base"])
_THIRD_PERSON = frozenset(["his", "her"])
_FIRST_PERSON = frozenset(["i", "we", "my", "our", ""])


class ConflictSide(BaseModel):
    """One side of a conflict: the moment, its session, time and text, and whether it
    still holds now (not superseded nor expired)."""

    id: str
    session: str
    timestamp: datetime
    text: str
    current: bool


class ConflictPair(BaseModel):
    """Two moments flagged ``conflicts_with`` each other; ``a`` was said first."""

    a: ConflictSide
    b: ConflictSide


def conflict_ids(moment: Moment) -> list[str]:
    """The moments ``moment`` is flagged as conflicting with."""
    return [t for r, t in map(split_link, moment.relations.links) if r == "conflicts_with"]


def conflict_side(moment: Moment, at: datetime) -> ConflictSide:
    return ConflictSide(
        id=moment.id,
        session=moment.session,
        timestamp=moment.timestamp,
        text=moment.content.text,
        current=moment.holds_at(at),
    )


class SubjectValue(BaseModel):
    """One value of a fact, as one moment said it."""

    value: str = Field(description="The value, as written in the sentence.")
    moment: str = Field(description="The moment it came from, m_N.")
    session: str
    speaker: str = Field(description="Who said it ('' for the owner).")
    said: datetime
    sentence: str = Field(description="The sentence it was read from.")
    holds: bool = Field(description="Whether it held at the view's time.")
    ended: Literal["superseded", "expired", "story"] | None = Field(
        None,
        description="Why it no longer holds: a later moment superseded it, it expired, or it "
        "was a story about the past (never current).",
    )
    until: datetime | None = Field(None, description="When it stopped holding, if it did.")
    replaced_by: str | None = Field(None, description="The moment that superseded it, m_N.")
    replaced_with: str | None = Field(None, description="The value that moment says.")
    also_said: list[str] = Field(
        default_factory=list, description="Earlier moments that said the same value."
    )


class SubjectFact(BaseModel):
    """One fact key of a subject: the values that hold, and those that did."""

    key: str = Field(description="The attribute, and for a value what it is about.")
    attribute: str
    many: bool = Field(description="Whether it holds many values at once (likes, uses…).")
    current: list[SubjectValue]
    history: list[SubjectValue] = Field(description="Older values, the latest first.")


class SubjectView(BaseModel):
    """What the notebook knows about one subject (see :mod:`agent_notebook.notebook.subjects`)."""

    subject: str
    as_of: datetime | None = None
    facts_enabled: bool = Field(
        description="Whether the fact rules ran on record; off, no supersession is known."
    )
    note: str | None = None
    said: int = Field(description="How many moments the subject said.")
    named: int = Field(description="How many moments of others name it.")
    facts: list[SubjectFact]
    conflicts: list[ConflictPair]


@dataclass(frozen=True, slots=True)
class _Entry:
    moment: Moment
    claim: Claim
    key: str


def view_of(
    backend: StorageBackend,
    name: str,
    *,
    as_of: datetime | None = None,
    facts_enabled: bool,
    off_note: str | None = None,
) -> SubjectView:
    """The view of ``name`` at ``as_of`` (see the module)."""
    subject = check_name(name)
    at = now_utc() if as_of is None else as_of
    said, named = _moments_about(backend, subject)
    said = [m for m in said if m.timestamp <= at]
    named = [m for m in named if m.timestamp <= at]
    entries = _entries(subject, said, named)
    by_id = {m.id: m for m in [*said, *named]}
    keys_of: dict[str, set[str]] = {}
    for e in entries:
        keys_of.setdefault(e.moment.id, set()).add(e.key)
    grouped: dict[str, list[_Entry]] = {}
    for e in entries:
        grouped.setdefault(e.key, []).append(e)
    facts = [
        _fact(key, group, at, backend, by_id, keys_of, facts_enabled)
        for key, group in sorted(grouped.items())
    ]
    notes = [] if facts_enabled else [off_note or "facts are off: no supersession is known"]
    if len(named) >= MAX_WORD_MATCHES:
        notes.append(f"only the first {MAX_WORD_MATCHES} moments naming {subject} were read")
    return SubjectView(
        subject=subject,
        as_of=as_of,
        facts_enabled=facts_enabled,
        note="; ".join(notes) or None,
        said=len(said),
        named=len(named),
        facts=facts,
        conflicts=_conflicts(backend, [*said, *named], at),
    )


def check_name(name: str) -> str:
    subject = " ".join(name.split())
    if not subject:
        raise InvalidInput(
            "about: give the name of a person (a speaker, or someone named in the turns) or "
            "'me' for the owner, e.g. 'agent-notebook about Maya'"
        )
    if len(subject) > MAX_NAME or any(ord(c) < 32 for c in name if c not in "\t\n\r"):
        raise InvalidInput(
            f"about: {subject[:40]!r}… is not a name (at most {MAX_NAME} characters, no "
            "control characters)"
        )
    return subject


def _moments_about(backend: StorageBackend, subject: str) -> tuple[list[Moment], list[Moment]]:
    """The live moments ``subject`` said and those of others that name it, each in the
    order said."""
    wanted = subject.casefold()
    owner = wanted in OWNER_NAMES
    numbers = backend.moment_numbers(MomentFilter(speaker="user" if owner else subject))
    said = [
        m
        for m in backend.get_moments([f"m_{n}" for n in numbers])
        if _live(m) and (m.speaker == "" if owner else m.speaker.casefold() == wanted)
    ]
    named: list[Moment] = []
    if not owner:
        own = {m.id for m in said}
        entry = backend.get_concept(normalize_concept(subject))
        ids = list(entry.moments) if entry is not None else []
        found = backend.search_text(subject, MomentFilter(), MAX_WORD_MATCHES)
        ids += [mid for mid, _ in found]
        pattern = _name_pattern(subject)
        named = [
            m
            for m in backend.get_moments(list(dict.fromkeys(i for i in ids if i not in own)))
            if _live(m) and m.speaker.casefold() != wanted and pattern.search(m.content.text)
        ]
    return _in_order(said), _in_order(named)


def _live(moment: Moment) -> bool:
    return moment.redacted is None and moment.rollup is None and bool(moment.content.text.strip())


def _in_order(moments: Iterable[Moment]) -> list[Moment]:
    return sorted(moments, key=lambda m: (m.timestamp, m.number))


def _name_pattern(subject: str) -> re.Pattern[str]:
    words = r"\s+".join(re.escape(w) for w in subject.split())
    return re.compile(rf"(?<!\w){words}(?!\w)", re.IGNORECASE)


def _entries(subject: str, said: Sequence[Moment], named: Sequence[Moment]) -> list[_Entry]:
    """The claims about ``subject``, each with its moment and key, in the order said."""
    from ..facts.claims import claims_in
    from ..facts.text import content_stems, prose

    name_stems = content_stems(subject)
    found: list[_Entry] = []
    for moment, own in _merged(said, named):
        if moment.role == "assistant":
            continue  # a model's answer states no fact of the person (as on record)
        claims = claims_in(prose(moment.content.text))
        if own:
            mine = [c for c in claims if c.owner in _FIRST_PERSON]
        else:
            mine = [c for c in claims if c.owner in _THIRD_PERSON or c.head in name_stems]
        places = [c for c in mine if c.attribute in ("employer", "home")]
        for claim in mine:
            if places and claim.attribute in _PLACE_ACTS:
                continue
            found.append(_Entry(moment, claim, _key(claim)))
    return found


def _merged(said: Sequence[Moment], named: Sequence[Moment]) -> list[tuple[Moment, bool]]:
    both = [(m, True) for m in said] + [(m, False) for m in named]
    return sorted(both, key=lambda p: (p[0].timestamp, p[0].number))


def _key(claim: Claim) -> str:
    if claim.attribute in ("value", "count"):
        return f"{claim.attribute}:{claim.head}"
    return claim.attribute


def _fact(
    key: str,
    group: list[_Entry],
    at: datetime,
    backend: StorageBackend,
    by_id: dict[str, Moment],
    keys_of: dict[str, set[str]],
    facts_enabled: bool,
) -> SubjectFact:
    values = [_value(e, at, backend, by_id, keys_of) for e in group]
    current: dict[str, SubjectValue] = {}  # the latest moment of each value that holds
    for v in values:
        if v.holds:
            earlier = current.pop(v.value.casefold(), None)
            if earlier is not None:
                v.also_said = [*earlier.also_said, earlier.moment]
            current[v.value.casefold()] = v
    history = [v for v in values if not v.holds]
    return SubjectFact(
        key=key,
        attribute=group[0].claim.attribute,
        many=any(e.claim.multi for e in group),
        current=sorted(current.values(), key=lambda v: v.said, reverse=True),
        history=sorted(history, key=lambda v: v.said, reverse=True),
    )


def _value(
    entry: _Entry,
    at: datetime,
    backend: StorageBackend,
    by_id: dict[str, Moment],
    keys_of: dict[str, set[str]],
) -> SubjectValue:
    m, claim = entry.moment, entry.claim
    value = SubjectValue(
        value=_as_written(claim.sentence, claim.value),
        moment=m.id,
        session=m.session,
        speaker=m.speaker,
        said=m.timestamp,
        sentence=claim.sentence,
        holds=True,
    )
    if claim.historical:
        value.holds, value.ended = False, "story"
        return value
    if m.valid_until is not None and m.valid_until <= at:
        for target in (t for r, t in map(split_link, m.relations.links) if r == "superseded_by"):
            later = by_id.get(target) or backend.get_moment(target)
            # A moment's link ends all it says only when the later one speaks of this key,
            # or this moment said nothing else.
            if later is not None and (
                entry.key in keys_of.get(target, ()) or keys_of[m.id] == {entry.key}
            ):
                value.holds, value.ended, value.until = False, "superseded", m.valid_until
                value.replaced_by = later.id
                value.replaced_with = _said_there(later, entry.key)
                return value
    if m.expires is not None and m.expires <= at:
        value.holds, value.ended, value.until = False, "expired", m.expires
    return value


def _said_there(moment: Moment, key: str) -> str | None:
    """The value ``moment`` says on ``key`` (None: redacted, or none read)."""
    if moment.redacted is not None:
        return None
    from ..facts.claims import claims_in
    from ..facts.text import prose

    for claim in claims_in(prose(moment.content.text)):
        if _key(claim) == key:
            return _as_written(claim.sentence, claim.value)
    return None


def _as_written(sentence: str, value: str) -> str:
    """``value`` (read case-folded) as ``sentence`` writes it: "Monzo", not "monzo"."""
    folded = sentence.casefold()
    at = folded.find(value)
    if at < 0 or len(folded) != len(sentence):
        return value
    return sentence[at : at + len(value)]


def _conflicts(
    backend: StorageBackend, moments: Sequence[Moment], at: datetime
) -> list[ConflictPair]:
    """The pairs flagged ``conflicts_with`` with a side among ``moments``, both said by
    ``at`` and neither redacted, the first said first."""
    pairs: set[tuple[str, str]] = set()
    for m in moments:
        for other in conflict_ids(m):
            first_id, second_id = sorted((m.id, other), key=lambda i: int(i[2:]))
            pairs.add((first_id, second_id))
    found = []
    for a_id, b_id in sorted(pairs, key=lambda p: (int(p[0][2:]), int(p[1][2:]))):
        a, b = backend.get_moment(a_id), backend.get_moment(b_id)
        if a is None or b is None or a.redacted is not None or b.redacted is not None:
            continue
        if a.timestamp > at or b.timestamp > at:
            continue
        first, second = sorted((a, b), key=lambda m: (m.timestamp, m.number))
        found.append(ConflictPair(a=conflict_side(first, at), b=conflict_side(second, at)))
    return found
