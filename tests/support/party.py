"""A party planned over five days, one session a day (issue 39): the venue and the cake
change, the date is decided once, and a question asked twice is settled by a decision; for
the tests of the audit log across sessions (``tests/notebook/test_facts.py``) and of what
survives a copy of the notebook (``tests/notebook/test_facts_carried.py``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

#: Which day (0 to 4) each turn is said, who says it and what.
TURNS = [
    (0, "Ana", "Let's go with Lakeside Pavilion for the venue."),
    (0, "Ben", "Should we invite Uncle Raj?"),
    (1, "Ana", "We decided the party is on Saturday 14 November."),
    (1, "Ben", "Should we invite Uncle Raj?"),
    (2, "Ben", "Let's order the chocolate cake from Dolce."),
    (3, "Ana", "Scratch that, let's book Casa Lucia for the venue instead."),
    (4, "Ben", "We decided to invite Uncle Raj, he would be hurt otherwise."),
    (4, "Ana", "Let's order the lemon cake from Dolce instead."),
]
#: The decisions that stand at the end, as the audit log words them.
FINAL = [
    "book Casa Lucia for the venue instead",
    "invite Uncle Raj, he would be hurt otherwise",
    "order the lemon cake from Dolce instead",
    "the party is on Saturday 14 November",
]
#: The decisions a later one replaced, each with the turn that replaced it.
REPLACED = {
    "go with Lakeside Pavilion for the venue": TURNS[5][2],
    "order the chocolate cake from Dolce": TURNS[7][2],
}
#: The question asked twice (one item), and the turn that settled it.
QUESTION = ("Should we invite Uncle Raj?", TURNS[6][2])
T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def plan_party(nb: Any) -> list[str]:
    """Record the plan in ``nb`` (a :class:`~agent_notebook.Notebook`), a session a day;
    returns the sessions' ids, the first day's first."""
    sessions: dict[int, str] = {}
    for day, who, text in TURNS:
        when = T0 + timedelta(days=day)
        if day not in sessions:
            sessions[day] = nb.start_session(f"Party, day {day + 1}", started=when).id
        nb.record(sessions[day], text, speaker=who, timestamp=when)
    return list(sessions.values())
