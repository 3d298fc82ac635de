"""A guest token's scope applied to a slice (:class:`~..privacy.guest_scope.GuestScope`):
the search is narrowed where the filters can say it (one session, one concept, the time
window), every moment found or shown around a hit is checked against the whole scope, and
so is every item of a session (task, pending item, decision). Without a scope nothing is
narrowed."""

from __future__ import annotations

from typing import Any

from ..errors import Forbidden
from ..model import Moment, normalize_concept
from ..privacy.guest_scope import GuestScope
from ..search.slice import SliceItem
from .checks import MAX_SEARCH_LIMIT

#: How many more hits a narrowed search asks for, as some are dropped after it.
WIDEN = 4


class Within:
    """The scope of one slice call (``scope`` None: everything), with the session asked."""

    def __init__(self, scope: GuestScope | None, session: str | None) -> None:
        self.scope, self.session = scope, session
        if scope is not None and scope.sessions and session not in (None, *scope.sessions):
            raise Forbidden(
                f"slice: session {session} is outside this guest token's scope "
                f"({scope.describe()}); ask without a session or for one of those"
            )

    def budget(self, asked: int) -> int:
        cap = None if self.scope is None else self.scope.max_budget_tokens
        return asked if cap is None else min(asked, cap)

    def pool(self, pool: int) -> int:
        narrows = self.scope is not None and self.scope.narrows
        return min(MAX_SEARCH_LIMIT, pool * WIDEN) if narrows else pool

    def filters(self) -> dict[str, Any]:
        """The search's own filters for what they can say of the scope."""
        found: dict[str, Any] = {"session": self.session}
        scope = self.scope
        if scope is None:
            return found
        if self.session is None and len(scope.sessions) == 1:
            found["session"] = scope.sessions[0]
        if len(scope.concepts) == 1:
            found["concept"] = scope.concepts[0]
        return found | {"since": scope.since, "until": scope.until}

    def admits(self, moment: Moment) -> bool:
        scope = self.scope
        if scope is None:
            return True
        if scope.sessions and moment.session not in scope.sessions:
            return False
        if not scope.admits_time(moment.timestamp):
            return False
        held = {normalize_concept(c) for c in moment.metadata.concepts}
        return not scope.concepts or bool(held & set(scope.concepts))

    def admits_item(self, item: SliceItem) -> bool:
        """A session's task, pending item or decision (moments are checked by
        :meth:`admits` before they reach the slice)."""
        scope = self.scope
        if scope is None or item.kind in ("moment", "context"):
            return True
        if scope.sessions and item.session not in scope.sessions:
            return False
        if item.when is not None and not scope.admits_time(item.when):
            return False
        return scope.admits_text(item.text)
