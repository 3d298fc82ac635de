"""The notebook's records (seed 002), as pydantic v2 models.

A notebook holds sessions and moments. Each session has a task and its status, a context
(raw history size, condensed history, recent moments), decisions (the audit log), pending
threads, escalations, links and stats. Each moment has multimodal content, media paths,
structured metadata (concepts, retrieval keys, importance, decay rate), relations and the
agent actions taken.

Every persisted record carries ``schema_version``; every time is timezone-aware UTC.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from .errors import InvalidId

SCHEMA_VERSION: Final = 1
#: The speaker of the moments holding text cut from a session notebook: derived text, the
#: quotes of other moments (markers like ``⟦m_12@0+95⟧``) under section headings. They get
#: no vector of their own (the embedding queue leaves them out): the moments they quote have
#: theirs, and a vector of markers finds nothing (issue 17: a seventh of a chat's vectors).
CUT_SPEAKER: Final = "session-notebook"
#: The LangGraph store namespace of the thread -> session map.
THREADS_NAMESPACE: Final = ("threads",)
#: The first labels of the LangGraph store namespaces the notebook keeps its own items in,
#: reserved: the thread map (``("threads",)``) and the session notebooks (``("session",
#: thread, ...)``). An app's own items belong under other names; the notebook's never expire
#: (``store.default_ttl_minutes`` and a put's ``ttl`` are not applied to them).
NOTEBOOK_NAMESPACE_ROOTS: Final = ("threads", "session")

# Ids are matched whole (``fullmatch``) and ASCII-only: they become file names.
SESSION_ID_RE: Final = re.compile(r"s_([0-9]{4})-([0-9]{2})-([0-9]{2})_([0-9]{3,})")
MOMENT_ID_RE: Final = re.compile(r"m_([1-9][0-9]*)")
PENDING_ID_RE: Final = re.compile(r"p_([1-9][0-9]*)")
ESCALATION_ID_RE: Final = re.compile(r"e_([1-9][0-9]*)")

#: The largest number a moment, pending item or escalation id may carry: SQLite's largest
#: INTEGER (and numpy's int64, which the vector index keys on).
MAX_ID_NUMBER: Final = 2**63 - 1
_MAX_TEXT: Final = str(MAX_ID_NUMBER)
_MAX_DIGITS: Final = len(_MAX_TEXT)

DEFAULT_IMPORTANCE: Final = 0.5
#: Per day, in ``importance · exp(-decay_rate · age_days)``: about a 35-day half-life.
DEFAULT_DECAY_RATE: Final = 0.02


# --- ids ---------------------------------------------------------------------------------


def check_session_id(value: object) -> str:
    if not isinstance(value, str) or not (m := SESSION_ID_RE.fullmatch(value)):
        raise InvalidId("session", value, "s_YYYY-MM-DD_NNN (for example s_2026-06-07_001)")
    try:
        date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        raise InvalidId("session", value, "s_YYYY-MM-DD_NNN with a real date") from None
    return value


def _checker(kind: str, pattern: re.Pattern[str], example: str) -> Callable[[object], str]:
    form = f"{example}, N from 1 to {MAX_ID_NUMBER}"

    def check(value: object) -> str:
        if not isinstance(value, str) or not (m := pattern.fullmatch(value)):
            raise InvalidId(kind, value, form)
        # Compared as text: a number past 2^63 would overflow SQLite's INTEGER (and int()
        # of a million digits is slow); the pattern allows no leading zeros.
        digits = m[1]
        if len(digits) > _MAX_DIGITS or (len(digits) == _MAX_DIGITS and digits > _MAX_TEXT):
            raise InvalidId(kind, value, form)
        return value

    return check


check_moment_id = _checker("moment", MOMENT_ID_RE, "m_N (for example m_1829)")
check_pending_id = _checker("pending item", PENDING_ID_RE, "p_N (for example p_3)")
check_escalation_id = _checker("escalation", ESCALATION_ID_RE, "e_N (for example e_1)")


def moment_number(moment_id: str) -> int:
    return int(check_moment_id(moment_id)[2:])


def session_id_for(day: date, number: int) -> str:
    return f"s_{day.isoformat()}_{number:03d}"


def session_day(session_id: str) -> date:
    m = SESSION_ID_RE.fullmatch(check_session_id(session_id))
    assert m is not None
    return date(int(m[1]), int(m[2]), int(m[3]))


# --- field types -------------------------------------------------------------------------


def _utf8_text(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(
            f"text is not valid UTF-8 (character {err.start} is a lone surrogate {value[err.start]!r});"
            " decode input as UTF-8 before recording it"
        ) from None
    return value


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("time has no timezone: give an aware time such as 2026-06-07T10:00:00Z")
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59:59-14:00 is past the last day once in UTC
        raise ValueError(
            f"time {value.isoformat()} is out of range once in UTC: give a time from "
            "0001-01-01 to 9999-12-31 UTC"
        ) from None


def _finite_json(value: Any) -> Any:
    """Arguments and results must survive JSON and YAML unchanged: finite numbers, str keys."""
    try:
        return _json_value(value)
    except RecursionError:  # recorded ones nest far less (see drafts.MAX_JSON_DEPTH)
        raise ValueError("nested too deeply to be stored") from None


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("numbers must be finite (NaN and infinity do not survive JSON)")
    if isinstance(value, str):
        return _utf8_text(value)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"object keys must be strings, got {key!r}")
            _utf8_text(key)
            _json_value(item)
    elif isinstance(value, list):
        for item in value:
            _json_value(item)
    elif value is not None and not isinstance(value, bool | int | float):
        raise ValueError(f"{type(value).__name__} is not a JSON value")
    return value


Text = Annotated[str, AfterValidator(_utf8_text)]


def is_free_text(annotation: Any, metadata: Sequence[Any] = ()) -> bool:
    """Whether a field so annotated holds free text (``Text``, ``Text | None``,
    ``list[Text]``), as opposed to an id, a time or an enum: redaction rewrites only
    free text, never the structure around it."""
    args = get_args(annotation)
    if any(getattr(m, "func", None) is _utf8_text for m in (*metadata, *args)):
        return True
    return any(is_free_text(arg) for arg in args)


UtcTime = Annotated[datetime, AfterValidator(_utc)]
SessionId = Annotated[str, AfterValidator(check_session_id)]
MomentId = Annotated[str, AfterValidator(check_moment_id)]
JsonValue = Annotated[Any, AfterValidator(_finite_json)]
Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


def now_utc() -> datetime:
    return datetime.now(UTC)


def normalize_concept(value: str) -> str:
    """One spelling per concept: NFKC, case-folded, inner whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", value).casefold().split())


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


# --- session -----------------------------------------------------------------------------


class TaskStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    DONE = "done"
    ABANDONED = "abandoned"


class SessionContext(_Record):
    raw_history_size: int = Field(0, ge=0)
    condensed_history: Text = ""
    recent_moments: list[MomentId] = Field(default_factory=list)


class Decision(_Record):
    """One entry of the audit log: when, what, why, who; ``source``, the moment it was read
    from (issue 30), when it came from the conversation."""

    when: UtcTime
    what: Text
    why: Text = ""
    who: Text = "owner"
    source: MomentId | None = None
    #: Set on an owner's correction of an earlier entry: that entry's place in the log,
    #: ``d_N`` (1 is the first); the log keeps both, the later one holds.
    edits: Annotated[str, StringConstraints(pattern=r"^d_[1-9][0-9]*$")] | None = None
    #: Set when a later decision read from the conversation replaced this one (issue 39):
    #: the moment it was read from, in this session or another. Both stay in the log.
    replaced_by: MomentId | None = None


class PendingItem(_Record):
    """An open thread; ``closed`` is set when it is resolved."""

    id: Annotated[str, AfterValidator(check_pending_id)]
    what: Text
    since: UtcTime
    closed: UtcTime | None = None
    resolution: Text = ""
    #: The moment it was read from, and the moment that closed it (issue 30), if any.
    source: MomentId | None = None
    closed_by: MomentId | None = None


class Escalation(_Record):
    """A hand-off to a bigger agent: when, to whom, why, the slice given, the outcome."""

    id: Annotated[str, AfterValidator(check_escalation_id)]
    when: UtcTime
    to: Text
    why: Text = ""
    slice: Text = ""
    outcome: Text | None = None
    resolved: UtcTime | None = None


class Link(_Record):
    """A cross-reference from a session to a session, a moment or anything else by URI."""

    target: Text
    relation: Text = "related"
    note: Text = ""


class SessionStats(_Record):
    moments: int = Field(0, ge=0)
    tokens: int = Field(0, ge=0)
    bytes: int = Field(0, ge=0)
    first_activity: UtcTime | None = None
    last_activity: UtcTime | None = None


class Session(_Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    id: SessionId
    task: Text = ""
    task_status: TaskStatus = TaskStatus.ACTIVE
    started: UtcTime
    context: SessionContext = Field(default_factory=SessionContext)
    decisions: list[Decision] = Field(default_factory=list)
    pending: list[PendingItem] = Field(default_factory=list)
    escalations: list[Escalation] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)
    stats: SessionStats = Field(default_factory=SessionStats)


# --- moment ------------------------------------------------------------------------------


class MomentContent(_Record):
    text: Text = ""
    audio_signature: Text | None = None
    image_signature: Text | None = None
    multimodal_embedding: list[Annotated[float, Field(allow_inf_nan=False)]] | None = None


class MomentMetadata(_Record):
    concepts: list[Text] = Field(default_factory=list)
    retrieval_keys: list[Text] = Field(default_factory=list)
    importance: Unit = DEFAULT_IMPORTANCE
    decay_rate: float = Field(DEFAULT_DECAY_RATE, ge=0.0, allow_inf_nan=False)
    #: A pinned moment is never summarized nor archived by compaction (nor is importance 1.0).
    pinned: bool = False
    #: What the fact rules read this moment as stating a fact about: one key per subject and
    #: attribute ("employer/i/maya", "value/launch"), derived after it is recorded; the
    #: backend indexes them so a later statement meets every earlier one on the same key,
    #: in any session (``agent-notebook facts reindex`` files an older notebook's).
    fact_keys: list[Text] = Field(default_factory=list)

    @field_validator("concepts")
    @classmethod
    def _normalized(cls, value: list[str]) -> list[str]:
        return _dedupe(normalize_concept(c) for c in value if c.strip())


#: The links the fact rules add to ``relations.links`` (issue 30), as ``relation:m_N``:
#: this moment repeats m_N, is ended by m_N (its ``valid_until`` is m_N's time), cannot
#: hold together with m_N (the link is on both), or is repeated by m_N (on the first said).
FACT_RELATIONS: Final = ("duplicate_of", "superseded_by", "conflicts_with", "repeated_by")


def fact_link(relation: str, target: str) -> str:
    """``relations.links`` entry saying this moment ``relation`` ``target`` (a moment id)."""
    if relation not in FACT_RELATIONS:
        raise ValueError(f"{relation!r} is not one of {', '.join(FACT_RELATIONS)}")
    return f"{relation}:{check_moment_id(target)}"


def split_link(link: str) -> tuple[str, str]:
    """``("superseded_by", "m_12")`` for ``superseded_by:m_12``; ``("", link)`` for a plain
    link (a moment id or a URI)."""
    relation, _, target = link.partition(":")
    if relation in FACT_RELATIONS and MOMENT_ID_RE.fullmatch(target):
        return relation, target
    return "", link


class Relations(_Record):
    parent: MomentId | None = None
    children: list[MomentId] = Field(default_factory=list)
    #: Moment ids, URIs, and the fact links ``relation:m_N`` (see :data:`FACT_RELATIONS`).
    links: list[Text] = Field(default_factory=list)


class Action(_Record):
    """An agent action taken during the moment: the tool, its arguments, result and outcome."""

    tool: Text
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    result: JsonValue = None
    ok: bool = True


class Tombstone(_Record):
    """What is left of a redacted moment's content: who removed it, when and why."""

    when: UtcTime
    who: Text = "owner"
    why: Text = ""


RollupLevel = Literal["daily", "weekly", "monthly"]
#: A rollup's text may end with one line that starts so: its index, the salient items (as
#: written in the originals, ``; ``-separated) its summary did not keep.
ROLLUP_INDEX_PREFIX: Final = "Also mentioned: "


#: Why a rollup keeps an original moment word for word, outside its budget: what the facts
#: layer holds as current (issue 41).
KeptKind = Literal["decision", "open", "fact", "conflict", "pinned", "important"]


class KeptLine(_Record):
    """An original moment a rollup keeps word for word (its text holds ``text`` as is), and
    why. A later moment that ends what it says marks it as it marks a moment: ``valid_until``
    and ``superseded_by`` (and the rollup's text says so on that line)."""

    source: MomentId
    kind: KeptKind
    text: Text
    said: UtcTime
    speaker: Text = ""
    role: Text = "user"
    #: The original's fact keys, so the rollup is filed under them in the fact index.
    fact_keys: list[Text] = Field(default_factory=list)
    valid_until: UtcTime | None = None
    superseded_by: MomentId | None = None


class FadedLine(_Record):
    """What a rollup keeps of an original that no longer holds: one line."""

    source: MomentId
    line: Text


class Rollup(_Record):
    """What makes a moment a rollup (a summary made by compaction): its lineage and the
    dropped manifest, the identifiers, numbers, dates and names of its original moments
    that its text does not keep (as the originals write them)."""

    level: RollupLevel
    #: ``2026-06-07`` (daily), ``2026-W23`` (weekly) or ``2026-06`` (monthly).
    period: Text
    #: The moments it summarizes: originals (daily) or rollups one level down.
    sources: list[MomentId] = Field(default_factory=list)
    #: The original moments it covers, through every level below.
    originals: list[MomentId] = Field(default_factory=list)
    dropped: list[Text] = Field(default_factory=list)
    #: How many such items the original moments had (the manifest's denominator).
    salient: int = Field(0, ge=0)
    summarizer: Text = ""
    #: Tokens of the original moments it covers, and of its own text.
    tokens_before: int = Field(0, ge=0)
    tokens_after: int = Field(0, ge=0)
    #: The originals it keeps word for word because they still hold (decisions, open items,
    #: current facts, both sides of a conflict, pinned), in time order.
    kept: list[KeptLine] = Field(default_factory=list)
    #: What was replaced, closed or expired, one line each ("venue: Lakeside Pavilion →
    #: Casa Lucia, 25 Nov"): the first detail to fade, on record rather than dropped.
    faded: list[FadedLine] = Field(default_factory=list)


class Moment(_Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    id: MomentId
    session: SessionId
    timestamp: UtcTime
    role: Text = "user"
    speaker: Text = ""
    content: MomentContent = Field(default_factory=MomentContent)
    audio_path: Text | None = None
    image_path: Text | None = None
    metadata: MomentMetadata = Field(default_factory=MomentMetadata)
    relations: Relations = Field(default_factory=Relations)
    actions: list[Action] = Field(default_factory=list)
    #: The id the source gave this moment (LoCoMo's ``dia_id``, a message id), for tracing.
    source_id: Text | None = None
    #: Set when the content was redacted: the text, concepts, keys and actions are gone.
    redacted: Tombstone | None = None
    #: Set on a summary made by compaction: its lineage and dropped manifest.
    rollup: Rollup | None = None
    #: When a later moment ended what this one says (its ``superseded_by`` link), and when
    #: it stops holding of itself (given on record, or read from "until Friday"): issue 30.
    valid_until: UtcTime | None = None
    expires: UtcTime | None = None

    @property
    def number(self) -> int:
        return int(self.id[2:])

    def holds_at(self, when: datetime) -> bool:
        """Whether what it says still held at ``when``: not superseded nor expired by then."""
        return all(end is None or end > when for end in (self.valid_until, self.expires))

    @property
    def pinned(self) -> bool:
        """Never summarized: flagged ``pinned`` or of importance 1.0."""
        return self.metadata.pinned or self.metadata.importance >= 1.0


#: The moment fields only the media store sets (see :class:`MomentDraft`).
STORED_PATHS: Final = ("image_path", "audio_path")


class MomentDraft(_Record):
    """What a caller gives ``record``: a moment before it has an id and derived metadata.

    Fields left ``None`` are derived on record (concepts, retrieval keys, importance).
    """

    text: Text = ""
    role: Text = "user"
    speaker: Text = ""
    timestamp: UtcTime | None = None
    concepts: list[Text] | None = None
    retrieval_keys: list[Text] | None = None
    importance: Unit | None = None
    decay_rate: float | None = Field(None, ge=0.0, allow_inf_nan=False)
    pinned: bool = False
    parent: MomentId | None = None
    links: list[Text] = Field(default_factory=list)
    actions: list[Action] = Field(default_factory=list)
    #: When what it says stops holding (else read from its text: "until Friday"): issue 30.
    expires: UtcTime | None = None
    #: A file to attach (copied into the notebook's media store, signed): see ``record``.
    #: The moment's ``image_path`` / ``audio_path`` are set by the media store alone.
    image_file: Text | None = None
    audio_file: Text | None = None
    source_id: Text | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_stored_paths(cls, data: Any) -> Any:
        """A caller names the file to attach, never where the media store keeps it: a path
        of its choosing (``../secrets/owner-token``) would make every later export fail."""
        if isinstance(data, dict) and (given := [k for k in STORED_PATHS if k in data]):
            raise ValueError(
                f"{' and '.join(given)} cannot be given: the notebook sets it when it stores an "
                "attached file. Attach the file instead: image_file/audio_file (or --image/"
                "--audio) on this machine, image=/audio= in Python, or upload it with POST "
                "/api/sessions/{session_id}/moments/media"
            )
        return data

    @property
    def is_empty(self) -> bool:
        """Nothing to remember: no text (or only blanks), no file to attach, no action."""
        return not (self.text.strip() or self.image_file or self.audio_file or self.actions)


# --- index and search results --------------------------------------------------------------


class ConceptEntry(_Record):
    """One concept of the cross-session index: the moments and sessions it appears in."""

    concept: Text
    moments: list[MomentId] = Field(default_factory=list)
    sessions: list[SessionId] = Field(default_factory=list)
    #: Moments with this concept that compaction moved to the cold archive.
    archived: list[MomentId] = Field(default_factory=list)


class ArchiveEntry(_Record):
    """Where an archived moment is: a line of ``file`` (relative to the archive directory),
    whose bytes hash to ``sha256``; ``rollup`` is the summary that replaced it."""

    schema_version: Literal[1] = SCHEMA_VERSION
    id: MomentId
    session: SessionId
    timestamp: UtcTime
    rollup: MomentId
    file: Text
    sha256: Text
    concepts: list[Text] = Field(default_factory=list)

    @property
    def number(self) -> int:
        return int(self.id[2:])


class NotebookStats(BaseModel):
    sessions: int
    moments: int
    concepts: int
    tokens: int
    bytes: int
    first_activity: datetime | None
    last_activity: datetime | None
    backend: str


# --- helpers -----------------------------------------------------------------------------


def _dedupe(values: Any) -> list[str]:
    seen: dict[str, None] = {}
    for v in values:
        seen.setdefault(v, None)
    return list(seen)
