"""Everything a backend stores, to check that bad input changed nothing."""

from __future__ import annotations

from typing import Any

from agent_notebook.storage import StorageBackend


def snapshot(backend: StorageBackend) -> dict[str, Any]:
    """Everything the backend holds, as plain data."""
    return {
        "sessions": [s.model_dump() for s in backend.list_sessions()],
        "moments": [m.model_dump() for m in backend.list_moments()],
        "concepts": [c.model_dump() for c in backend.list_concepts()],
        "counters": backend.counters(),
        "count_sessions": backend.count_sessions(),
        "count_moments": backend.count_moments(),
    }
