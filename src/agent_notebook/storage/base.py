"""The storage contract: a few typed primitives every backend implements.

Validation, id allocation policy, enrichment, stats and search composition live once in the
facade (:class:`agent_notebook.Notebook`); a backend only stores records, keeps its derived
indexes (full text, concepts) in step with them, and says what it can do in
:class:`Capabilities`.

Writes that belong together run inside ``with backend.atomic():``. Nested ``atomic()`` blocks
join the outer one. Backends raise only :mod:`agent_notebook.errors` exceptions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol

from ..core.crypto import Cipher
from ..errors import InvalidInput
from ..errors import VectorChangesPruned as VectorChangesPruned  # re-export: was defined here
from ..model import ArchiveEntry, ConceptEntry, Moment, Session, moment_number

#: Where a persistent notebook's LangGraph store and checkpoints live (see
#: :attr:`Capabilities.langgraph_tables`).
LangGraphTables = Literal["own_file", "directory", "database"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a backend can promise; declared, never guessed. Each backend class sets one as
    its ``capabilities`` class attribute; the callers above ``storage/`` read these flags
    rather than a backend's name, its class or the attributes it happens to have."""

    name: str
    #: ``atomic()`` is all-or-nothing even if the process dies inside it.
    crash_atomic: bool
    #: Several processes may write the same notebook at once.
    multi_process: bool
    #: Data outlives the process.
    persistent: bool
    #: Lexical search runs inside the engine (FTS5, Postgres full text) rather than in Python.
    native_full_text: bool
    #: Servers share the embedding work through claims (``claim_unembedded``), and a
    #: moment skipped because another holds it may need a later pass to take it over.
    shared_embedding: bool = False
    #: Where the LangGraph store and checkpoints of a persistent notebook live: tables in the
    #: backend's own SQLite file (``own_file``), SQLite files in the backend's directory
    #: (``directory``), or tables in its database server (``database``).
    langgraph_tables: LangGraphTables = "directory"
    #: Search keeps the vectors in a faiss file of the notebook's home too
    #: (``embeddings.faiss``): the backend's own vector files are slow to load whole.
    vector_index_file: bool = False
    #: The records are sealed with the notebook's key when encryption is on, and
    #: :meth:`StorageBackend.reseal` seals them again with a new one (key rotation).
    encrypts_at_rest: bool = False
    #: The notebook's API tokens live in the backend (``api_tokens`` and the methods of
    #: :class:`~agent_notebook.privacy.tokens.TokenTable`), not in the home's files.
    holds_api_tokens: bool = False


@dataclass(frozen=True, slots=True)
class Activity:
    """What a session's stats count of one recorded moment (see
    :meth:`StorageBackend.session_activity_after`)."""

    number: int
    timestamp: datetime
    text: str

    @property
    def id(self) -> str:
        return f"m_{self.number}"


@dataclass(frozen=True, slots=True)
class MomentBrief:
    """What ranking needs of a moment, without loading it: where and when it is, who
    spoke, its priors' inputs, whether it was redacted and whether it asks a question."""

    number: int
    session: str
    timestamp: datetime
    role: str
    speaker: str
    importance: float
    decay_rate: float
    redacted: bool
    asks: bool

    @property
    def id(self) -> str:
        return f"m_{self.number}"

    @classmethod
    def of(cls, moment: Moment) -> MomentBrief:
        return cls(
            number=moment.number,
            session=moment.session,
            timestamp=moment.timestamp,
            role=moment.role,
            speaker=moment.speaker,
            importance=moment.metadata.importance,
            decay_rate=moment.metadata.decay_rate,
            redacted=moment.redacted is not None,
            asks="?" in moment.content.text,
        )


class _Filterable(Protocol):
    @property
    def session(self) -> str: ...
    @property
    def timestamp(self) -> datetime: ...
    @property
    def role(self) -> str: ...
    @property
    def speaker(self) -> str: ...


@dataclass(frozen=True, slots=True)
class MomentFilter:
    """Filters shared by listing and search. ``since`` is inclusive, ``until`` exclusive;
    ``speaker`` matches a moment's speaker or its role (``assistant``), ignoring case."""

    session: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    speaker: str | None = None

    def matches(self, moment: _Filterable) -> bool:
        if self.session is not None and moment.session != self.session:
            return False
        if self.since is not None and moment.timestamp < self.since:
            return False
        if self.until is not None and moment.timestamp >= self.until:
            return False
        if self.speaker is None:
            return True
        wanted = self.speaker.casefold()
        return wanted in (moment.speaker.casefold(), moment.role.casefold())


def activity_of(moment: Moment) -> Activity:
    return Activity(moment.number, moment.timestamp, moment.content.text)


class StorageBackend(ABC):
    """The contract. See the module docstring."""

    capabilities: Capabilities
    #: The cipher the records are sealed with (None: not encrypted).
    cipher: Cipher | None = None
    #: The notebook's home, where this process keeps the files beside the records (set by
    #: ``Notebook.open``; None for a backend opened alone). A database server's notebook
    #: keeps its config, media and archive there.
    local_dir: Path | None = None

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the data lives, for messages (a path, ``:memory:``, a URL without password)."""

    # -- transactions and counters --------------------------------------------------------

    @abstractmethod
    def atomic(self) -> AbstractContextManager[None]:
        """One writer at a time; everything inside is applied together or not at all."""

    @abstractmethod
    def next_number(self, counter: str, count: int = 1) -> int:
        """Reserve ``count`` consecutive numbers of ``counter``; return the first (from 1)."""

    @abstractmethod
    def raise_counter(self, counter: str, at_least: int) -> None:
        """Make sure later numbers of ``counter`` are greater than ``at_least``."""

    @abstractmethod
    def counters(self) -> dict[str, int]:
        """Every counter and the last number it gave."""

    # -- sessions ---------------------------------------------------------------------------

    @abstractmethod
    def get_session(self, session_id: str) -> Session | None: ...

    def has_session(self, session_id: str) -> bool:
        """Whether ``session_id`` is stored (a record asks, without reading the row). A
        backend that can tell without loading the session should."""
        return self.get_session(session_id) is not None

    @abstractmethod
    def put_session(self, session: Session) -> None:
        """Insert or replace."""

    @abstractmethod
    def list_sessions(self, offset: int = 0, limit: int | None = None) -> list[Session]:
        """Oldest first (by ``started``, then id)."""

    @abstractmethod
    def count_sessions(self) -> int: ...

    @abstractmethod
    def delete_session(self, session_id: str) -> None:
        """Remove the session and everything derived from its moments, in one step: the
        moments (records, full-text and concept indexes, vectors) and their cold-archive
        entries. Nothing happens for an unknown id. The files a moment refers to (media,
        archive files) are the caller's."""

    # -- moments ----------------------------------------------------------------------------

    @abstractmethod
    def put_moments(self, moments: Sequence[Moment]) -> None:
        """Insert or replace, keeping the full-text and concept indexes in step."""

    def add_moments(self, moments: Sequence[Moment]) -> None:
        """Insert new moments, numbered by :meth:`next_number` in the caller's transaction
        (so no stored moment has their numbers, nor a number above them): what
        :meth:`put_moments` does, which a backend may do with fewer statements (there is no
        stored version to read and replace). Inside a transaction, an error leaves it to
        be rolled back by its owner."""
        self.put_moments(moments)

    @abstractmethod
    def get_moment(self, moment_id: str) -> Moment | None: ...

    def get_moments(self, moment_ids: Sequence[str]) -> list[Moment]:
        """The moments that exist among ``moment_ids``, in the order asked."""
        return [m for m in map(self.get_moment, moment_ids) if m is not None]

    def moment_briefs(self, moment_ids: Sequence[str]) -> list[MomentBrief]:
        """:class:`MomentBrief` of the moments that exist among ``moment_ids``, in the order
        asked. Search ranks many candidates and loads only the few it returns; a backend
        that can read these fields without loading whole moments should."""
        return [MomentBrief.of(m) for m in self.get_moments(moment_ids)]

    @abstractmethod
    def list_moments(
        self, session_id: str | None = None, offset: int = 0, limit: int | None = None
    ) -> list[Moment]:
        """In id order (``m_2`` before ``m_10``)."""

    @abstractmethod
    def count_moments(self, session_id: str | None = None) -> int: ...

    # -- the concept index ------------------------------------------------------------------

    @abstractmethod
    def get_concept(self, concept: str) -> ConceptEntry | None:
        """``concept`` is already normalised; moments in id order, sessions sorted."""

    def concept_members(self, concept: str, at_most: int) -> list[int] | None:
        """The numbers of the moments with ``concept`` (ascending; ``[]`` for none), or None
        when there are more than ``at_most``: search skips a concept that common without
        reading all its members (that would cost more as the notebook grows)."""
        entry = self.get_concept(concept)
        if entry is None:
            return []
        if len(entry.moments) > at_most:
            return None
        return [moment_number(mid) for mid in entry.moments]

    # -- the fact index -------------------------------------------------------------------

    @abstractmethod
    def fact_key_members(self, keys: Sequence[str], before: int, at_most: int) -> list[int]:
        """The numbers of the moments filed under any of ``keys`` (their
        ``metadata.fact_keys``) below number ``before``: the latest ``at_most`` of each key,
        ascending, each once. Its cost follows ``at_most``, not the notebook's size."""

    @abstractmethod
    def list_concepts(self, offset: int = 0, limit: int | None = None) -> list[ConceptEntry]:
        """Alphabetical."""

    @abstractmethod
    def count_concepts(self) -> int: ...

    # -- lexical search ---------------------------------------------------------------------

    @abstractmethod
    def search_text(self, query: str, where: MomentFilter, limit: int) -> list[tuple[str, float]]:
        """Moment ids with a relevance score (higher is better), best first.

        Any word of the query may match (OR); more matched, rarer words rank higher (BM25).
        """

    def term_documents(self, query: str) -> tuple[int, dict[str, int]] | None:
        """How many moments the full-text index holds, and for each of ``query``'s terms
        (stems, or keyed tokens when sealed) how many have it (terms no moment has are left
        out): how common the words of a question are. None: this backend cannot tell."""
        return None

    # -- text vectors -------------------------------------------------------------------------
    # A moment has at most one vector, made by one embedding model (named by ``model``); the
    # bytes are opaque here. A moment whose text changes loses its vector. The moments
    # without a vector of the current model are the embedding queue: it is durable because
    # it is derived from the records themselves.

    @abstractmethod
    def put_vectors(self, model: str, vectors: Sequence[tuple[int, str, bytes]]) -> None:
        """Store ``(moment number, text embedded, vector)`` items, replacing older vectors.
        An item whose moment no longer exists or no longer has that text is skipped: it
        was embedded from a version that has since been rewritten."""

    @abstractmethod
    def get_vectors(
        self, model: str, after: int = 0, limit: int | None = None
    ) -> list[tuple[int, bytes]]:
        """Vectors of ``model`` as ``(moment number, vector)``, numbers above ``after``,
        ascending."""

    @abstractmethod
    def vector_models(self) -> list[str]:
        """The models that made the stored vectors, sorted (for export)."""

    @abstractmethod
    def unembedded(self, model: str, limit: int | None = None, after: int = 0) -> list[int]:
        """Numbers above ``after`` of the moments with no vector of ``model``, oldest
        first; never those of speaker :data:`~agent_notebook.model.CUT_SPEAKER` (derived
        text, not embedded)."""

    def vector_changes(
        self, model: str, after: int = 0, limit: int | None = None
    ) -> tuple[list[tuple[int, bytes | None]], int]:
        """The vector changes after position ``after``, oldest first, as ``(moment number,
        vector)`` (None: the moment's vector of ``model`` is gone), and the position to ask
        from next. A backend other processes write through (PostgreSQL) numbers its
        changes; by default the position is the moment number, and removals are not
        reported: this process makes them, and tells its index itself. Raises
        :class:`VectorChangesPruned` when ``after`` (not 0) is older than what the
        backend's log still holds."""
        found: list[tuple[int, bytes | None]] = list(self.get_vectors(model, after, limit))
        return found, found[-1][0] if found else after

    def last_vector_change(self) -> int:
        """The newest position :meth:`vector_changes` can report, where changes are
        numbered (for ``doctor``)."""
        return 0  # changes are not numbered: this process reads them by moment number

    def claim_unembedded(self, model: str, limit: int, after: int = 0) -> list[int]:
        """Moments above ``after`` for this process to embed now, oldest first. By
        default every unembedded one: one process embeds its notebook."""
        return self.unembedded(model, limit=limit, after=after)

    def reseal(self) -> int:
        """Seal every record again with the cipher's current key (key rotation); returns how
        many were rewritten. Only a backend that declares ``encrypts_at_rest`` can."""
        raise InvalidInput(f"the {self.capabilities.name} backend stores nothing to seal")

    def ping(self) -> None:
        """Raise :class:`~agent_notebook.errors.StorageError` when the data cannot be reached
        now (a database server that does not answer); a local file or memory always can."""
        return None

    def server_status(self) -> dict[str, object]:
        """What ``doctor`` shows about a database server (nothing for a local file)."""
        return {}

    def session_activity_after(self, session_id: str, after: int) -> list[Activity]:
        """:class:`Activity` of the recorded moments of ``session_id`` numbered above
        ``after`` (compaction's rollups left out), ascending: the facade counts them into
        the session's stats (see ``Notebook.get_session``). A backend that can read these
        without loading whole moments should."""
        where = MomentFilter(session=session_id)
        moments = self._session_moments(where)
        return [activity_of(m) for m in moments if m.number > after and m.rollup is None]

    def moment_numbers(self, where: MomentFilter) -> list[int]:
        """Numbers of the moments ``where`` matches, ascending (to restrict a vector search)."""
        moments = self.iter_moments() if where.session is None else self._session_moments(where)
        return [m.number for m in moments if where.matches(m)]

    def media_signatures(self, kind: Literal["image", "audio"]) -> list[tuple[int, str]]:
        """``(moment number, signature)`` of every moment with an ``image`` (or ``audio``)
        signature, ascending (search by example ranks them). A backend that can read them
        without loading whole moments should."""
        if kind not in ("image", "audio"):
            raise InvalidInput(f"media kind {kind!r} is not image or audio")
        found = []
        for m in self.iter_moments():
            sig = m.content.image_signature if kind == "image" else m.content.audio_signature
            if sig:
                found.append((m.number, sig))
        return found

    def _session_moments(self, where: MomentFilter) -> Iterator[Moment]:
        offset = 0
        while page := self.list_moments(where.session, offset=offset, limit=500):
            yield from page
            offset += len(page)

    # -- the cold archive ---------------------------------------------------------------------
    # Compaction writes archived records to files of its own (durably) first; then
    # ``archive_moments`` moves the moments out of the active set and keeps where they went.

    @abstractmethod
    def archive_moments(self, entries: Sequence[ArchiveEntry]) -> None:
        """In one step: remove each entry's moment from the active set (records, full-text
        and concept indexes, vectors) and keep the entry, whose concepts stay findable with
        :meth:`archived_with_concept`. An entry whose moment is not active is kept all the
        same (a rerun after a crash); an entry replaces an older one of the same id."""

    @abstractmethod
    def get_archived(self, moment_ids: Sequence[str]) -> list[ArchiveEntry]:
        """The entries among ``moment_ids``, in the order asked."""

    @abstractmethod
    def list_archived(self, offset: int = 0, limit: int | None = None) -> list[ArchiveEntry]:
        """In id order."""

    @abstractmethod
    def count_archived(self) -> int: ...

    @abstractmethod
    def archived_with_concept(self, concept: str) -> list[str]:
        """Ids of the archived moments with ``concept`` (normalised), in id order."""

    # -- lifecycle --------------------------------------------------------------------------

    def iter_moments(self, batch: int = 500) -> Iterator[Moment]:
        """Every moment in id order, a page at a time (for export)."""
        offset = 0
        while page := self.list_moments(offset=offset, limit=batch):
            yield from page
            offset += len(page)

    def settle(self) -> None:
        """Bring indexes derived from the moments up to date now. A backend may index new
        moments in batches after they are written; its reads catch up before they answer
        either way, so this only moves that work off a later read (to a worker or an idle
        moment). Nothing to do for a backend that keeps its indexes in step."""
        return None

    def fold_log(self) -> None:
        """Work a caller does after a chat turn, when it has the time: a backend with a
        write-ahead log copies it into its file now and then, so that this does not happen
        in a later turn's commit. Nothing to do for most backends."""
        return None

    def maintenance_lock(self, name: str) -> AbstractContextManager[None]:
        """Admit one maintenance run called ``name`` (``compaction``, ``key-rotation``) at
        a time on this notebook, across every process that serves it; a second one waits a
        little, then fails with :class:`~agent_notebook.errors.Conflict`. A file notebook
        lives in one home, whose file lock (``files.exclusive_lock``, taken by the caller)
        admits one already: this default adds nothing. A database shared by servers on
        many machines overrides it."""
        return nullcontext()

    @abstractmethod
    def purge(self) -> None:
        """Make removed data physically gone (after a redaction): no copy of rewritten or
        deleted text may stay in the backend's files (free pages, logs, index segments,
        temp files). Costly (a SQLite file is rewritten whole): call it once after a batch
        of redactions, outside ``atomic()``. Nothing to do for a backend in memory."""

    @abstractmethod
    def close(self) -> None: ...
