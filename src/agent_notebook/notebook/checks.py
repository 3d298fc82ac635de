"""The checks of what a caller hands the notebook, shared by the facade's parts and the
front ends: the query cap, limits and offsets, aware datetimes, non-empty texts."""

from __future__ import annotations

from datetime import datetime

from ..errors import InvalidInput

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_SEARCH_LIMIT",
    "aware",
    "check_query",
    "check_who",
    "limit_of",
    "nothing_to_forget",
    "offset_of",
    "optional_limit",
    "required",
    "weak_match_hint",
]

MAX_SEARCH_LIMIT = 1000
#: The longest query a search takes, in characters, on every front end (a longer one is
#: refused: it would cost seconds and memory and find nothing a shorter one would not).
MAX_QUERY_CHARS = 10_000
#: The longest name of who made an audit entry (``who`` of a decision or an edit), on
#: every front end.
MAX_WHO_CHARS = 100


def weak_match_hint(query: str, min_score: float, option: str = "min_score") -> str:
    """What to say when a search found nothing relevant enough (every front end says it,
    naming its own ``option``: ``--min-score`` on the command line)."""
    return (
        f"nothing matches {query!r} well (minimum score {min_score:g}): try other words, "
        f"or a lower {option} ({option} 0 shows every match, however weak)"
    )


def required(text: str, what: str, give: str) -> str:
    """``text`` unless it is empty or only blanks: a record of nothing is refused."""
    if not text.strip():
        raise InvalidInput(f"{what}: the text is empty; give {give}")
    return text


def aware(when: datetime, name: str) -> datetime:
    if when.tzinfo is None or when.utcoffset() is None:
        raise InvalidInput(f"{name}: {when} has no timezone; pass an aware datetime (UTC)")
    return when


def check_who(who: str, what: str) -> str:
    """``who`` if it is a name of 1 to :data:`MAX_WHO_CHARS` characters, not only blanks:
    the one check of the audit log's ``who`` for the CLI, HTTP, MCP and the pages."""
    if not who.strip() or len(who) > MAX_WHO_CHARS:
        size = "empty" if not who.strip() else f"{len(who):,} characters"
        raise InvalidInput(
            f"{what}: who is {size}; give a name of 1 to {MAX_WHO_CHARS} characters "
            "(nothing was changed)"
        )
    return who


def nothing_to_forget(concept: str) -> str:
    """What the CLI and the pages say when nothing mentions the concept asked to forget."""
    return (
        f"nothing in the notebook mentions {concept!r} (no moment, rollup or "
        "session-notebook section): nothing to forget. Check the spelling with "
        "'agent-notebook search'"
    )


def check_query(query: str, what: str, *, required: bool = False) -> str:
    """``query`` if it is within :data:`MAX_QUERY_CHARS`: the one cap of every front end;
    ``required``: not empty nor only blanks either (a search of nothing finds nothing, and
    an empty answer would read as "nothing matches")."""
    if required and not query.strip():
        size = "empty" if not query else "only blanks"
        raise InvalidInput(
            f"{what}: the query is {size}; give the words to look for (nothing was searched)"
        )
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(
            f"{what}: the query is {len(query):,} characters, over the limit of "
            f"{MAX_QUERY_CHARS:,}; shorten it to the words that matter (nothing was searched)"
        )
    return query


def offset_of(offset: int) -> int:
    if offset < 0:
        raise InvalidInput(f"offset must be 0 or more, got {offset}")
    return offset


def optional_limit(limit: int | None) -> int | None:
    if limit is not None and limit < 0:
        raise InvalidInput(f"limit must be 0 or more, got {limit}")
    return limit


def limit_of(limit: int) -> int:
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_SEARCH_LIMIT}, got {limit}")
    return limit
