"""Bounded threads (graph.compaction) and the summarizers that fold what leaves them."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.message import add_messages

from agent_notebook.chat.compaction import (
    CompactionPlan,
    message_tokens,
    plan_compaction,
    removals,
    tool_pairs_intact,
    turn_boundaries,
)
from agent_notebook.compaction.summarize import (
    ExtractiveSummarizer,
    LlmSummarizer,
    Summarizer,
    SummaryFailed,
    messages_as_texts,
    strip_think,
)
from agent_notebook.core.tokens import DEFAULT_COUNTER
from agent_notebook.errors import InvalidInput
from tests.support.chat_models import RecordingModel

# --- conversations -------------------------------------------------------------------------

_sizes = st.integers(0, 240)


@st.composite
def conversations(draw: st.DrawFn, *, messy: bool = False) -> list[BaseMessage]:
    """Human turns, AI messages with 0-3 tool calls each followed by their results, sometimes
    an AI answer, sometimes system messages; the last AI message may still wait for results.
    ``messy`` adds orphan tool results and calls never answered."""
    ids = itertools.count()
    messages: list[BaseMessage] = []
    if draw(st.booleans()):
        messages.append(SystemMessage("s" * draw(_sizes), id=f"sys{next(ids)}"))
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.integers(0, 9)) == 0:
            messages.append(SystemMessage("s" * draw(_sizes), id=f"sys{next(ids)}"))
        messages.append(HumanMessage("h" * draw(st.integers(0, 400)), id=f"h{next(ids)}"))
        for _ in range(draw(st.integers(0, 4))):
            calls = [
                {"name": f"tool{i}", "args": {"q": "a" * draw(_sizes)}, "id": f"call{next(ids)}"}
                for i in range(draw(st.integers(0, 3)))
            ]
            messages.append(AIMessage("t" * draw(_sizes), tool_calls=calls, id=f"ai{next(ids)}"))
            unanswered = messy and draw(st.integers(0, 5)) == 0
            for call in [] if unanswered else calls:
                status = draw(st.sampled_from(["success", "error"]))
                messages.append(
                    ToolMessage(
                        "r" * draw(_sizes),
                        tool_call_id=call["id"],
                        status=status,
                        id=f"t{next(ids)}",
                    )
                )
            if messy and draw(st.integers(0, 5)) == 0:
                orphan = ToolMessage("o" * draw(_sizes), tool_call_id="gone", id=f"o{next(ids)}")
                messages.append(orphan)
        if draw(st.booleans()):
            messages.append(AIMessage("a" * draw(_sizes), id=f"ai{next(ids)}"))
    if draw(st.booleans()) and messages:  # a last AI message whose calls are still pending
        call = {"name": "pending", "args": {}, "id": f"call{next(ids)}"}
        messages.append(AIMessage("", tool_calls=[call], id=f"ai{next(ids)}"))
    return messages


def _positions(part: Sequence[BaseMessage], messages: Sequence[BaseMessage]) -> list[int]:
    where = {id(m): i for i, m in enumerate(messages)}
    return [where[id(m)] for m in part]


def _pinned(messages: Sequence[BaseMessage]) -> set[int]:
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    systems = {i for i, m in enumerate(messages) if isinstance(m, SystemMessage)}
    return systems | set(humans[-1:])


def _tokens(messages: Sequence[BaseMessage]) -> int:
    return sum(message_tokens(m, DEFAULT_COUNTER) for m in messages)


def _check_partition(messages: list[BaseMessage], plan: CompactionPlan) -> None:
    """Nothing lost, nothing duplicated, order kept; what goes is a prefix of the unpinned."""
    removed, kept = _positions(plan.remove, messages), _positions(plan.keep, messages)
    assert removed == sorted(removed) and kept == sorted(kept)
    assert sorted(removed + kept) == list(range(len(messages)))
    pinned = _pinned(messages)
    assert not pinned & set(removed)
    unpinned = [i for i in range(len(messages)) if i not in pinned]
    assert unpinned[: len(removed)] == removed
    pinned_before_cut = any(i < max(removed, default=-1) for i in pinned)
    assert (plan.remove + plan.keep == messages) == (not pinned_before_cut)
    assert plan.tokens_before == _tokens(messages)
    assert plan.tokens_after == _tokens(plan.keep)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.integers(0, 3000), st.sampled_from([0.3, 0.5, 0.8, 1.0]))
def test_plan_keeps_tool_pairs_and_the_newest_request(
    messages: list[BaseMessage], budget: int, ratio: float
) -> None:
    assert tool_pairs_intact(messages)
    plan = plan_compaction(messages, budget, target_ratio=ratio)
    total = _tokens(messages)
    assert (plan is None) == (total <= budget)
    if plan is None:
        return
    _check_partition(messages, plan)
    assert tool_pairs_intact(plan.keep)
    humans = [m for m in messages if isinstance(m, HumanMessage)]
    if humans:
        newest = humans[-1]
        assert any(m is newest for m in plan.keep)
        assert newest.content == "h" * len(str(newest.content))
    pinned = _tokens([messages[i] for i in _pinned(messages)])
    if pinned <= budget:  # possible given rule (b): then the plan fits
        assert plan.tokens_after <= budget
        assert plan.remove
    if pinned <= int(budget * ratio):  # and reaches the target (hysteresis)
        assert plan.tokens_after <= int(budget * ratio)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(messy=True), st.integers(0, 3000))
def test_plan_on_messy_threads_never_splits_what_belongs_together(
    messages: list[BaseMessage], budget: int
) -> None:
    plan = plan_compaction(messages, budget)
    if plan is None:
        return
    _check_partition(messages, plan)
    kept = {id(m) for m in plan.keep}
    made_at: dict[str, BaseMessage] = {}
    for j, m in enumerate(messages):
        if isinstance(m, AIMessage):
            made_at.update((c["id"], m) for c in m.tool_calls if c["id"])
        elif isinstance(m, ToolMessage):
            call = made_at.get(m.tool_call_id)
            if call is not None:  # a result and its call stay or go together
                assert (id(call) in kept) == (id(m) in kept)
            elif id(m) in kept and j > 0:  # an orphan stays with the message before it
                assert id(messages[j - 1]) in kept


# --- edge cases ----------------------------------------------------------------------------


def _turn(i: int, size: int = 100) -> list[BaseMessage]:
    return [HumanMessage("q" * size, id=f"h{i}"), AIMessage("a" * size, id=f"a{i}")]


def _tool_step(i: int, calls: int = 1, size: int = 100) -> list[BaseMessage]:
    made = [
        {"name": "grep", "args": {"pattern": "x" * size}, "id": f"c{i}_{k}"} for k in range(calls)
    ]
    results: list[BaseMessage] = [
        ToolMessage("r" * size, tool_call_id=c["id"], id=f"t{i}_{k}") for k, c in enumerate(made)
    ]
    return [AIMessage("", tool_calls=made, id=f"a{i}"), *results]


def test_messages_that_fit_need_no_plan() -> None:
    messages = _turn(0) + _turn(1)
    assert plan_compaction(messages, _tokens(messages)) is None
    assert plan_compaction([], 0) is None
    assert plan_compaction(messages, _tokens(messages) - 1) is not None


def test_a_giant_newest_human_message_stays_with_what_follows_it() -> None:
    giant = HumanMessage("g" * 40_000, id="giant")
    after = _tool_step(9)
    messages = [*_turn(0), *_turn(1), giant, *after]
    plan = plan_compaction(messages, 1000)
    assert plan is not None
    assert plan.remove == messages[:4]
    assert plan.keep == [giant, *after]
    assert plan.keep[0] is giant and giant.content == "g" * 40_000
    assert plan.tokens_after > 1000  # cannot fit; everything from the request on is kept


def test_a_long_run_of_tool_calls_is_cut_between_steps() -> None:
    request = HumanMessage("fix the failing test in auth/middleware.py:42", id="h")
    steps = [m for i in range(30) for m in _tool_step(i, calls=1 + i % 3)]
    messages = [*_turn(0), request, *steps]
    plan = plan_compaction(messages, 2000)
    assert plan is not None
    assert plan.keep[0] is request
    assert tool_pairs_intact(plan.keep)
    assert plan.tokens_after <= 1000
    kept_steps = plan.keep[1:]
    assert isinstance(kept_steps[0], AIMessage) and kept_steps[0].tool_calls
    assert kept_steps == messages[len(messages) - len(kept_steps) :]
    assert plan_compaction(plan.keep, 2000) is None  # hysteresis: room for the next steps


def test_parallel_calls_are_never_parted_from_their_results() -> None:
    messages = [HumanMessage("go", id="h"), *_tool_step(0, calls=3, size=400)]
    assert turn_boundaries(messages) == [0, 1, 5]
    plan = plan_compaction(messages, 500)
    assert plan is not None and plan.remove == messages[1:] and plan.keep == messages[:1]


def test_system_messages_are_never_removed() -> None:
    first = SystemMessage("you are helpful", id="s0")
    middle = SystemMessage("the user switched to French", id="s1")
    messages = [first, *_turn(0, 400), *_turn(1, 400), middle, *_turn(2, 400), *_turn(3, 40)]
    plan = plan_compaction(messages, 600)
    assert plan is not None
    assert first in plan.keep and middle in plan.keep
    assert all(not isinstance(m, SystemMessage) for m in plan.remove)
    assert plan.keep == [first, middle, *messages[6:]]  # down to half the budget


def test_the_cut_moves_to_the_start_of_a_user_turn() -> None:
    messages = [*_turn(0, 40), *_tool_step(1, size=40), AIMessage("x" * 400, id="long")]
    messages += [*_turn(2, 40)]
    plan = plan_compaction(messages, 150, target_ratio=0.9)
    assert plan is not None
    assert isinstance(plan.keep[0], HumanMessage)


def test_an_orphan_tool_result_stays_with_the_message_before_it() -> None:
    orphan = ToolMessage("late result", tool_call_id="unknown", id="orphan")
    messages = [*_turn(0), AIMessage("b" * 400, id="b"), orphan, *_turn(1)]
    assert 3 not in turn_boundaries(messages)
    plan = plan_compaction(messages, 150)
    assert plan is not None and orphan in plan.remove and messages[2] in plan.remove


def test_invalid_budgets_are_refused() -> None:
    with pytest.raises(InvalidInput):
        plan_compaction(_turn(0), -1)
    for ratio in (0.0, 1.5):
        with pytest.raises(InvalidInput):
            plan_compaction(_turn(0), 10, target_ratio=ratio)


def test_tool_call_arguments_count() -> None:
    bare = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c"}])
    heavy = AIMessage("", tool_calls=[{"name": "f", "args": {"x": "y" * 400}, "id": "c"}])
    assert message_tokens(heavy, DEFAULT_COUNTER) >= message_tokens(bare, DEFAULT_COUNTER) + 100


def test_tool_pairs_intact() -> None:
    step = _tool_step(0)
    assert tool_pairs_intact(step) and tool_pairs_intact(step[:1])  # the last call may wait
    assert not tool_pairs_intact(step[1:])  # a result without its call
    assert not tool_pairs_intact([*step[:1], HumanMessage("?"), AIMessage("x")])


def test_removals_drop_the_plan_from_a_thread_state() -> None:
    messages = [*_turn(0, 400), *_turn(1, 400), *_turn(2, 10)]
    plan = plan_compaction(messages, 300)
    assert plan is not None
    markers = removals(plan)
    assert all(isinstance(r, RemoveMessage) for r in markers)
    assert add_messages(messages, markers) == plan.keep  # type: ignore[arg-type]
    anonymous = CompactionPlan([HumanMessage("no id")], [], 10, 0)
    with pytest.raises(InvalidInput, match="no id"):
        removals(anonymous)


# --- summarizers ---------------------------------------------------------------------------

SOURCES = messages_as_texts(
    [
        HumanMessage(
            "The login fails with a 401 after the token refresh. Please look at "
            "auth/middleware.py:42 where verify_token is called. Thanks!"
        ),
        AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "auth"}, "id": "c1"}]),
        ToolMessage("def verify_token(t):\n    return jwt.decode(t, KEY)", tool_call_id="c1"),
        ToolMessage("permission denied", tool_call_id="c2", status="error"),
        AIMessage(
            "The bug is that verify_token ignores clock skew. I fixed it by adding leeway=30. "
            "See moment m_12 for the earlier discussion. Tests pass now."
        ),
        HumanMessage("ok thanks"),
    ]
)


def test_messages_as_texts() -> None:
    assert SOURCES[0].startswith("user: The login fails")
    assert SOURCES[1] == 'assistant called read_file({"path": "auth"})'
    assert SOURCES[2].startswith("tool result: def verify_token")
    assert SOURCES[3] == "tool result (error): permission denied"
    assert SOURCES[4].startswith("assistant: The bug")
    assert messages_as_texts([SystemMessage("be brief")]) == ["system: be brief"]


def test_extractive_keeps_identifiers_within_budget() -> None:
    summary = ExtractiveSummarizer().summarize(SOURCES, max_tokens=200)
    assert "auth/middleware.py:42" in summary and "m_12" in summary
    assert "ok thanks" not in summary
    for budget in (1, 5, 20, 40, 80, 200):
        out = ExtractiveSummarizer().summarize(SOURCES, previous="old\nolder", max_tokens=budget)
        assert DEFAULT_COUNTER.count(out) <= budget


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(max_size=300), max_size=6),
    st.text(max_size=300),
    st.integers(1, 120),
)
def test_extractive_never_exceeds_max_tokens(texts: list[str], previous: str, budget: int) -> None:
    out = ExtractiveSummarizer().summarize(texts, previous=previous, max_tokens=budget)
    assert DEFAULT_COUNTER.count(out) <= budget


def test_extractive_is_deterministic() -> None:
    runs = {ExtractiveSummarizer().summarize(SOURCES, max_tokens=m) for m in (60, 60, 60)}
    assert len(runs) == 1


def test_extractive_keeps_previous_first_and_trims_its_oldest_end() -> None:
    previous = "2024-05-01: the user set up the project.\n2024-05-02: CI moved to GitHub Actions."
    out = ExtractiveSummarizer().summarize(SOURCES, previous=previous, max_tokens=200)
    assert out.startswith(previous + "\n")
    long_previous = "\n".join(f"day {i}: decided on option_{i}." for i in range(100))
    out = ExtractiveSummarizer().summarize(SOURCES, previous=long_previous, max_tokens=120)
    assert out.startswith("day ") and "option_99" in out and "option_0." not in out
    assert "m_12" in out or "auth/middleware.py:42" in out  # new lines get room
    assert (
        ExtractiveSummarizer()
        .summarize([], previous=long_previous, max_tokens=30)
        .endswith("day 99: decided on option_99.")
    )
    with pytest.raises(InvalidInput):
        ExtractiveSummarizer().summarize(SOURCES, max_tokens=0)


def _plain_greedy(
    summarizer: ExtractiveSummarizer, texts: list[str], max_tokens: int
) -> list[tuple[int, str]]:
    """The lines of the greedy choice that scores every candidate again each round (what
    :meth:`ExtractiveSummarizer.pick` rescores only where coverage changed); for texts
    without a role prefix, whose lines fit ``max_tokens`` as they are."""
    import math
    from collections import Counter

    from agent_notebook.compaction.summarize import NOVELTY, _sentences, _units

    count = summarizer.counter.count
    rows: list[tuple[str, dict[str, float], float, int]] = []
    weight: dict[str, float] = {}
    texts_with: Counter[str] = Counter()
    for t, text in enumerate(texts):
        here: set[str] = set()
        for sentence, units_of in _sentences(text, max_tokens, summarizer.counter):
            units, value = _units(units_of)
            weight.update({u: weight.get(u, 0.0) + w for u, w in units.items()})
            here.update(units)
            rows.append((sentence, units, value, t))
        texts_with.update(here)
    for u in weight:
        weight[u] *= math.log((len(texts) + 1) / texts_with[u])
    totals = [sum(units.values()) for _, units, _, _ in rows]
    sizes = [count(sentence) + 1 for sentence, *_ in rows]
    candidates = [c for c in range(len(rows)) if totals[c]]
    covered: set[str] = set()
    picked: list[int] = []
    used = 0
    while candidates and used < max_tokens:
        scores: dict[int, float] = {}
        for c in candidates:
            new = {u: w for u, w in rows[c][1].items() if u not in covered}
            if sum(new.values()) >= NOVELTY * totals[c]:
                scores[c] = sum(weight[u] for u in new) * (0.5 + rows[c][2]) / sizes[c] ** 0.5
        if not scores:
            break
        best = max(scores, key=lambda c: (scores[c], -c))
        candidates = [c for c in scores if c != best]
        if used + sizes[best] <= max_tokens:
            picked.append(best)
            used += sizes[best]
            covered.update(rows[best][1])
    lines: dict[int, list[str]] = {}
    for c in sorted(picked):
        lines.setdefault(rows[c][3], []).append(rows[c][0])
    return [(t, " ".join(parts)) for t, parts in sorted(lines.items())]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["auth", "Lyon", "m_12", "token", "the", "v2.1", "Paris"]))
        .map(" ".join)
        .map(lambda s: s + "."),
        min_size=1,
        max_size=12,
    ),
    st.integers(20, 200),
)
def test_extractive_picks_as_the_plain_greedy_choice_does(
    sentences: list[str], budget: int
) -> None:
    """Rescoring only the candidates whose units were just covered picks the same
    sentences as rescoring all of them each round."""
    summarizer = ExtractiveSummarizer()
    texts = [" ".join(sentences[i : i + 3]) for i in range(0, len(sentences), 3)]
    expected = _plain_greedy(summarizer, texts, budget)
    if DEFAULT_COUNTER.count("\n".join(line for _, line in expected)) <= budget:
        assert summarizer.pick(texts, budget) == expected


def test_a_prepared_summarizer_summarizes_alike_without_analysing_again() -> None:
    cold = ExtractiveSummarizer()
    expected = cold.summarize(SOURCES, previous="old", max_tokens=200)
    assert cold.units_made > 0
    warm = ExtractiveSummarizer()
    warm.prepare(SOURCES[:3])
    warm.prepare(SOURCES[3:])
    assert warm.summarize(SOURCES, previous="old", max_tokens=200) == expected
    assert warm.units_made == 0  # every sentence's units came from prepare


def test_llm_summarizer_strips_think_blocks() -> None:
    model = FakeListChatModel(responses=["<think>which ids?</think>\nLogin fixed (m_12)."])
    summarizer = LlmSummarizer(model)
    assert isinstance(summarizer, Summarizer) and summarizer.name == "llm"
    assert summarizer.summarize(SOURCES) == "Login fixed (m_12)."
    assert summarizer.last_fallback_reason is None
    assert strip_think("reasoning</think> answer") == "answer"
    assert strip_think("answer <think>cut off") == "answer"


def test_llm_summarizer_falls_back_on_an_empty_answer() -> None:
    summarizer = LlmSummarizer(FakeListChatModel(responses=["<think>hmm</think>  "]))
    out = summarizer.summarize(SOURCES, max_tokens=200)
    assert out == ExtractiveSummarizer().summarize(SOURCES, max_tokens=200)
    assert summarizer.last_fallback_reason is not None
    assert "empty" in summarizer.last_fallback_reason


def test_llm_summarizer_falls_back_on_a_model_error() -> None:
    summarizer = LlmSummarizer(RecordingModel(error="rate limited"))
    assert "auth/middleware.py:42" in summarizer.summarize(SOURCES, max_tokens=200)
    assert summarizer.last_fallback_reason is not None
    assert "RuntimeError: rate limited" in summarizer.last_fallback_reason
    out = asyncio.run(summarizer.asummarize(SOURCES, max_tokens=200))
    assert "m_12" in out and summarizer.last_fallback_reason is not None
    with pytest.raises(SummaryFailed, match="rate limited"):
        LlmSummarizer(RecordingModel(error="rate limited"), fallback=None).summarize(SOURCES)


def test_llm_summarizer_prompt_has_guidance_previous_and_identifiers() -> None:
    model = RecordingModel(reply="x " * 1000)
    summarizer = LlmSummarizer(model)
    notebook = "## Current State\nFixing the login bug (ticket ABC-123)."
    out = asyncio.run(
        summarizer.asummarize(SOURCES, previous="Earlier: set up CI.", guidance=notebook)
    )
    assert DEFAULT_COUNTER.count(out) <= 400  # a long answer is cut to max_tokens
    prompt = "\n".join(str(m.content) for m in model.seen[0])
    for expected in (notebook, "Earlier: set up CI.", "auth/middleware.py:42", "verbatim"):
        assert expected in prompt
    model.seen.clear()
    assert summarizer.summarize([], previous="kept as is") == "kept as is"
    assert not model.seen  # nothing new: no model call
