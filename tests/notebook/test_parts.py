"""The facade's named parts (``nb.facts``, ``nb.archive``, ``nb.transfer``, ``nb.vectors``,
``nb.langgraph``) and the flat names kept as their aliases for a release; a search's results
word their own weak-match hint for every front end."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.notebook.aliases import Alias
from agent_notebook.storage import MemoryBackend

ALIASES = sorted(name for name, value in vars(Notebook).items() if isinstance(value, Alias))


def test_the_flat_names_of_the_moved_methods_are_all_aliases() -> None:
    moved = {"compact", "conflicts", "decision_log", "export_file", "import_from", "reindex"}
    assert moved <= set(ALIASES)


@pytest.mark.parametrize("name", ALIASES)
def test_an_alias_is_its_parts_method_with_its_signature(name: str, tmp_path: Path) -> None:
    alias = vars(Notebook)[name]
    with Notebook(MemoryBackend(), home=tmp_path, embedder=None) as nb:
        bound = getattr(nb, name)
        part = getattr(nb, alias.part)
        assert bound == getattr(part, alias.method.__name__)
        assert bound.__self__ is part
        assert inspect.signature(bound) == inspect.signature(getattr(part, bound.__name__))
    assert alias.method.__doc__ and alias.method.__doc__.strip() in (
        Notebook.__dict__[name].__doc__ or ""
    )


def test_the_parts_and_their_aliases_do_the_same(tmp_path: Path) -> None:
    with Notebook(MemoryBackend(), home=tmp_path, embedder=None) as nb:
        s = nb.start_session("Plan")
        nb.decide(s.id, "Take the train", why="faster")
        assert nb.facts.decision_log() == nb.decision_log()
        assert [d.what for d in nb.facts.decision_log(s.id)] == ["Take the train"]
        assert nb.archive.count() == nb.archived_count() == 0
        assert nb.archive.root == nb.archive_dir == tmp_path / "archive"
        assert nb.langgraph.store is nb.store


def test_a_search_that_finds_nothing_good_enough_says_how_to_widen_it(tmp_path: Path) -> None:
    with Notebook(MemoryBackend(), home=tmp_path, embedder=None) as nb:
        s = nb.start_session("Trip")
        nb.record(s.id, "Book the train to Lyon")
        found = nb.search("Lyon")
        assert [h.moment.content.text for h in found] == ["Book the train to Lyon"]
        assert found.hint() is None  # something matched
        nothing = nb.search("Berlin")
        assert list(nothing) == []
        hint = nothing.hint("--min-score")
        assert hint is not None and "Berlin" in hint and "--min-score 0" in hint
        assert nb.search("Berlin", min_score=0).hint() is None  # no cut, nothing to widen
