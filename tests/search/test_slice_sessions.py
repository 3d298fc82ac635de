"""A slice's items sit under their own session (issue 43, item 7): each session's task
line heads its items, whatever order the hits came in."""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

from agent_notebook import Notebook
from agent_notebook.core.tokens import CharEstimate
from agent_notebook.search.slice import build_slice
from agent_notebook.storage import SqliteBackend

FILLER = ["The weather was grey.", "We had coffee.", "Nothing else happened.", "Bye for now."]


def test_slice_items_are_grouped_by_their_own_session(tmp_path: Path) -> None:
    nb = Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=None)
    trip, _ = nb.record_in_new_session(
        "Trip",
        [
            {"text": "The Lyon train is booked."},
            *({"text": t} for t in FILLER),
            {"text": "The hotel in Lyon is near the station."},
        ],
    )
    museum, _ = nb.record_in_new_session("Museums", [{"text": "The Lyon museum opens at ten."}])
    found_hits = nb.search("Lyon", mode="lexical", limit=10)
    by_session = {h.moment.session: h for h in found_hits}
    trip_hits = [h for h in found_hits if h.moment.session == trip.id]
    assert len(trip_hits) == 2 and museum.id in by_session
    hits = [trip_hits[0], by_session[museum.id], trip_hits[1]]  # back and forth between them
    found = build_slice(
        "Lyon",
        hits,
        budget_tokens=4000,
        audience="guest",
        counter=CharEstimate(),
        session_of=nb.get_session,
        neighbours_of=lambda m: nb.turns_around([m]).get(m.id, []),
    )
    runs = [
        (session, [i.kind for i in items])
        for session, items in groupby(found.items, key=lambda i: i.session)
    ]
    assert [session for session, _ in runs] == [trip.id, museum.id], found.render()
    assert all(kinds[0] == "task" and "task" not in kinds[1:] for _, kinds in runs)
    rendered = found.render()
    assert rendered.index("The hotel in Lyon") < rendered.index(f"session:{museum.id}]")
