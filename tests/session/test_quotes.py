"""Cut session-notebook text keeps quotes of the conversation as references, losslessly."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_notebook import Notebook
from agent_notebook.session.quotes import MIN_QUOTE, compress, expand

SOURCES = {
    3: "Let's update api/routes.ts:118 and then cancel the vegetarian outage before Friday.",
    4: "Summary: the cache is revised, the benchmark waits for Priya, next check on Wednesday.",
}


def test_quotes_become_references_and_come_back_exactly() -> None:
    text = (
        "- 2026-11-30 23:10 user: Let's update api/routes.ts:118 and then cancel the veg…\n"
        "- (turn 1) Summary: the cache is revised, the benchmark waits for Priya, next check"
        " on Wednesday. And a note of my own."
    )
    packed = compress(text, SOURCES)
    assert packed.count("⟦m_") == 2 and len(packed) < len(text) / 2
    assert "2026-11-30 23:10 user: ⟦m_3@0+" in packed and "And a note of my own." in packed
    assert expand(packed, SOURCES.get) == text


def test_short_quotes_and_bracketed_text_stay_literal() -> None:
    short = "- cancel the vegetarian outage"
    assert len(short) < MIN_QUOTE and compress(short, SOURCES) == short
    odd = "⟦not a reference⟧ " + SOURCES[4]
    assert compress(odd, SOURCES) == odd


def test_a_redacted_quote_stays_redacted() -> None:
    packed = compress("- " + SOURCES[4], SOURCES)
    assert expand(packed, {4: ""}.get) == "- [quote of m_4: redacted or deleted]"
    assert expand(packed, {}.get) == "- [quote of m_4: redacted or deleted]"


words = st.sampled_from(["the", "cache", "Priya", "m_1", "⟦", "é", "report", "\n", " ", "…"])


@given(
    st.lists(st.lists(words, max_size=40).map(" ".join), min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 300), st.integers(0, 120)), max_size=6),
    st.text(max_size=80),
)
def test_any_text_round_trips(
    texts: list[str], cuts: list[tuple[int, int, int]], noise: str
) -> None:
    sources = {i + 1: " ".join(t * 3 for t in texts[i : i + 1]) for i in range(len(texts))}
    pieces = [noise]
    for which, start, length in cuts:
        source = sources.get(which + 1, "")
        pieces.append(source[start : start + length])
    text = "|".join(pieces)
    assert expand(compress(text, sources), sources.get) == text


@pytest.mark.slow
def test_chat_cuts_do_not_store_the_conversation_twice(tmp_path: Path) -> None:
    """The deterministic updater's Worklog quotes every message; its cuts are references."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import HumanMessage

    from agent_notebook.chat import build_chat_graph

    answers = [f"(turn {i}) " + SOURCES[4] + f" Then step {i} of the plan." for i in range(40)]
    with Notebook.open(tmp_path / "home", background_embedding=False) as nb:
        graph = build_chat_graph(nb, model=FakeListChatModel(responses=answers))
        thread = {"configurable": {"thread_id": "t1"}}
        for i in range(40):
            text = f"(turn {i}) " + SOURCES[3] + " " + "Please also check the numbers. " * 8
            graph.invoke({"messages": [HumanMessage(text)]}, thread)
        nb.drain()
        cuts = [m for m in nb.moments() if m.speaker == "session-notebook"]
        assert cuts, "the Worklog should have overflowed"
        notes = nb.session_notebook("t1").sync
        for cut in cuts:
            assert "⟦m_" in cut.content.text
            whole = notes.fetch_cut(f"moment {cut.id}")
            assert "⟦" not in whole and len(whole) > len(cut.content.text)
        quoted = sum(len(notes.fetch_cut(f"moment {c.id}")) for c in cuts)
        stored = sum(len(c.content.text) for c in cuts)
        assert stored < quoted / 2
