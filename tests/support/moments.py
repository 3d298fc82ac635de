"""One way to make a moment for the storage tests: numbered, in one session, at one time."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_notebook.model import Moment

WHEN = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


SESSION = "s_2026-03-01_001"


def moment(number: int, text: str, concepts: list[str]) -> Moment:
    return Moment.model_validate(
        {
            "id": f"m_{number}",
            "session": SESSION,
            "timestamp": WHEN,
            "content": {"text": text},
            "metadata": {"concepts": concepts},
        }
    )
