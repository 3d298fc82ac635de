"""Backends that keep the whole notebook in process memory and stage each transaction.

The in-memory reference backend is this class as it is; the YAML directory backend adds
loading and persisting files through two hooks. Writes inside ``atomic()`` go to a staging
area that reads see; the outermost block's exit applies the staged changes and hands them to
``_persist``, so an exception anywhere inside leaves nothing changed.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel

from ..core.lexical import Bm25Index
from ..model import CUT_SPEAKER, ArchiveEntry, ConceptEntry, Moment, Session, moment_number
from .base import Activity, MomentFilter, StorageBackend, activity_of
from .sql import ranking

_R = TypeVar("_R", bound=BaseModel)


@dataclass
class StagedChanges:
    """What one transaction wrote; handed to ``_persist`` before it is applied."""

    sessions: dict[str, Session] = field(default_factory=dict)
    moments: dict[int, Moment] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    #: moment number -> (model, vector); applied after the moments of the same transaction
    vectors: dict[int, tuple[str, bytes]] = field(default_factory=dict)
    #: moments moved to the cold archive: number -> its entry (applied after ``moments``)
    archived: dict[int, ArchiveEntry] = field(default_factory=dict)
    #: sessions deleted with their moments and archive entries (applied before the rest)
    deleted: set[str] = field(default_factory=set)
    #: filled in when the deletions are applied: the moments and archive entries they took
    removed: dict[int, Moment] = field(default_factory=dict)
    unarchived: dict[int, ArchiveEntry] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(
            self.sessions
            or self.moments
            or self.counters
            or self.vectors
            or self.archived
            or self.deleted
        )


class NotebookState:
    """Committed records plus the indexes derived from them. Without ``text_index`` the
    words of the moments are indexed on the first search (:meth:`searchable`), not as they
    are put: a scratch copy that is never searched pays nothing for them."""

    def __init__(self, *, text_index: bool = True) -> None:
        self.sessions: dict[str, Session] = {}
        self.moments: dict[int, Moment] = {}
        self.counters: dict[str, int] = {}
        self.concepts: dict[str, dict[int, str]] = {}  # concept -> {moment number: session}
        self.by_session: dict[str, set[int]] = {}
        self.text_index: Bm25Index | None = Bm25Index() if text_index else None
        self.vectors: dict[int, tuple[str, bytes]] = {}
        self.archived: dict[int, ArchiveEntry] = {}
        self.archived_concepts: dict[str, set[int]] = {}
        self.fact_keys: dict[str, list[int]] = {}  # key -> moment numbers, ascending

    def remove_moment(self, num: int) -> Moment | None:
        """Take a moment out of the active set and every index derived from it."""
        old = self.moments.pop(num, None)
        if old is None:
            return None
        self._unindex(old)
        if self.text_index is not None:
            self.text_index.remove(num)
        self.vectors.pop(num, None)
        return old

    def _unindex(self, old: Moment) -> None:
        """Take ``old`` out of the concept and session indexes."""
        for concept in old.metadata.concepts:
            entry = self.concepts.get(concept)
            if entry is not None:
                entry.pop(old.number, None)
                if not entry:
                    del self.concepts[concept]
        for key in old.metadata.fact_keys:
            members = self.fact_keys.get(key, [])
            at = bisect.bisect_left(members, old.number)
            if at < len(members) and members[at] == old.number:
                del members[at]
            if not members:
                self.fact_keys.pop(key, None)
        self.by_session.get(old.session, set()).discard(old.number)

    def remove_archived(self, num: int) -> ArchiveEntry | None:
        old = self.archived.pop(num, None)
        for concept in old.concepts if old is not None else ():
            members = self.archived_concepts.get(concept, set())
            members.discard(num)
            if not members:
                self.archived_concepts.pop(concept, None)
        return old

    def delete_session(self, session_id: str, changes: StagedChanges) -> None:
        """Remove a session, its moments and its archive entries; note what went in
        ``changes`` (a persisting backend deletes their files)."""
        self.sessions.pop(session_id, None)
        for num in sorted(self.by_session.pop(session_id, set())):
            if (old := self.remove_moment(num)) is not None:
                changes.removed[num] = old
        for num in [n for n, e in self.archived.items() if e.session == session_id]:
            if (entry := self.remove_archived(num)) is not None:
                changes.unarchived[num] = entry

    def put_archived(self, entry: ArchiveEntry) -> None:
        self.remove_archived(entry.number)
        self.archived[entry.number] = entry
        for concept in entry.concepts:
            self.archived_concepts.setdefault(concept, set()).add(entry.number)

    def put_moment(self, moment: Moment) -> None:
        num = moment.number
        old = self.moments.get(num)
        if old is not None:
            self._unindex(old)
            if old.content.text != moment.content.text:
                self.vectors.pop(num, None)  # a vector describes the text it was made from
        self.moments[num] = moment
        self.by_session.setdefault(moment.session, set()).add(num)
        for concept in moment.metadata.concepts:
            self.concepts.setdefault(concept, {})[num] = moment.session
        for key in dict.fromkeys(moment.metadata.fact_keys):
            bisect.insort(self.fact_keys.setdefault(key, []), num)
        if self.text_index is not None:
            self.text_index.put(num, moment.content.text)

    def searchable(self) -> Bm25Index:
        """The index of the moments' words, made now if it was left for the first search
        (kept up to date from then on)."""
        if self.text_index is None:
            self.text_index = Bm25Index()
            for num, moment in self.moments.items():
                self.text_index.put(num, moment.content.text)
        return self.text_index

    def apply(self, changes: StagedChanges) -> None:
        for session_id in sorted(changes.deleted):  # first: what follows may re-create
            self.delete_session(session_id, changes)
        self.sessions.update(changes.sessions)
        for moment in changes.moments.values():
            self.put_moment(moment)
        self.counters.update(changes.counters)
        self.vectors.update(changes.vectors)
        for num, entry in changes.archived.items():
            self.remove_moment(num)
            self.put_archived(entry)


class StagedBackend(StorageBackend):
    """See the module docstring. Subclasses override ``_refresh`` and ``_persist``.

    Records go in and come out as copies, so a caller that changes one changes nothing
    stored. With ``shared`` they are not copied (and the words are indexed on the first
    search): for a private scratch copy whose callers change no record they read or
    write, such as a dry run's, where copying every record read is most of the work."""

    def __init__(self, *, shared: bool = False) -> None:
        self._state = NotebookState(text_index=not shared)
        self._lock = threading.RLock()
        self._staged: StagedChanges | None = None
        self._shared = shared

    def _own(self, record: _R) -> _R:
        """``record`` as handed over: a deep copy, or itself for a ``shared`` backend."""
        return record if self._shared else record.model_copy(deep=True)

    # -- hooks ------------------------------------------------------------------------------

    def _refresh(self) -> None:
        """Bring ``self._state`` up to date with the storage (called with the lock held)."""

    def _persist(self, changes: StagedChanges) -> None:
        """Make ``changes`` durable (called with the lock held, after they were applied to
        ``self._state``, so derived indexes are current)."""

    def _invalidate(self) -> None:
        """``_persist`` failed: forget the in-memory state so the next read reloads it."""

    def _writer_lock(self) -> AbstractContextManager[None]:
        """Exclude writers of other processes for the length of a transaction."""
        return nullcontext()

    # -- transactions ---------------------------------------------------------------------

    @contextmanager
    def atomic(self) -> Iterator[None]:
        with self._lock:
            if self._staged is not None:  # nested: join the outer transaction
                yield
                return
            with self._writer_lock():
                self._refresh()
                self._staged = StagedChanges()
                try:
                    yield
                    changes = self._staged
                    if changes:
                        self._state.apply(changes)
                        try:
                            self._persist(changes)
                        except BaseException:
                            self._invalidate()
                            raise
                finally:
                    self._staged = None

    def _write(self) -> StagedChanges:
        if self._staged is None:
            raise RuntimeError("storage writes must run inside backend.atomic()")
        return self._staged

    @contextmanager
    def _reading(self) -> Iterator[NotebookState]:
        with self._lock:
            if self._staged is None:
                self._refresh()
            yield self._state

    # -- counters ---------------------------------------------------------------------------

    def _counter(self, counter: str) -> int:
        if self._staged is not None and counter in self._staged.counters:
            return self._staged.counters[counter]
        return self._state.counters.get(counter, 0)

    def next_number(self, counter: str, count: int = 1) -> int:
        with self.atomic():
            first = self._counter(counter) + 1
            self._write().counters[counter] = first + count - 1
            return first

    def raise_counter(self, counter: str, at_least: int) -> None:
        with self.atomic():
            if self._counter(counter) < at_least:
                self._write().counters[counter] = at_least

    def counters(self) -> dict[str, int]:
        with self._reading() as state:
            merged = dict(state.counters)
            if self._staged is not None:
                merged.update(self._staged.counters)
            return merged

    # -- sessions ---------------------------------------------------------------------------

    def get_session(self, session_id: str) -> Session | None:
        with self._reading() as state:
            if self._staged is not None and session_id in self._staged.sessions:
                return self._own(self._staged.sessions[session_id])
            if self._staged is not None and session_id in self._staged.deleted:
                return None
            found = state.sessions.get(session_id)
            return None if found is None else self._own(found)

    def put_session(self, session: Session) -> None:
        with self.atomic():
            self._write().sessions[session.id] = self._own(session)

    def delete_session(self, session_id: str) -> None:
        with self.atomic():
            staged = self._write()
            staged.deleted.add(session_id)
            staged.sessions.pop(session_id, None)
            for num in [n for n, m in staged.moments.items() if m.session == session_id]:
                del staged.moments[num]
                staged.vectors.pop(num, None)
            for num in [n for n, e in staged.archived.items() if e.session == session_id]:
                del staged.archived[num]

    def _deleted_numbers(self, state: NotebookState) -> set[int]:
        """Committed moments of the sessions this transaction deleted (hidden from reads)."""
        if self._staged is None or not self._staged.deleted:
            return set()
        return {n for sid in self._staged.deleted for n in state.by_session.get(sid, ())}

    def _all_sessions(self, state: NotebookState) -> list[Session]:
        merged = dict(state.sessions)
        if self._staged is not None:
            for session_id in self._staged.deleted:
                merged.pop(session_id, None)
            merged.update(self._staged.sessions)
        return sorted(merged.values(), key=lambda s: (s.started, s.id))

    def list_sessions(self, offset: int = 0, limit: int | None = None) -> list[Session]:
        with self._reading() as state:
            chosen = _page(self._all_sessions(state), offset, limit)
            return [self._own(s) for s in chosen]

    def count_sessions(self) -> int:
        with self._reading() as state:
            return len(self._all_sessions(state))

    # -- moments ----------------------------------------------------------------------------

    def put_moments(self, moments: Sequence[Moment]) -> None:
        with self.atomic():
            staged = self._write()
            for m in moments:
                staged.moments[m.number] = self._own(m)
                staged.archived.pop(m.number, None)  # put back after being archived

    def get_moment(self, moment_id: str) -> Moment | None:
        found = self.get_moments([moment_id])
        return found[0] if found else None

    def get_moments(self, moment_ids: Sequence[str]) -> list[Moment]:
        with self._reading() as state:
            current = self._current(state)
            found = [current(moment_number(mid)) for mid in moment_ids]
            return [self._own(m) for m in found if m is not None]

    def iter_moments(self, batch: int = 500) -> Iterator[Moment]:
        """Every moment in id order: the numbers are listed once (a page each time would
        list and sort them all again, for every page); a moment archived or removed while
        the iteration goes on is left out, one added is not seen."""
        with self._reading() as state:
            nums = self._moment_numbers(state, None)
        for start in range(0, len(nums), batch):
            with self._reading() as state:
                current = self._current(state)
                page = [m for n in nums[start : start + batch] if (m := current(n)) is not None]
            yield from map(self._own, page)

    def _current(self, state: NotebookState) -> Callable[[int], Moment | None]:
        """The moment of a number as this transaction sees it (None: there is none), not
        copied; for reads under the lock."""
        staged = self._staged
        if staged is None:
            return state.moments.get
        deleted = self._deleted_numbers(state)

        def current(num: int) -> Moment | None:
            if num in staged.archived or (num not in staged.moments and num in deleted):
                return None
            return staged.moments.get(num) or state.moments.get(num)

        return current

    def _moment_numbers(self, state: NotebookState, session_id: str | None) -> list[int]:
        if session_id is None:
            nums = set(state.moments)
        else:
            nums = set(state.by_session.get(session_id, ()))
        if self._staged is not None:
            nums.difference_update(self._deleted_numbers(state))
            for num, m in self._staged.moments.items():
                if session_id is None or m.session == session_id:
                    nums.add(num)
                else:
                    nums.discard(num)
            nums.difference_update(self._staged.archived)
        return sorted(nums)

    def list_moments(
        self, session_id: str | None = None, offset: int = 0, limit: int | None = None
    ) -> list[Moment]:
        with self._reading() as state:
            nums = _page(self._moment_numbers(state, session_id), offset, limit)
            staged = self._staged.moments if self._staged is not None else {}
            return [self._own(staged.get(n) or state.moments[n]) for n in nums]

    def session_activity_after(self, session_id: str, after: int) -> list[Activity]:
        with self._reading() as state:
            nums = [n for n in self._moment_numbers(state, session_id) if n > after]
            staged = self._staged.moments if self._staged is not None else {}
            found = [staged.get(n) or state.moments[n] for n in nums]
            return [activity_of(m) for m in found if m.rollup is None]

    def count_moments(self, session_id: str | None = None) -> int:
        with self._reading() as state:
            return len(self._moment_numbers(state, session_id))

    # -- text vectors -----------------------------------------------------------------------

    def put_vectors(self, model: str, vectors: Sequence[tuple[int, str, bytes]]) -> None:
        with self.atomic():
            staged = self._write()
            for num, text, blob in vectors:
                current = staged.moments.get(num) or self._state.moments.get(num)
                if (
                    current is not None
                    and num not in staged.archived
                    and current.content.text == text
                ):
                    staged.vectors[num] = (model, blob)

    def vector_models(self) -> list[str]:
        with self._reading() as state:
            return sorted({model for model, _ in state.vectors.values()})

    def get_vectors(
        self, model: str, after: int = 0, limit: int | None = None
    ) -> list[tuple[int, bytes]]:
        with self._reading() as state:
            nums = sorted(n for n, (m, _) in state.vectors.items() if m == model and n > after)
            return [(n, state.vectors[n][1]) for n in _page(nums, 0, limit)]

    def unembedded(self, model: str, limit: int | None = None, after: int = 0) -> list[int]:
        with self._reading() as state:
            nums = (
                n
                for n in sorted(state.moments)
                if n > after
                and state.vectors.get(n, ("",))[0] != model
                and state.moments[n].speaker != CUT_SPEAKER
            )
            return list(itertools.islice(nums, limit))

    # -- concepts ---------------------------------------------------------------------------
    # The concept index reflects committed moments (the facade reads it outside transactions).

    def get_concept(self, concept: str) -> ConceptEntry | None:
        with self._reading() as state:
            entry = state.concepts.get(concept)
            return None if entry is None else _concept_entry(concept, entry)

    def fact_key_members(self, keys: Sequence[str], before: int, at_most: int) -> list[int]:
        with self._reading() as state:
            found: set[int] = set()
            for key in keys:
                members = state.fact_keys.get(key, [])
                below = bisect.bisect_left(members, before)
                found.update(members[max(0, below - at_most) : below])
            return sorted(found)

    def list_concepts(self, offset: int = 0, limit: int | None = None) -> list[ConceptEntry]:
        with self._reading() as state:
            names = _page(sorted(state.concepts), offset, limit)
            return [_concept_entry(c, state.concepts[c]) for c in names]

    def count_concepts(self) -> int:
        with self._reading() as state:
            return len(state.concepts)

    # -- search -----------------------------------------------------------------------------

    def search_text(self, query: str, where: MomentFilter, limit: int) -> list[tuple[str, float]]:
        """BM25 as FTS5 ranks it, on the terms SQLite would choose (``ranking.choose_terms``,
        with its bound on postings), so these backends rank like SQLite."""
        words, order = ranking.query_words(query)
        if not words:
            return []
        with self._reading() as state:
            if where.session is not None:
                keys: list[int] | None = sorted(state.by_session.get(where.session, ()))
            else:
                keys = None
            index = state.searchable()
            total = max(state.moments, default=0)
            chosen, postings = ranking.choose_terms(
                order, index.document_counts(words), total, ranking.POSTINGS_BUDGET
            )
            above = total - ranking.POSTINGS_BUDGET if postings > ranking.POSTINGS_BUDGET else 0
            hits = []
            for num, score in index.score_terms(chosen, keys, above):
                if where.matches(state.moments[num]):
                    hits.append((f"m_{num}", score))
                    if len(hits) >= limit:
                        break
            return hits

    def term_documents(self, query: str) -> tuple[int, dict[str, int]] | None:
        words, _ = ranking.query_words(query)
        with self._reading() as state:
            index = state.searchable()
            return len(index), index.document_counts(words)

    # -- the cold archive ---------------------------------------------------------------------

    def archive_moments(self, entries: Sequence[ArchiveEntry]) -> None:
        with self.atomic():
            staged = self._write()
            for entry in entries:
                staged.moments.pop(entry.number, None)
                staged.vectors.pop(entry.number, None)
                staged.archived[entry.number] = self._own(entry)

    def _all_archived(self, state: NotebookState) -> dict[int, ArchiveEntry]:
        merged = dict(state.archived)
        if self._staged is not None:
            if self._staged.deleted:
                merged = {n: e for n, e in merged.items() if e.session not in self._staged.deleted}
            merged.update(self._staged.archived)
        return merged

    def get_archived(self, moment_ids: Sequence[str]) -> list[ArchiveEntry]:
        with self._reading() as state:
            merged = self._all_archived(state)
            found = (merged.get(moment_number(mid)) for mid in moment_ids)
            return [self._own(e) for e in found if e is not None]

    def list_archived(self, offset: int = 0, limit: int | None = None) -> list[ArchiveEntry]:
        with self._reading() as state:
            merged = self._all_archived(state)
            return [self._own(merged[n]) for n in _page(sorted(merged), offset, limit)]

    def count_archived(self) -> int:
        with self._reading() as state:
            return len(self._all_archived(state))

    def archived_with_concept(self, concept: str) -> list[str]:
        with self._reading() as state:
            return [f"m_{n}" for n in sorted(state.archived_concepts.get(concept, ()))]

    def close(self) -> None:
        return None


_T = TypeVar("_T")


def _page(items: list[_T], offset: int, limit: int | None) -> list[_T]:
    return items[offset:] if limit is None else items[offset : offset + limit]


def _concept_entry(concept: str, entry: dict[int, str]) -> ConceptEntry:
    return ConceptEntry(
        concept=concept,
        moments=[f"m_{n}" for n in sorted(entry)],
        sessions=sorted(set(entry.values())),
    )
