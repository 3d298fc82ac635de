"""The ContextBuilder: what of the notebooks goes into one turn's system prompt.

Like Open Notebook's context builder, driven by a ``context_config`` of modes, for our two
notebooks: the session notebook, the thread's condensed history, the session's open pending
threads and latest decisions, and the long-term moments relevant to the message. Each item is
rendered with its id tag first (``[moment:m_12]``) so answers can cite it.

Selection and fitting are pure functions (:func:`resolve_modes`, :func:`fit`); the
:class:`Notebook` is only read. Budget accounting: the instruction line of :meth:`render`
counts in ``tokens_used`` (once, when any item is in); so does each item's rendered text.
The blank line between blocks is charged while fitting but not listed in ``tokens_used``, so
for a subadditive counter (like the default estimate) ``count(render()) <= budget`` too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal, cast, get_args

from ..core.tokens import DEFAULT_COUNTER, TokenCounter
from ..errors import InvalidInput
from ..model import Decision, Moment, PendingItem, Session
from ..notebook.checks import MAX_QUERY_CHARS, MAX_SEARCH_LIMIT
from ..notebook.facade import Notebook
from ..session.sections import SECTION_NAMES, SECTIONS
from ..session.session_notebook import holds_nothing

Mode = Literal["not in context", "summary", "full"]
MODES: Final[tuple[Mode, ...]] = get_args(Mode)
INSTRUCTION: Final = "Cite items by their tag, e.g. [moment:m_12]."
SEPARATOR: Final = "\n\n"
MAX_DECISIONS: Final = 5
SUMMARY_CHARS: Final = 200
HISTORY_SUMMARY_CHARS: Final = 400
SUMMARY_SECTIONS: Final = ("Current State", "Task Specification")
#: Prompt order of the kinds; fitting goes by the order of the candidates (priority).
PROMPT_ORDER: Final = ("session_notebook", "condensed_history", "pending", "decision", "moment")

_SENTENCE = re.compile(r"^.+?[.!?](?=\s|$)", re.S)
_HEADER = re.compile(rf"^## ({'|'.join(map(re.escape, SECTION_NAMES))})[ \t]*$", re.M)


@dataclass(frozen=True, slots=True)
class ContextItem:
    id: str
    kind: str
    mode: Mode
    text: str
    tokens: int


@dataclass(frozen=True, slots=True)
class BuiltContext:
    items: list[ContextItem]
    cut: list[tuple[str, str]]
    tokens_used: int
    budget: int

    def render(self) -> str:
        """The instruction line, then one block per item, in prompt order ("" if empty)."""
        if not self.items:
            return ""
        return SEPARATOR.join([INSTRUCTION, *(item.text for item in self.items)])


@dataclass(frozen=True, slots=True)
class Candidate:
    """An item that could go in: its full and summary renderings, both tagged."""

    id: str
    kind: str
    full: str
    summary: str

    @classmethod
    def make(cls, item_id: str, kind: str, full: str, summary: str) -> Candidate:
        """A summary is never longer than the full text."""
        return cls(item_id, kind, full, summary if len(summary) < len(full) else full)


# -- rendering (pure) -------------------------------------------------------------------------


def shorten(text: str, limit: int = SUMMARY_CHARS) -> str:
    """The first sentence of ``text`` (whitespace collapsed), at most ``limit`` characters."""
    flat = " ".join(text.split())
    match = _SENTENCE.match(flat)
    first = match[0] if match else flat
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def tail(text: str, limit: int = HISTORY_SUMMARY_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-(limit - 1) :].lstrip()


def notebook_summary(text: str) -> str:
    """Only the Current State and Task Specification sections (guidance lines dropped); the
    first sentence when the text has no section headers."""
    matches = list(_HEADER.finditer(text))
    if not matches:
        return shorten(text)
    parts = []
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        lines = text[m.end() : end].strip("\n").splitlines()
        if lines and lines[0].strip() == f"_{SECTIONS[m[1]]}_":  # the guidance line
            lines = lines[1:]
        body = "\n".join(ln for ln in lines if not ln.startswith("</session_notebook")).strip()
        if m[1] in SUMMARY_SECTIONS and body:
            parts.append(f"## {m[1]}\n{body}")
    return "\n\n".join(parts) or "(no current state or task specification)"


def session_notebook_candidate(text: str) -> Candidate:
    tag = "[session_notebook]"
    return Candidate.make(
        "session_notebook",
        "session_notebook",
        f"{tag}\n{text.strip()}",
        f"{tag}\n{notebook_summary(text)}",
    )


def history_candidate(text: str) -> Candidate:
    tag = "[condensed_history]"
    return Candidate.make(
        "condensed_history", "condensed_history", f"{tag}\n{text.strip()}", f"{tag}\n{tail(text)}"
    )


def pending_candidate(open_items: Sequence[PendingItem]) -> Candidate:
    head = "[pending] Open threads of this session:"
    full = [f"[pending:{p.id}] {p.what.strip()} (open since {p.since.date()})" for p in open_items]
    short = [f"[pending:{p.id}] {shorten(p.what, 80)}" for p in open_items]
    return Candidate.make("pending", "pending", "\n".join([head, *full]), "\n".join([head, *short]))


def decision_candidate(number: int, decision: Decision) -> Candidate:
    """Decision ``d_<number>``: its 1-based place in the session's (append-only) audit log."""
    tag = f"[decision:d_{number}] ({decision.when.date()}, {decision.who})"
    why = f" Why: {decision.why.strip()}" if decision.why.strip() else ""
    return Candidate.make(
        f"decision:d_{number}",
        "decision",
        f"{tag} {decision.what.strip()}{why}",
        f"{tag} {shorten(decision.what)}",
    )


def moment_candidate(moment: Moment) -> Candidate:
    who = moment.speaker or moment.role
    tag = f"[moment:{moment.id}] ({moment.timestamp.date()}, {who})"
    text = moment.content.text.strip()
    return Candidate.make(
        f"moment:{moment.id}", "moment", f"{tag} {text}", f"{tag} {shorten(text)}"
    )


# -- selection and fitting (pure) -------------------------------------------------------------


def resolve_modes(
    candidates: Sequence[Candidate], config: Mapping[str, str] | None
) -> dict[str, Mode]:
    """Each candidate's mode: its id's entry, else its kind's, else "full". Every entry of
    ``config`` must be a known mode, whether or not it names a candidate of this turn."""
    config = config or {}
    for key, value in config.items():
        if value not in MODES:
            raise InvalidInput(
                f"context_config[{key!r}]: unknown mode {value!r}; "
                f"the modes are: {', '.join(repr(m) for m in MODES)}"
            )
    return {c.id: cast(Mode, config.get(c.id, config.get(c.kind, "full"))) for c in candidates}


def fit(
    candidates: Sequence[Candidate],
    modes: Mapping[str, Mode],
    budget: int,
    counter: TokenCounter = DEFAULT_COUNTER,
) -> BuiltContext:
    """Take candidates in priority order (the order given), each in its mode if it fits, else
    its summary ("summarised to fit"), else not at all ("over budget"). A later, smaller
    candidate can still fit after a bigger one was cut. Items come out in prompt order."""
    overhead, sep = counter.count(INSTRUCTION), counter.count(SEPARATOR)
    taken: list[ContextItem] = []
    cut: list[tuple[str, str]] = []
    charged = 0
    for c in candidates:
        mode = modes.get(c.id, "full")
        if mode == "not in context":
            cut.append((c.id, "not in context"))
            continue
        options: list[tuple[Mode, str]] = [(mode, c.full if mode == "full" else c.summary)]
        if mode == "full" and c.summary != c.full:
            options.append(("summary", c.summary))
        start = 0 if taken else overhead
        for chosen, text in options:
            tokens = counter.count(text)
            if charged + start + tokens + sep <= budget:
                taken.append(ContextItem(c.id, c.kind, chosen, text, tokens))
                charged += start + tokens + sep
                if chosen != mode:
                    cut.append((c.id, "summarised to fit"))
                break
        else:
            cut.append((c.id, "over budget"))
    rank = {kind: i for i, kind in enumerate(PROMPT_ORDER)}  # other kinds last; sort is stable
    taken.sort(key=lambda item: rank.get(item.kind, len(rank)))
    used = (overhead if taken else 0) + sum(item.tokens for item in taken)
    return BuiltContext(items=taken, cut=cut, tokens_used=used, budget=budget)


# -- the builder (reads the Notebook) ---------------------------------------------------------


class ContextBuilder:
    """Assemble a turn's context from a :class:`Notebook` within ``budget_tokens``.

    Priority when fitting: session notebook, pending, decisions (newest first), condensed
    history, then moments by search rank. Prompt order: see :data:`PROMPT_ORDER` (within a
    kind, priority order: decisions newest first, moments best first).
    """

    def __init__(
        self,
        notebook: Notebook,
        *,
        budget_tokens: int = 4000,
        max_moments: int = 8,
        token_counter: TokenCounter = DEFAULT_COUNTER,
    ) -> None:
        if budget_tokens < 0:
            raise InvalidInput(f"budget_tokens must be 0 or more, got {budget_tokens}")
        if max_moments < 0:
            raise InvalidInput(f"max_moments must be 0 or more, got {max_moments}")
        self.notebook = notebook
        self.budget_tokens = budget_tokens
        self.max_moments = max_moments
        self.tokens = token_counter

    def prepare(self, message: str) -> None:
        """Start embedding ``message`` for the search of :meth:`build` (on a thread of the
        notebook's vector index), so that it overlaps the rest of the turn's reads and the
        lexical search instead of following them. Nothing to do for a lexical context."""
        if self.max_moments == 0 or not message.strip():
            return
        if self.notebook.config.chat.context_search != "hybrid":
            return
        if (semantic := self.notebook.vectors.semantic) is not None:
            semantic.prepare_query(message)

    def done(self, message: str) -> None:
        """The turn's context is built, or failed: a vector :meth:`prepare` made that its
        search did not take (a failure before it, a search of other words) is let go, so the
        embedding worker no longer waits for it."""
        if (semantic := self.notebook.vectors.semantic) is not None:
            semantic.drop_prepared(message)

    def build(
        self,
        *,
        message: str,
        session_id: str | None,
        session_notebook: str | None = None,
        condensed_history: str = "",
        context_config: Mapping[str, str] | None = None,
        session: Session | None = None,
        asked_at: datetime | None = None,
    ) -> BuiltContext:
        """``condensed_history`` falls back to the session's ``context.condensed_history``;
        an unknown ``session_id`` raises :class:`NotFound`, an unknown mode InvalidInput.
        ``session``: that session as the caller just read it (else it is read here).
        ``asked_at``: when the message was said (the search reads its time words from it;
        None: now)."""
        candidates = self.candidates(
            message=message,
            session_id=session_id,
            session_notebook=session_notebook,
            condensed_history=condensed_history,
            session=session,
            asked_at=asked_at,
        )
        modes = resolve_modes(candidates, context_config)
        return fit(candidates, modes, self.budget_tokens, self.tokens)

    def candidates(
        self,
        *,
        message: str,
        session_id: str | None,
        session_notebook: str | None = None,
        condensed_history: str = "",
        session: Session | None = None,
        asked_at: datetime | None = None,
    ) -> list[Candidate]:
        """Every item that could go in, in priority order."""
        if session_id is None:
            session = None
        elif session is None or session.id != session_id:
            session = self.notebook.get_session(session_id)
        found: list[Candidate] = []
        if session_notebook and not holds_nothing(session_notebook):  # no empty block
            found.append(session_notebook_candidate(session_notebook))
        recent: set[str] = set()
        if session is not None:
            open_items = [p for p in session.pending if p.closed is None]
            if open_items:
                found.append(pending_candidate(open_items))
            numbered = list(enumerate(session.decisions, start=1))[-MAX_DECISIONS:]
            found += [decision_candidate(n, d) for n, d in reversed(numbered)]
            condensed_history = condensed_history or session.context.condensed_history
            recent = set(session.context.recent_moments)
        if condensed_history.strip():
            found.append(history_candidate(condensed_history))
        found += [moment_candidate(m) for m in self._moments(message, recent, asked_at)]
        return found

    def _moments(
        self, message: str, skip: set[str], asked_at: datetime | None = None
    ) -> list[Moment]:
        """The notebook's best matches for ``message``, most relevant first, then, when
        fewer than ``max_moments`` match, the turns just around them (as a slice gives
        them: same session, not redacted); none of those in ``skip``. The matches come
        loaded from the search; only the turns around them are read."""
        if self.max_moments == 0 or not message.strip():
            return []
        hits = self.notebook.search(
            _query_of(message),
            limit=min(self.max_moments, MAX_SEARCH_LIMIT),
            exclude=skip,
            mode=self.notebook.config.chat.context_search,
            asked_at=asked_at,
        )
        found = {h.moment.id: h.moment for h in hits if h.moment.id not in skip}
        if len(found) >= self.max_moments or not found:
            return list(found.values())[: self.max_moments]
        matches = list(found.values())
        around = self.notebook.turns_around(matches)
        for match in matches:
            for moment in around[match.id]:
                if moment.id not in found and moment.id not in skip:
                    if len(found) >= self.max_moments:
                        return list(found.values())
                    found[moment.id] = moment
        return list(found.values())


def _query_of(message: str) -> str:
    """What to search for ``message``: itself, or, past the search's cap, its start and its
    end (a pasted document's question is usually before or after it)."""
    if len(message) <= MAX_QUERY_CHARS:
        return message
    half = MAX_QUERY_CHARS // 2 - 1
    return f"{message[:half]} {message[-half:]}"
