"""The in-process backends (memory, YAML) rank lexical matches as SQLite's FTS5 ``bm25()``
does: its idf, ``log((N - n + 0.5) / (n + 0.5))`` floored at 1e-6, on the terms SQLite
chooses (issue 16: with the ``log(1 + ...)`` idf of other BM25s a word most moments have
still weighed, and a LoCoMo answer ranked 16th on memory and YAML but 9th on SQLite)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.ingest import parse_file
from agent_notebook.storage import MomentFilter
from tests.support.backends import make_backend
from tests.support.locomo import locomo_file

#: "cat" is in most moments (FTS5 weighs it almost nothing), "sunrise" in one, long one.
MOMENTS = [
    "cat cat cat cat cat cat",
    "We watched the sunrise from the long trail above the lake with all of our friends, "
    "then walked down past the old mill and the bakery to the station for the first train",
    "The cat sleeps",
    "A cat and a dog",
    "My cat likes fish",
    "Rain all day",
]
QUERIES = ["cat sunrise", "the cat", "sunrise over the lake", "dog fish", "rain"]


def ranked(nb: Notebook, query: str) -> list[tuple[str, float]]:
    return nb.backend.search_text(query, MomentFilter(), 10)


@pytest.mark.parametrize("kind", ["memory", "yaml"])
def test_a_word_most_moments_have_weighs_as_little_as_in_fts5(kind: str, tmp_path: Path) -> None:
    notebooks = {}
    for name in ("sqlite-file", kind):
        nb = Notebook(make_backend(name, tmp_path / name), embedder=None)
        sid = nb.start_session("made up").id
        for text in MOMENTS:
            nb.record(sid, text, speaker="Ana")
        notebooks[name] = nb
    try:
        sqlite, other = notebooks["sqlite-file"], notebooks[kind]
        # the rare word wins (the log(1 + ...) idf put the six cats first)
        assert [m for m, _ in ranked(sqlite, "cat sunrise")][:2] == ["m_2", "m_1"]
        assert [m for m, _ in ranked(other, "cat sunrise")][:2] == ["m_2", "m_1"]
        for query in QUERIES:
            want, got = ranked(sqlite, query), ranked(other, query)
            assert [m for m, _ in got] == [m for m, _ in want], query
            assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-6)
    finally:
        for nb in notebooks.values():
            nb.close()


@pytest.mark.slow
def test_the_lexical_top_10_of_memory_and_sqlite_agree_on_a_locomo_conversation(
    tmp_path: Path,
) -> None:
    data = json.loads(locomo_file().read_text(encoding="utf-8"))[:1]
    subset = tmp_path / "locomo-subset.json"  # a temporary file, never in the repository
    subset.write_text(json.dumps(data), encoding="utf-8")
    notebooks = [
        Notebook(make_backend(kind, tmp_path / kind), embedder=None)
        for kind in ("sqlite-file", "memory")
    ]
    try:
        for nb in notebooks:
            nb.ingest(parse_file(subset))
        sqlite, memory = notebooks
        questions = [qa["question"] for qa in data[0]["qa"]]
        assert len(questions) > 100
        for question in questions:
            want = [m for m, _ in ranked(sqlite, question)]
            assert [m for m, _ in ranked(memory, question)] == want, question
    finally:
        for nb in notebooks:
            nb.close()
