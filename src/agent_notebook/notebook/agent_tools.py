"""The notebook's tools for agents, whatever carries them (MCP, LangChain): what each tool
tells the model, how its answers are shaped and how its errors read.

The MCP server (:mod:`agent_notebook.server.mcp_tools`) and the LangChain tools
(:mod:`agent_notebook.langchain.tools`) both use these, so an agent reads the same
descriptions and the same recovery hints over either, and a tool does what the facade does
and nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import Conflict, InvalidInput, NotebookError, NotFound

if TYPE_CHECKING:
    from ..model import Moment, MomentDraft, Session
    from ..search.hits import SearchHit
    from ..search.request import Mode


class ToolNotebook(Protocol):
    """What the tools use of the notebook (a :class:`~agent_notebook.Notebook`)."""

    def search(
        self,
        query: str,
        *,
        session: str | None = ...,
        since: datetime | None = ...,
        until: datetime | None = ...,
        speaker: str | None = ...,
        limit: int = ...,
        mode: Mode = ...,
        current: bool = ...,
        as_of: datetime | None = ...,
        current_session_id: str | None = ...,
        asked_at: datetime | None = ...,
    ) -> Sequence[SearchHit]: ...
    def record(self, session_id: str, text: str = ..., **fields: Any) -> Moment: ...
    def record_in_new_session(
        self, task: str, drafts: Iterable[MomentDraft | dict[str, Any]]
    ) -> tuple[Session, list[Moment]]: ...


__all__ = [
    "READ_SESSION",
    "RECORD",
    "SEARCH",
    "SLICE",
    "WRITE_BACK",
    "ToolDoc",
    "error_message",
    "hit_summary",
    "record_moment",
    "search_hits",
]


@dataclass(frozen=True)
class ToolDoc:
    """A tool's description for a model: what it does, each argument, what it returns."""

    summary: str
    args: dict[str, str]
    returns: str = ""

    def text(self) -> str:
        """Everything in one text (MCP shows no per-argument descriptions)."""
        lines = [self.summary, "", *(f"{name}: {doc}" for name, doc in self.args.items())]
        return "\n".join([*lines, self.returns] if self.returns else lines)

    def brief(self) -> str:
        """The summary and the returns, for a tool whose schema describes each argument."""
        return f"{self.summary}\n{self.returns}" if self.returns else self.summary


_SESSION_ID = "an id like s_2026-06-07_001"

SEARCH = ToolDoc(
    "Find moments in the notebook by words and meaning, best first.",
    {
        "query": 'what to look for, in plain words ("train to Lyon", "why we chose Postgres").',
        "session_id": f"only this session ({_SESSION_ID}); omit to search all.",
        "limit": "how many results, 1 to 100.",
        "since": "only moments said at or after this ISO 8601 date or time (UTC if no zone).",
        "until": "only moments said before this ISO 8601 date or time (UTC if no zone).",
        "speaker": "only moments of this speaker (or role: user, assistant).",
        "mode": '"hybrid" (words and meaning, the default), "lexical" (words only) or '
        '"vector" (meaning only).',
        "explain": "add to each hit what found it: each signal's share, rank and relevance.",
        "current_session_id": "the session of the conversation you are in, if any: its "
        "latest turns, which you already have, are left out (so your own question and "
        "answers do not hide the facts).",
        "current": "true: only what holds now (no fact a later one replaced, nothing expired).",
        "as_of": "read the notebook as it stood at this ISO 8601 time (UTC if no zone): only "
        "what was said by then and still held then.",
        "asked_at": "when the question is asked, ISO 8601 (UTC if no zone): its time words "
        '("yesterday", "last week", "in March") are read against it; omit for as_of, else now '
        "(give it when answering a question asked at another time, such as a replayed chat).",
    },
    "Returns for each hit: the moment id (cite it as [moment:m_12]), its session, time, "
    "speaker, text and score, and what is known of it: superseded_by (a later moment "
    "replaced it: prefer that one), said (how many times), conflicts_with (moments it "
    "cannot hold together with), expires and expired. An empty list means nothing "
    "matched: try other words.",
)
SLICE = ToolDoc(
    "Get a compact, read-only briefing on a topic from the notebook, within a token budget: "
    "the relevant moments with the turns around them, each session's task, its open pending "
    "items and related decisions, every item tagged with its source id.",
    {
        "query": "the topic you need to know about.",
        "budget_tokens": "the most tokens the briefing may take (1 to 262144; 4000 is usual).",
        "audience": "your name, recorded with the slice.",
        "session_id": "only this session; omit for the whole notebook.",
        "asked_at": "when the question is asked, ISO 8601 (UTC if no zone): its time words "
        "are read against it; omit for now.",
    },
    "Returns Markdown. Cite items by their tags, e.g. [moment:m_12].",
)
READ_SESSION = ToolDoc(
    "Read one session: its task and status, its audit log of decisions, its pending threads "
    "(ids p_N) and escalations (ids e_N), links and stats.",
    {"session_id": f"{_SESSION_ID} (search results name the session of each moment)."},
)
WRITE_BACK = ToolDoc(
    "Write your result back into a session: the one kind of write a guest may make. It is "
    "entered in the session's audit log under guest:<your name>.",
    {
        "guest": "your name (1 to 100 characters); over HTTP a guest token's own name is "
        "taken when you omit it, and the owner omits it to write as the owner.",
        "session_id": f"the session the result belongs to ({_SESSION_ID}).",
        "kind": '"decision" (something settled), "pending" (a new open question or to-do), or '
        '"escalation_outcome" (the answer to an escalation; give escalation_id, e.g. e_1, '
        "which the hand-off to you names and read_session lists).",
        "text": "the decision, the open item, or the outcome, in one or two sentences.",
        "why": "the reason, briefly.",
        "escalation_id": 'the escalation answered, with kind "escalation_outcome".',
    },
    "Returns the audit-log entry.",
)
RECORD = ToolDoc(
    "Record a moment (a turn, a fact, an observation) in the notebook, so later searches find it.",
    {
        "text": "what to remember, self-contained (name people, places and dates).",
        "session_id": "the session to add it to; omit it to start a new session with `task`.",
        "task": "the new session's task, when session_id is omitted.",
        "role": "user, assistant, system or tool (default user).",
        "speaker": "who said it, if a person.",
    },
    "Returns the moment's id and its session's id.",
)

RECOVERY: dict[type[NotebookError], str] = {
    NotFound: "check the id: search and slice name moment and session ids, read_session "
    "shows a session's pending and escalation ids (a guest: the slice and its hand-off)",
    InvalidInput: "correct the argument the message names and call again; nothing was changed",
    Conflict: "read the record again (read_session) and decide whether your change still "
    "applies; nothing was changed",
}
RETRY = "retry later; if it keeps failing, tell the user this error"


def error_message(err: NotebookError) -> str:
    """What a failed tool call tells the model: the error, then how to recover."""
    hint = next((h for kind, h in RECOVERY.items() if isinstance(err, kind)), RETRY)
    return f"{err}. To recover: {hint}."


TOOL_SEARCH_LIMIT = 100  # a model asking for more would drown its own context


def search_hits(
    notebook: ToolNotebook,
    query: str,
    session_id: str | None = None,
    limit: int = 10,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    speaker: str | None = None,
    mode: Mode = "hybrid",
    explain: bool = False,
    current_session_id: str | None = None,
    current: bool = False,
    as_of: datetime | None = None,
    asked_at: datetime | None = None,
) -> list[dict[str, Any]]:
    """The search tool: ``notebook.search`` with the tool's cap on ``limit``; a time
    without a zone is UTC, as on the command line. With ``current_session_id``, the
    conversation the caller is in, its latest turns are left out; the question's time words
    are read against ``asked_at`` (see :meth:`.finding.Finding.search`)."""
    if not 1 <= limit <= TOOL_SEARCH_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {TOOL_SEARCH_LIMIT}, got {limit}")
    hits = notebook.search(
        query,
        session=session_id,
        limit=limit,
        current_session_id=current_session_id,
        since=_utc(since),
        until=_utc(until),
        speaker=speaker or None,
        mode=mode,
        current=current,
        as_of=_utc(as_of),
        asked_at=_utc(asked_at),
    )
    return [hit_summary(h, explain=explain) for h in hits]


def _utc(when: datetime | None) -> datetime | None:
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


def hit_summary(hit: SearchHit, *, explain: bool = False) -> dict[str, Any]:
    """One search result as a tool returns it (JSON values only); with ``explain``, what
    found it (each signal's share and rank, relevance, priors)."""
    moment = hit.moment
    summary: dict[str, Any] = {
        "id": moment.id,
        "session": moment.session,
        "when": moment.timestamp.isoformat(),
        "speaker": moment.speaker or moment.role,
        "text": moment.content.text,
        "score": round(hit.score, 4),
    }
    # What the fact rules know of it, so an agent can tell a current fact from a replaced one
    if hit.superseded_by:
        summary["superseded_by"] = hit.superseded_by
    if hit.said > 1:
        summary["said"] = hit.said
    if hit.conflicts_with:
        summary["conflicts_with"] = list(hit.conflicts_with)
    if moment.expires is not None:
        summary["expires"] = moment.expires.isoformat()
    if hit.expired:
        summary["expired"] = True
    if explain:
        summary["explain"] = {k: round(v, 4) for k, v in hit.explain.as_dict().items()}
    return summary


def record_moment(
    notebook: ToolNotebook,
    text: str,
    session_id: str | None = None,
    *,
    task: str = "",
    role: str = "user",
    speaker: str = "",
) -> dict[str, str]:
    """The record tool: ``text`` in ``session_id``, or in a new session for ``task``, in one
    transaction (a moment that fails its checks starts no session either). Returns the
    moment's id and its session's."""
    if session_id:
        moment = notebook.record(session_id, text, role=role, speaker=speaker)
    else:
        draft = {"text": text, "role": role, "speaker": speaker}
        moment = notebook.record_in_new_session(task or text[:80], [draft])[1][0]
    return {"id": moment.id, "session": moment.session}
