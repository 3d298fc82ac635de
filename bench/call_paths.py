"""The call path of ``Notebook.record`` and ``Notebook.ingest`` (issue 38): which modules of
the package a call goes through, in order of first visit, and how many times it comes back
into the facade (``notebook/facade.py``) from a part below it.

    .venv/bin/python bench/call_paths.py

Run it on two checkouts (``PYTHONPATH=src`` in each) to compare a layout with another; it
times nothing. The notebook is in memory, lexical only, so no model is loaded.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from agent_notebook import Notebook
from agent_notebook.ingest import parse_file
from agent_notebook.storage import MemoryBackend

PACKAGE = "agent_notebook"
FACADE = "agent_notebook.notebook.facade"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trip.jsonl"
SKIP = ("agent_notebook.model", "agent_notebook.core", "agent_notebook.errors")


def traced(run: Callable[[], object]) -> tuple[list[str], int]:
    """The modules of the package ``run`` called into (first visits, in order; the data
    model, core helpers and errors left out) and the returns into the facade from below."""
    visited: dict[str, None] = {}
    returns = 0
    depth_in_facade = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal returns, depth_in_facade
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(PACKAGE) or module.startswith(SKIP):
            return
        visited.setdefault(module.removeprefix(PACKAGE + "."), None)
        caller = frame.f_back
        caller_module = caller.f_globals.get("__name__", "") if caller is not None else ""
        if module == FACADE and caller_module.startswith(PACKAGE) and caller_module != FACADE:
            returns += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return list(visited), returns


def main() -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        Notebook(MemoryBackend(), home=Path(tmp), embedder=None) as nb,
    ):
        session = nb.start_session("Trip")
        nb.record(session.id, "warm-up")  # imports done before the trace
        plan = parse_file(EXAMPLE)
        for name, run in (
            ("record", lambda: nb.record(session.id, "Book the 09:04 TGV")),
            ("ingest", lambda: nb.ingest(plan)),
        ):
            modules, returns = traced(run)
            print(f"{name}: {len(modules)} modules, {returns} return(s) into the facade")
            print("  " + " -> ".join(modules))


if __name__ == "__main__":
    main()
