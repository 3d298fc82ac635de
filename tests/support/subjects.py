"""Maya's story, for the tests of ``about`` on every front end (issue 39, item 6): she works
at Tesco, starts at Monzo in a later session (her name in lower case there), then tells a
story about her old job; Bo gives another budget than hers (a conflict) and says where she
moved; the owner says where they live. Sessions days apart."""

from __future__ import annotations

from typing import Any

#: (session task, moments as ``record`` takes them).
SESSIONS: list[tuple[str, list[dict[str, Any]]]] = [
    (
        "May planning",
        [
            {"text": "I work at Tesco as a cashier.", "speaker": "Maya"},
            {"text": "My budget is $2,000.", "speaker": "Maya"},
            {"text": "The budget is $3,000.", "speaker": "Bo"},
            {"text": "I live in York.", "role": "user"},
        ],
    ),
    # her name spelled otherwise in a later session: the same person (the rules link it)
    ("June catch-up", [{"text": "Big news: I've started at Monzo.", "speaker": "maya"}]),
    (
        "June stories",
        [
            {"text": "Back in 2019 I worked at Tesco.", "speaker": "Maya"},
            {"text": "Maya moved to Leeds.", "speaker": "Bo"},
        ],
    ),
]
#: When each session's moments were said (one a minute from there).
DAYS = ["2026-05-01", "2026-06-01", "2026-06-10"]


def moments_of(index: int) -> list[dict[str, Any]]:
    """The moments of session ``index`` with their timestamps."""
    return [
        {**m, "timestamp": f"{DAYS[index]}T10:0{n}:00Z"} for n, m in enumerate(SESSIONS[index][1])
    ]


def fill(nb: Any) -> list[str]:
    """Record Maya's story in ``nb`` (a :class:`~agent_notebook.Notebook`), a session a
    day; the moments' texts, in order, map to their ids as ``m_1``… ."""
    from datetime import datetime

    for index, (task, _) in enumerate(SESSIONS):
        started = datetime.fromisoformat(f"{DAYS[index]}T10:00:00+00:00")
        s = nb.start_session(task, started=started).id
        nb.record_many(s, moments_of(index))
    return [m["text"] for _, moments in SESSIONS for m in moments]
