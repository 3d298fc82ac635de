"""A notebook filled with every kind of record the facade writes, and everything a backend
holds, for the export, import and migration tests."""

from __future__ import annotations

import math
import wave
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from PIL import Image

from agent_notebook import Action, Notebook, TaskStatus
from agent_notebook.storage import StorageBackend

T0 = datetime(2026, 6, 7, 9, 30, tzinfo=UTC)


def contents(backend: StorageBackend) -> dict[str, Any]:
    """Every record a backend holds, its derived indexes and counters."""
    return {
        "sessions": backend.list_sessions(),
        "moments": backend.list_moments(),
        "concepts": backend.list_concepts(),
        "counters": backend.counters(),
        "count_sessions": backend.count_sessions(),
        "count_moments": backend.count_moments(),
        "count_concepts": backend.count_concepts(),
    }


def _clip(path: Path) -> Path:
    """Two seconds of a tone, as WAV."""
    samples = (int(8000 * math.sin(i / 7)) for i in range(32_000))
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16_000)
        out.writeframes(b"".join(s.to_bytes(2, "little", signed=True) for s in samples))
    return path


def _picture(path: Path) -> Path:
    Image.linear_gradient("L").resize((64, 64)).save(path)
    return path


def fill(nb: Notebook) -> None:
    """A notebook using every kind of record the facade writes."""
    assert nb.home is not None
    files = nb.home.parent / "attached"  # files attached to a moment, outside the home
    files.mkdir(exist_ok=True)
    trip = nb.start_session("Plan the trip to Lyon — ünïcödé ✓", started=T0)
    auth = nb.start_session("Ship the auth middleware", started=T0 + timedelta(days=1))
    again = nb.start_session("Lyon, second try", started=T0 + timedelta(days=1, hours=2))

    first = nb.record(trip.id, "Book the train to Lyon for 7 June", speaker="Ana")
    nb.record_many(
        trip.id,
        [
            {"text": "Booked the 7:04 TGV, seat 42", "role": "assistant", "parent": first.id},
            {
                "text": "  multi\nline\n\ttext with trailing space \n",
                "parent": first.id,
                "timestamp": T0 + timedelta(minutes=5),
                "importance": 0.9,
                "decay_rate": 0.5,
                "concepts": ["Lyon", "TGV", "no", "1e3"],
                "retrieval_keys": ["seat 42", "~"],
                "links": ["https://example.org/tgv"],
                "audio_file": str(_clip(files / "a.wav")),
                "image_file": str(_picture(files / "b.png")),
                "source_id": "D1:3",
            },
        ],
    )
    nb.record(
        auth.id,
        "Moved the check to auth/middleware.py:42",
        role="assistant",
        actions=[
            Action(
                tool="edit_file",
                arguments={"path": "auth/middleware.py", "line": 42, "nested": {"n": [1, None]}},
                result={"ok": True, "big": 2**70, "small": 5e-324, "neg": -0.0, "s": "yes"},
            ),
            Action(tool="run_tests", arguments={}, result="3 failed", ok=False),
        ],
    )
    for i in range(12):
        nb.record(again.id, f"Lyon note {i}: remember the deadline on 2026-06-{10 + i}")
    nb.record(trip.id, "Back to the trip: hotel near Part-Dieu?", parent=first.id)

    nb.decide(trip.id, "Take the 7:04 train", why="cheapest", who="guest:hermes")
    nb.decide(auth.id, "Use JWT", why="stateless")
    nb.open_pending(trip.id, "Which hotel?")
    done = nb.open_pending(trip.id, "Seat reservation")
    nb.close_pending(trip.id, done.id, "seat 42")
    esc = nb.escalate(auth.id, "hermes", why="hard", slice="- m_4")
    nb.resolve_escalation(auth.id, esc.id, "use a middleware")
    nb.escalate(auth.id, "claude", why="review")
    nb.link(again.id, trip.id, "follows", note="same trip")
    nb.link(auth.id, first.id)
    nb.link(auth.id, "https://example.org/rfc7519", "reference")
    nb.update_session(trip.id, task_status=TaskStatus.DONE, condensed_history="Booked.\nDone.\n")
    nb.update_session(auth.id, task_status="paused")
