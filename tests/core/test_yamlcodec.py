"""``index.yaml`` is written by hand for speed; any YAML reader must read back what we meant."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_notebook.core.yamlcodec import dump_index

concept_names = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=30)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(concept_names, st.integers(1, 10**6), max_size=5),
    st.dictionaries(concept_names, st.lists(st.integers(1, 10**9), max_size=4), max_size=20),
)
def test_index_reads_back_exactly(counters: dict[str, int], raw: dict[str, list[int]]) -> None:
    concepts = {c: ([f"m_{n}" for n in sorted(ns)], ["s_2026-06-07_001"]) for c, ns in raw.items()}
    text = dump_index(1, 7, counters, concepts)
    for loader in (yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        data = yaml.load(text, Loader=loader)
        assert data["schema_version"] == 1 and data["revision"] == 7
        assert data["counters"] == counters
        assert data["concepts"] == {
            c: {"moments": m, "sessions": s} for c, (m, s) in concepts.items()
        }
