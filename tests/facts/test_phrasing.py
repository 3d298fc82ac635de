"""Chat as people write it (issue 39, item 2), as minimal pairs: the phrasing families the
rules read, each beside a near miss that must yield nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_notebook.facts import FactEngine, Statement

T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def opened(text: str) -> list[str]:
    found = FactEngine().observe(Statement("m_1", text, T0, "user", "Ana"))
    return [p.what for p in found.pending]


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("We still need to book the venue.", "book the venue"),
        ("Remind me to call Dad on Sunday.", "call Dad on Sunday"),
        ("Don't forget to bring the cake!", "bring the cake"),
        ("Someone needs to tell Raj about the date.", "tell Raj about the date"),
        ("Oh and I have to renew my passport.", "renew my passport"),
    ],
)
def test_an_obligation_or_a_reminder_opens_an_item(text: str, what: str) -> None:
    assert [w.casefold() for w in opened(text)] == [what.casefold()]


@pytest.mark.parametrize(
    "text",
    [
        "We don't need to book anything.",
        "I never have to wait long there.",
        "I need to be honest with you.",
        "If we need to book, I'll do it.",
    ],
)
def test_a_near_miss_opens_nothing(text: str) -> None:
    assert opened(text) == []
