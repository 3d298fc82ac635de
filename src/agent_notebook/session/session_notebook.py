"""``SessionNotebook`` (seed 000): the working memory of one thread, in any LangGraph store.

Stored at namespace ``("session", thread_id)``, key ``"notebook"``, as one item holding the
Markdown text, a revision number, the activity mark used by ``should_update``, the long-term
session that receives condensed text, and the log of failed updates.

:class:`SessionNotebookSync` does the work; :class:`SessionNotebook` has the seed's async
methods and runs the same code in a worker thread, so sync-only stores (``SqliteStore``) and
async-only ones (``AsyncPostgresStore``, called from a worker thread) both work. Updates of
one thread are serialised in-process; across processes a revision check retries the change.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from langgraph.store.base import BaseStore
from pydantic import BaseModel, Field

from ..config import (
    DEFAULT_MAX_SECTION_TOKENS,
    DEFAULT_MAX_TOTAL_TOKENS,
    DEFAULT_MESSAGE_THRESHOLD,
    DEFAULT_TOOL_CALL_THRESHOLD,
    SessionBudgets,
)
from ..core.enrich import identifiers
from ..core.tokens import DEFAULT_COUNTER, TokenCounter
from ..errors import Conflict, InvalidId, InvalidInput, NotFound
from ..langgraph.stores import write_lock
from ..model import CUT_SPEAKER, UtcTime, normalize_concept, now_utc
from . import budget, quotes, sections
from .activity import ActivityMark, count_activity, mark_after
from .updaters.base import MessageLike, NotebookUpdater, UpdateFailed, as_messages

if TYPE_CHECKING:
    from ..model import Moment, Session

NAMESPACE_ROOT: Final = "session"
KEY: Final = "notebook"
CUTS_NAMESPACE: Final = "cuts"
#: Cut text is checked for quotes of this many of the session's latest moments.
QUOTABLE_MOMENTS: Final = 64
MAX_FAILURES_KEPT: Final = 20
#: "moment m_42", or "moment m_42 (Worklog)" for one section's part of a moment holding
#: the cuts of several sections.
_MOMENT_REFERENCE: Final = re.compile(r"moment (m_\d+)(?: \((.+)\))?")
WRITE_ATTEMPTS: Final = 5
#: What a rendered session notebook (:meth:`SessionNotebookSync.render_for_compaction`)
#: holds when no section has text: a compaction prompt says so; a chat's context leaves
#: the block out (:func:`holds_nothing`).
EMPTY_NOTEBOOK: Final = "(the session notebook is empty)"

__all__ = [
    "DEFAULT_MAX_SECTION_TOKENS",
    "DEFAULT_MAX_TOTAL_TOKENS",
    "DEFAULT_MESSAGE_THRESHOLD",
    "DEFAULT_TOOL_CALL_THRESHOLD",
    "LongTermNotebook",
    "SessionBudgets",
    "SessionNotebook",
    "SessionNotebookSync",
    "StoredNotebook",
    "UpdateFailure",
    "UpdateReport",
]

log = logging.getLogger(__name__)


def holds_nothing(rendered: str) -> bool:
    """Whether ``rendered`` (a :meth:`SessionNotebookSync.render_for_compaction`) is a
    session notebook with no section's text."""
    text = rendered.strip()
    if not text.startswith("<session_notebook"):  # a notebook's text as it is
        return not text
    body = text.removesuffix("</session_notebook>").partition(">")[2].strip()
    return not body or body == EMPTY_NOTEBOOK


_T = TypeVar("_T")


class LongTermNotebook(Protocol):
    """What a session notebook needs of the long-term notebook it condenses into (a
    :class:`~agent_notebook.Notebook`, which imports this module, so a protocol)."""

    def record(self, session_id: str, text: str = ..., **fields: Any) -> Moment: ...
    def thread_session(self, thread_id: str) -> str: ...
    def get_session(self, session_id: str) -> Session: ...
    def moments(
        self, session_id: str | None = ..., offset: int = ..., limit: int | None = ...
    ) -> list[Moment]: ...
    def get_moment(self, moment_id: str) -> Moment: ...


class UpdateFailure(BaseModel):
    when: UtcTime
    updater: str
    error: str


class StoredNotebook(BaseModel):
    """The store item's value."""

    schema_version: int = 1
    thread_id: str
    content: str
    revision: int = 0
    updated_at: UtcTime
    last_update: ActivityMark = Field(default_factory=ActivityMark)
    session_id: str | None = None
    cuts: int = 0
    failures: list[UpdateFailure] = Field(default_factory=list)


class UpdateReport(BaseModel):
    """What ``update_from`` did."""

    updated: bool
    updater: str
    changed_sections: list[str] = Field(default_factory=list)
    condensed: dict[str, str] = Field(default_factory=dict)  # section -> reference
    vanished_identifiers: list[str] = Field(default_factory=list)
    failure: str | None = None


# One lock per (store, thread) in this process, so two updates of one thread never interleave.
_locks: weakref.WeakKeyDictionary[BaseStore, dict[str, threading.Lock]] = (
    weakref.WeakKeyDictionary()
)
_locks_guard = threading.Lock()


def _lock_for(store: BaseStore, thread_id: str) -> threading.Lock:
    with _locks_guard:
        per_store = _locks.setdefault(store, {})
        return per_store.setdefault(thread_id, threading.Lock())


def check_thread_id(thread_id: str) -> str:
    if not isinstance(thread_id, str) or not thread_id.strip() or "." in thread_id:
        raise InvalidInput(
            f"invalid thread id {thread_id!r}: use a non-empty string without periods "
            "(LangGraph store namespaces cannot contain '.')"
        )
    return thread_id


class SessionNotebookSync:
    """The session notebook for callers without an event loop. See the module docstring."""

    def __init__(
        self,
        store: BaseStore,
        thread_id: str,
        *,
        notebook: LongTermNotebook | None = None,
        budgets: SessionBudgets | None = None,
        token_counter: TokenCounter = DEFAULT_COUNTER,
    ) -> None:
        self.store = store
        self.thread_id = check_thread_id(thread_id)
        self.namespace = (NAMESPACE_ROOT, thread_id)
        self.notebook = notebook
        self.budgets = budgets or SessionBudgets()
        self.tokens = token_counter
        # As long as any reference _keep_cuts may write, so markers are measured generously.
        longest_part = _moment_reference("m_99999999999999", max(sections.SECTIONS, key=len))
        self._placeholder = max(longest_part, self._store_reference(10**12), key=len)

    # -- storage ----------------------------------------------------------------------------

    def _read(self) -> StoredNotebook | None:
        item = self.store.get(self.namespace, KEY)
        if item is None:
            return None
        return StoredNotebook.model_validate(item.value)

    def _fresh(self) -> StoredNotebook:
        return StoredNotebook(
            thread_id=self.thread_id, content=sections.template(), updated_at=now_utc()
        )

    def _change(self, change: Callable[[StoredNotebook], _T]) -> _T:
        """Read, change and write the item under the in-process and cross-process locks;
        retried when a writer outside those locks changed it in between."""
        with _lock_for(self.store, self.thread_id), write_lock(self.store):
            for _ in range(WRITE_ATTEMPTS):
                state = self._read() or self._fresh()
                revision = state.revision
                result = change(state)
                latest = self._read()
                if latest is not None and latest.revision != revision:
                    continue  # another process changed it: redo the change on its version
                state.revision = revision + 1
                state.updated_at = now_utc()
                self.store.put(self.namespace, KEY, state.model_dump(mode="json"), index=False)
                return result
        raise Conflict(
            f"session notebook of thread {self.thread_id} kept changing under this update "
            f"({WRITE_ATTEMPTS} attempts); retry it"
        )

    # -- the seed's API ---------------------------------------------------------------------

    def initialize(self) -> str:
        """Create the notebook from the template if it does not exist; return its text."""
        if (state := self._read()) is not None:
            return state.content
        return self._change(lambda s: s.content)

    def load(self) -> str:
        state = self._read()
        return state.content if state is not None else sections.template()

    def save(self, content: str) -> None:
        """Overwrite the whole notebook. Headers and guidance lines are always kept."""
        text = sections.render(sections.parse(content))

        def overwrite(state: StoredNotebook) -> None:
            state.content = text

        self._change(overwrite)

    def update_section(
        self, name: str, content: str, *, check: Callable[[str], None] | None = None
    ) -> None:
        """Replace one section. ``check``, when given, is called with the section's current
        text inside the write, under its locks: raising (say, :class:`Conflict` for a stale
        ETag) refuses the change, so a check-then-write cannot race another writer. An
        empty (or blank) ``content`` is refused: a section is replaced, never blanked by
        mistake (:meth:`save` rewrites the whole notebook, empty sections included)."""
        sections.check_section(name)
        if not content.strip():
            raise InvalidInput(
                f"section {name!r}: the new text is empty; give the section's whole new text"
            )

        def replace(state: StoredNotebook) -> None:
            current = sections.parse(state.content)
            if check is not None:
                check(current[name])
            current[name] = content.strip("\n")
            state.content = sections.render(current)

        self._change(replace)

    def revision(self) -> tuple[int, str]:
        """The notebook's revision number (0 before its first write) and its text, read
        together."""
        state = self._read()
        return (state.revision, state.content) if state is not None else (0, sections.template())

    def get_section(self, name: str) -> str:
        return sections.parse(self.load())[sections.check_section(name)]

    def should_update(self, messages: Sequence[MessageLike]) -> bool:
        """True when the messages since the last update reach a threshold."""
        state = self._read() or self._fresh()
        count, tool_calls = count_activity(as_messages(messages), state.last_update)
        return (
            count >= self.budgets.message_threshold
            or tool_calls >= self.budgets.tool_call_threshold
        )

    def estimate_tokens(self, content: str) -> int:
        return self.tokens.count(content)

    def condense_section(self, name: str, max_tokens: int | None = None) -> str | None:
        """Cut the section to ``max_tokens`` (default: the section budget), keeping its newest
        text. The cut text is kept first (a moment of the session, or a store item) and the
        section ends with a marker naming it. Returns that reference, or None if it fit."""
        sections.check_section(name)
        limit = self.budgets.max_section_tokens if max_tokens is None else max_tokens

        def condense(state: StoredNotebook) -> str | None:
            current = sections.parse(state.content)
            cut = budget.plan_section_cut(
                current[name], limit, self.tokens, placeholder=self._placeholder
            )
            if cut is None:
                return None
            return self._apply_cuts(state, current, {name: cut})[name]

        return self._change(condense)

    def enforce_budget(self, max_total: int | None = None) -> dict[str, str]:
        """Condense over-budget sections, then the largest ones, until the notebook fits.
        Returns the reference each condensed section's marker names."""
        total = self.budgets.max_total_tokens if max_total is None else max_total

        def enforce(state: StoredNotebook) -> dict[str, str]:
            current = sections.parse(state.content)
            cuts = budget.plan_budget(
                current, self.budgets.max_section_tokens, total, self.tokens, self._placeholder
            )
            return self._apply_cuts(state, current, cuts) if cuts else {}

        return self._change(enforce)

    # -- updates ----------------------------------------------------------------------------

    def update_from(
        self, messages: Sequence[MessageLike], updater: NotebookUpdater, *, force: bool = False
    ) -> UpdateReport:
        """Run ``updater`` on the messages since the last update when ``should_update`` says
        so (or ``force``), keep every section it would blank, enforce the budget and report
        identifiers that vanished without being marked resolved. A failed updater leaves the
        notebook as it was and is recorded in :meth:`failures`."""
        converted = as_messages(messages)
        if not force and not self.should_update(converted):
            return UpdateReport(updated=False, updater=updater.name)
        state = self._read() or self._fresh()
        old = sections.parse(state.content)
        new_messages = converted[mark_after(converted, state.last_update) :]
        try:
            proposal = updater.propose(old, new_messages)
        except UpdateFailed as err:
            return self._record_failure(updater.name, str(err))
        return self._apply_proposal(old, proposal, converted, updater.name)

    def _apply_proposal(
        self, old: sections.Sections, proposal: Any, messages: Sequence[Any], name: str
    ) -> UpdateReport:
        proposed = {
            n: proposal.sections.get(n, "").strip("\n") or old[n] for n in sections.SECTIONS
        }
        changed = [n for n in sections.SECTIONS if proposed[n] != old[n]]
        merged = dict(proposed)

        def apply(state: StoredNotebook) -> dict[str, str]:
            # Sections the updater left alone take their latest text, so an update_section
            # made while the updater ran is not lost.
            latest = sections.parse(state.content)
            merged.update({n: latest[n] for n in sections.SECTIONS if n not in changed})
            state.content = sections.render(merged)
            state.last_update = ActivityMark.after(messages)
            cuts = budget.plan_budget(
                merged,
                self.budgets.max_section_tokens,
                self.budgets.max_total_tokens,
                self.tokens,
                self._placeholder,
            )
            return self._apply_cuts(state, merged, cuts) if cuts else {}

        condensed = self._change(apply)
        vanished = _vanished(old, proposed, self.load(), proposal.resolved, condensed)
        if vanished:
            log.warning("session notebook %s: identifiers vanished: %s", self.thread_id, vanished)
        return UpdateReport(
            updated=True,
            updater=name,
            changed_sections=changed,
            condensed=condensed,
            vanished_identifiers=vanished,
        )

    def _record_failure(self, updater: str, error: str) -> UpdateReport:
        log.warning("session notebook %s: %s updater failed: %s", self.thread_id, updater, error)

        def note(state: StoredNotebook) -> None:
            failure = UpdateFailure(when=now_utc(), updater=updater, error=error)
            state.failures = [*state.failures, failure][-MAX_FAILURES_KEPT:]

        self._change(note)
        return UpdateReport(updated=False, updater=updater, failure=error)

    def failures(self) -> list[UpdateFailure]:
        state = self._read()
        return [] if state is None else state.failures

    def mark_updated(self, messages: Sequence[MessageLike]) -> None:
        """Count activity from here on (after an update made by other means)."""
        converted = as_messages(messages)

        def mark(state: StoredNotebook) -> None:
            state.last_update = ActivityMark.after(converted)

        self._change(mark)

    def render_for_compaction(self) -> str:
        """The notebook as it goes into a compaction prompt: the non-empty sections, without
        guidance lines, in a tagged block the summarizer is told to preserve."""
        body = [f"## {name}\n{text}" for name, text in sections.parse(self.load()).items() if text]
        inner = "\n\n".join(body) if body else EMPTY_NOTEBOOK
        return f'<session_notebook thread="{self.thread_id}">\n{inner}\n</session_notebook>'

    # -- condensed text ---------------------------------------------------------------------

    def _apply_cuts(
        self, state: StoredNotebook, current: sections.Sections, cuts: dict[str, budget.SectionCut]
    ) -> dict[str, str]:
        """Keep every cut text durably first, then write the sections with their markers."""
        references = self._keep_cuts(state, {name: cut.removed for name, cut in cuts.items()})
        for name, cut in cuts.items():
            current[name] = budget.with_marker(cut.kept, references[name])
        state.content = sections.render(current)
        return references

    def _keep_cuts(self, state: StoredNotebook, removed: dict[str, str]) -> dict[str, str]:
        """Keep the text cut from each section; return the reference each marker names.
        Into the long-term notebook the cuts of one change go as one moment, each section's
        under its header (:func:`sections.render_parts`) when there are several: a moment's
        vector, index rows and concept pairs cost more than a cut's text (issue 17)."""
        if self.notebook is None or not removed:
            return {name: self._store_cut(state, name, text) for name, text in removed.items()}
        session_id = self._long_term_session(state)
        quotable = self._quotable(session_id)
        compressed = {name: quotes.compress(text, quotable) for name, text in removed.items()}
        single = len(compressed) == 1
        moment = self.notebook.record(
            session_id,
            next(iter(compressed.values())) if single else sections.render_parts(compressed),
            role="system",
            speaker=CUT_SPEAKER,
            # Derived text: its concepts and keys are its sources' (or, quoted, the words
            # "worklog", "condensed", "m_12"...); the moments it came from are indexed so.
            concepts=[],
            retrieval_keys=[],
            links=[f"session-notebook:{self.thread_id}#{name}" for name in removed],
            source_id=f"{self.thread_id}#{'+'.join(removed)}",
        )
        return {
            name: f"moment {moment.id}" if single else _moment_reference(moment.id, name)
            for name in removed
        }

    def _store_cut(self, state: StoredNotebook, section: str, text: str) -> str:
        state.cuts += 1
        value = {"section": section, "text": text, "at": now_utc().isoformat()}
        key = f"cut_{state.cuts}"
        self.store.put((*self.namespace, CUTS_NAMESPACE), key, value, index=False)
        return self._store_reference(state.cuts)

    def _store_reference(self, number: int) -> str:
        return f"store item {NAMESPACE_ROOT}/{self.thread_id}/{CUTS_NAMESPACE}/cut_{number}"

    def _long_term_session(self, state: StoredNotebook) -> str:
        assert self.notebook is not None
        if state.session_id is None:
            state.session_id = self.notebook.thread_session(self.thread_id)
        return state.session_id

    def _quotable(self, session_id: str) -> dict[int, str]:
        """The latest conversation moments of the session: what cut text quotes."""
        assert self.notebook is not None
        count = self.notebook.get_session(session_id).stats.moments
        recent = self.notebook.moments(session_id, max(0, count - QUOTABLE_MOMENTS))
        return {
            m.number: m.content.text
            for m in recent
            if m.speaker != CUT_SPEAKER and m.redacted is None and m.content.text
        }

    def fetch_cut(self, reference: str) -> str:
        """The text a marker's reference names ("moment m_42", "moment m_42 (Worklog)" or
        "store item …/cut_3")."""
        named = _MOMENT_REFERENCE.fullmatch(reference)
        if named is not None and self.notebook is not None:
            notebook = self.notebook
            text = notebook.get_moment(named[1]).content.text
            if named[2] is not None:
                found = sections.part(text, named[2])
                if found is None:
                    return f"[the {named[2]} part of {named[1]}: redacted]"
                text = found

            def moment_text(number: int) -> str | None:
                try:
                    return notebook.get_moment(f"m_{number}").content.text
                except (NotFound, InvalidId):  # gone, or a number no moment can have
                    return None

            return quotes.expand(text, moment_text)
        prefix = f"store item {NAMESPACE_ROOT}/{self.thread_id}/{CUTS_NAMESPACE}/"
        if reference.startswith(prefix):
            item = self.store.get((*self.namespace, CUTS_NAMESPACE), reference.removeprefix(prefix))
            if item is not None:
                return str(item.value["text"])
        raise NotFound(f"no condensed text at {reference!r} for thread {self.thread_id}")


def _moment_reference(moment_id: str, section: str) -> str:
    return f"moment {moment_id} ({section})"


def _vanished(
    old: sections.Sections,
    proposed: sections.Sections,
    stored: str,
    resolved: Sequence[str],
    condensed: dict[str, str],
) -> list[str]:
    """Identifiers of the old notebook missing from the new one and not marked resolved.
    Text condensed into a moment is not vanished: its marker names where it went."""
    # Only a changed section can lose an identifier (one may move to another section).
    before = identifiers("\n".join(old[n] for n in sections.SECTIONS if old[n] != proposed[n]))
    after_raw = stored + "\n" + sections.render(proposed) if condensed else stored
    after_text = normalize_concept(after_raw)
    # A date's identifier is its ISO form ("--06-14" for "14 June"): compare identifiers too.
    after_ids = {normalize_concept(i) for i in identifiers(after_raw)}
    done = {normalize_concept(r) for r in resolved}
    return [
        i
        for i in before
        if i not in after_text and normalize_concept(i) not in after_ids and i not in done
    ]


class SessionNotebook:
    """The seed's ``SessionNotebook(store, thread_id)`` with async methods.

    Each method runs :class:`SessionNotebookSync`'s in a worker thread; ``.sync`` is that
    object, for callers without an event loop.
    """

    def __init__(
        self,
        store: BaseStore,
        thread_id: str,
        *,
        notebook: LongTermNotebook | None = None,
        budgets: SessionBudgets | None = None,
        token_counter: TokenCounter = DEFAULT_COUNTER,
    ) -> None:
        self.sync = SessionNotebookSync(
            store, thread_id, notebook=notebook, budgets=budgets, token_counter=token_counter
        )
        self.store = store
        self.thread_id = self.sync.thread_id

    async def initialize(self) -> str:
        return await asyncio.to_thread(self.sync.initialize)

    async def load(self) -> str:
        return await asyncio.to_thread(self.sync.load)

    async def save(self, content: str) -> None:
        await asyncio.to_thread(self.sync.save, content)

    async def update_section(self, name: str, content: str) -> None:
        await asyncio.to_thread(self.sync.update_section, name, content)

    async def get_section(self, name: str) -> str:
        return await asyncio.to_thread(self.sync.get_section, name)

    async def should_update(self, messages: Sequence[MessageLike]) -> bool:
        return await asyncio.to_thread(self.sync.should_update, messages)

    async def estimate_tokens(self, content: str) -> int:
        return self.sync.estimate_tokens(content)

    async def condense_section(self, name: str, max_tokens: int | None = None) -> str | None:
        return await asyncio.to_thread(self.sync.condense_section, name, max_tokens)

    async def enforce_budget(self, max_total: int | None = None) -> dict[str, str]:
        return await asyncio.to_thread(self.sync.enforce_budget, max_total)

    async def update_from(
        self, messages: Sequence[MessageLike], updater: NotebookUpdater, *, force: bool = False
    ) -> UpdateReport:
        """As :meth:`SessionNotebookSync.update_from`, calling the updater's ``apropose``."""
        converted = as_messages(messages)
        if not force and not await self.should_update(converted):
            return UpdateReport(updated=False, updater=updater.name)
        state = await asyncio.to_thread(lambda: self.sync._read() or self.sync._fresh())
        old = sections.parse(state.content)
        new_messages = converted[mark_after(converted, state.last_update) :]
        try:
            proposal = await updater.apropose(old, new_messages)
        except UpdateFailed as err:
            return await asyncio.to_thread(self.sync._record_failure, updater.name, str(err))
        return await asyncio.to_thread(
            self.sync._apply_proposal, old, proposal, converted, updater.name
        )

    async def mark_updated(self, messages: Sequence[MessageLike]) -> None:
        await asyncio.to_thread(self.sync.mark_updated, messages)

    async def failures(self) -> list[UpdateFailure]:
        return await asyncio.to_thread(self.sync.failures)

    async def render_for_compaction(self) -> str:
        return await asyncio.to_thread(self.sync.render_for_compaction)

    async def fetch_cut(self, reference: str) -> str:
        return await asyncio.to_thread(self.sync.fetch_cut, reference)
