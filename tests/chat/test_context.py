"""The ContextBuilder: items, tags, modes, the token budget, priorities, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_notebook import Notebook
from agent_notebook.chat.context import (
    INSTRUCTION,
    MODES,
    BuiltContext,
    Candidate,
    ContextBuilder,
    Mode,
    fit,
    notebook_summary,
    resolve_modes,
    shorten,
    tail,
)
from agent_notebook.core.tokens import DEFAULT_COUNTER
from agent_notebook.errors import InvalidInput, NotFound
from agent_notebook.session.sections import empty_sections, render
from agent_notebook.storage import MemoryBackend

SESSION_NOTEBOOK = """<session_notebook thread="t1">
## Current State
Comparing train and plane options for Lyon.

## Task Specification
Plan a trip to Lyon on 7 June for two people.

## Worklog
Looked up SNCF timetables. Asked Ana about her dates. Checked hotel prices near Part-Dieu.
Called the hotel. Compared three hotels by price and distance to the station and the old town.
</session_notebook>"""
HISTORY = "Earlier: " + " ".join(f"turn {i} discussed Lyon options at length." for i in range(40))


def _setup(nb: Notebook) -> tuple[str, str]:
    """A session with pending threads, decisions, condensed history and Lyon moments, plus an
    older session with more Lyon moments. Returns (session id, a moment id of the old one)."""
    old = nb.start_session("Earlier trip")
    old_moment = nb.record(old.id, "Lyon has a great food market, Les Halles.", speaker="Ana")
    nb.record(old.id, "The night train to Lyon was cancelled last year.", speaker="Ben")
    s = nb.start_session("Plan the trip")
    nb.record(s.id, "Book the train to Lyon for 7 June. Two tickets.", speaker="Ana")
    nb.open_pending(s.id, "Ask Ben whether he joins the Lyon trip.")
    closed = nb.open_pending(s.id, "Check the weather.")
    nb.close_pending(s.id, closed.id, "sunny")
    for i in range(7):
        nb.decide(
            s.id, f"Decision {i + 1}: travel by train. Planes are slower door to door.", "cost"
        )
    nb.update_session(s.id, condensed_history=HISTORY)
    return s.id, old_moment.id


@pytest.fixture
def nb() -> Notebook:
    return Notebook(MemoryBackend())


def _build(
    nb: Notebook, sid: str, *, budget: int = 100_000, context_config: dict[str, str] | None = None
) -> BuiltContext:
    return ContextBuilder(nb, budget_tokens=budget).build(
        message="Lyon train",
        session_id=sid,
        session_notebook=SESSION_NOTEBOOK,
        context_config=context_config,
    )


def _ids(ctx: BuiltContext) -> list[str]:
    return [item.id for item in ctx.items]


def test_defaults_include_every_kind_in_full_with_tags(nb: Notebook) -> None:
    sid, old_moment = _setup(nb)
    ctx = _build(nb, sid)
    kinds = [item.kind for item in ctx.items]
    assert kinds[:3] == ["session_notebook", "condensed_history", "pending"]
    assert set(kinds) == {"session_notebook", "condensed_history", "pending", "decision", "moment"}
    assert all(item.mode == "full" for item in ctx.items) and ctx.cut == []
    for item in ctx.items:
        assert item.text.startswith(f"[{item.id}]")
        assert item.tokens == DEFAULT_COUNTER.count(item.text)
    assert f"moment:{old_moment}" in _ids(ctx)  # moments of every session
    decisions = [i for i in _ids(ctx) if i.startswith("decision:")]
    assert decisions == [f"decision:d_{n}" for n in (7, 6, 5, 4, 3)]  # the latest five
    pending = next(item for item in ctx.items if item.id == "pending")
    assert "[pending:p_1] Ask Ben" in pending.text and "p_2" not in pending.text  # closed: out
    rendered = ctx.render()
    assert rendered.splitlines()[0] == INSTRUCTION
    assert "[session_notebook]" in rendered and f"[moment:{old_moment}] (" in rendered
    assert ctx.tokens_used == DEFAULT_COUNTER.count(INSTRUCTION) + sum(i.tokens for i in ctx.items)


def test_moment_rendering_has_date_and_speaker(nb: Notebook) -> None:
    s = nb.start_session()
    m = nb.record(s.id, "Lyon is lovely in June.", speaker="Ana")
    ctx = ContextBuilder(nb).build(message="Lyon", session_id=None)
    day = m.timestamp.date().isoformat()
    assert [item.text for item in ctx.items] == [
        f"[moment:{m.id}] ({day}, Ana) Lyon is lovely in June."
    ]


def test_recent_moments_are_skipped(nb: Notebook) -> None:
    sid, old_moment = _setup(nb)
    recent = nb.get_session(sid).context.recent_moments
    assert recent  # the session's own Lyon moment
    moment_ids = [i for i in _ids(_build(nb, sid)) if i.startswith("moment:")]
    assert moment_ids and f"moment:{old_moment}" in moment_ids
    assert not {f"moment:{m}" for m in recent} & set(moment_ids)
    # without a session nothing is skipped
    alone = ContextBuilder(nb).build(message="Lyon train", session_id=None)
    assert {f"moment:{m}" for m in recent} <= set(_ids(alone))


def test_max_moments_counts_after_skipping(nb: Notebook) -> None:
    s = nb.start_session()
    for i in range(6):
        nb.record(s.id, f"Lyon note {i}")
    other = nb.start_session()
    ctx = ContextBuilder(nb, max_moments=3).build(message="Lyon", session_id=other.id)
    assert len([i for i in ctx.items if i.kind == "moment"]) == 3
    nothing = ContextBuilder(nb, max_moments=0).build(message="Lyon", session_id=other.id)
    assert nothing.items == [] and nothing.render() == "" and nothing.tokens_used == 0


def test_context_config_by_id_beats_kind(nb: Notebook) -> None:
    sid, old_moment = _setup(nb)
    mid = f"moment:{old_moment}"
    config = {"moment": "not in context", mid: "summary", "session_notebook": "summary"}
    ctx = _build(nb, sid, context_config=config)
    moments = [item for item in ctx.items if item.kind == "moment"]
    assert [(m.id, m.mode) for m in moments] == [(mid, "summary")]
    cut_moments = [(i, why) for i, why in ctx.cut if i.startswith("moment:")]
    assert cut_moments and all(why == "not in context" for _, why in cut_moments)
    assert mid not in dict(ctx.cut)
    sn = next(item for item in ctx.items if item.id == "session_notebook")
    assert sn.mode == "summary" and "Worklog" not in sn.text and "Current State" in sn.text


def test_not_in_context_is_reported_in_cut(nb: Notebook) -> None:
    sid, _ = _setup(nb)
    config = {"pending": "not in context", "decision": "not in context"}
    ctx = _build(nb, sid, context_config=config)
    assert "pending" not in _ids(ctx) and not any(i.startswith("decision:") for i in _ids(ctx))
    assert ("pending", "not in context") in ctx.cut
    assert sum(why == "not in context" for _, why in ctx.cut) == 6  # pending + 5 decisions


def test_summary_is_shorter_than_full(nb: Notebook) -> None:
    sid, _ = _setup(nb)
    full = {item.id: item for item in _build(nb, sid).items}
    config = dict.fromkeys(
        ["session_notebook", "condensed_history", "pending", "decision", "moment"], "summary"
    )
    short = {item.id: item for item in _build(nb, sid, context_config=config).items}
    assert short.keys() == full.keys()
    for key in ("session_notebook", "condensed_history", "pending", "decision:d_7"):
        assert short[key].mode == "summary" and short[key].tokens < full[key].tokens, key
        assert short[key].text.startswith(f"[{key}]")
    assert short["condensed_history"].text.endswith(HISTORY[-40:])  # the latest part
    assert short["decision:d_7"].text.endswith("Decision 7: travel by train.")


def test_invalid_mode_raises_naming_item_and_modes(nb: Notebook) -> None:
    sid, _ = _setup(nb)
    with pytest.raises(InvalidInput) as err:
        _build(nb, sid, context_config={"moment:m_1": "insights"})
    message = str(err.value)
    assert "moment:m_1" in message and "insights" in message
    assert all(mode in message for mode in MODES)


def test_unknown_session_is_not_found(nb: Notebook) -> None:
    with pytest.raises(NotFound):
        ContextBuilder(nb).build(message="x", session_id="s_2026-06-07_999")


def test_negative_settings_are_invalid(nb: Notebook) -> None:
    with pytest.raises(InvalidInput):
        ContextBuilder(nb, budget_tokens=-1)
    with pytest.raises(InvalidInput):
        ContextBuilder(nb, max_moments=-1)


@pytest.mark.parametrize("budget", [0, 1, 5, 11, 12, 20, 40, 80, 150, 300, 600, 1000, 5000])
def test_budget_is_never_exceeded(nb: Notebook, budget: int) -> None:
    sid, _ = _setup(nb)
    ctx = _build(nb, sid, budget=budget)
    assert ctx.budget == budget
    assert ctx.tokens_used <= budget
    assert DEFAULT_COUNTER.count(ctx.render()) <= budget
    in_ids = set(_ids(ctx))
    for item_id, why in ctx.cut:
        assert (why == "summarised to fit") == (item_id in in_ids)
    if not ctx.items:
        assert ctx.tokens_used == 0 and ctx.render() == ""


def test_priority_order_when_tight(nb: Notebook) -> None:
    sid, _ = _setup(nb)
    everything = _build(nb, sid)
    sizes = {item.id: item.tokens + 1 for item in everything.items}  # +1: the separator
    top = DEFAULT_COUNTER.count(INSTRUCTION) + sizes["session_notebook"] + sizes["pending"]
    ctx = _build(nb, sid, budget=top)
    assert _ids(ctx) == ["session_notebook", "pending"]
    assert all(why == "over budget" for _, why in ctx.cut)
    # a bit more room: decisions come before the condensed history and moments
    ctx = _build(nb, sid, budget=top + sizes["decision:d_7"] + sizes["decision:d_6"])
    assert _ids(ctx) == ["session_notebook", "pending", "decision:d_7", "decision:d_6"]


def test_summarised_to_fit(nb: Notebook) -> None:
    sid, _ = _setup(nb)
    full = {item.id: item.tokens for item in _build(nb, sid).items}
    ctx = _build(nb, sid, budget=full["session_notebook"] - 5)
    assert ("session_notebook", "summarised to fit") in ctx.cut
    assert ctx.items[0].id == "session_notebook" and ctx.items[0].mode == "summary"


def test_open_notebook_on_disk(tmp_path: Path) -> None:
    with Notebook.open(tmp_path / "home") as nb:
        sid, old_moment = _setup(nb)
        sync = nb.session_notebook("t1").sync
        sections = empty_sections() | {"Current State": "Booking trains.", "Worklog": "Long log."}
        sync.save(render(sections))
        text = sync.render_for_compaction()
        ctx = ContextBuilder(nb).build(
            message="Lyon",
            session_id=sid,
            session_notebook=text,
            context_config={"session_notebook": "summary"},
        )
        sn = ctx.items[0]
        assert sn.id == "session_notebook" and "Booking trains." in sn.text
        assert "Long log." not in sn.text
        assert f"moment:{old_moment}" in _ids(ctx)


# -- the pure parts ----------------------------------------------------------------------------


def test_shorten_and_tail() -> None:
    assert shorten("First one. Second one.") == "First one."
    assert shorten("  many\n  spaces  ") == "many spaces"
    long = "x" * 500
    assert len(shorten(long)) == 200 and shorten(long).endswith("…")
    assert tail("y" * 1000).startswith("…") and len(tail("y" * 1000)) == 400
    assert tail("short") == "short"


def test_notebook_summary_keeps_two_sections() -> None:
    text = render(
        empty_sections() | {"Current State": "now", "Task Specification": "do X", "Worklog": "w"}
    )
    assert notebook_summary(text) == "## Current State\nnow\n\n## Task Specification\ndo X"
    assert notebook_summary("Just text. More.") == "Just text."


def test_fit_puts_items_in_prompt_order_and_unknown_kinds_last() -> None:
    cs = [
        Candidate("x", "other", "[x] x", "[x] x"),
        Candidate("moment:m_1", "moment", "[moment:m_1] a", "[moment:m_1] a"),
        Candidate("condensed_history", "condensed_history", "[condensed_history] h", "h"),
        Candidate("session_notebook", "session_notebook", "[session_notebook] s", "s"),
    ]
    ctx = fit(cs, {}, 1000)
    assert _ids(ctx) == ["session_notebook", "condensed_history", "moment:m_1", "x"]
    assert fit(cs, {}, -5).cut == [(c.id, "over budget") for c in cs]


def test_resolve_modes_defaults_and_precedence() -> None:
    cs = [Candidate("moment:m_1", "moment", "a", "a"), Candidate("moment:m_2", "moment", "b", "b")]
    assert resolve_modes(cs, None) == {"moment:m_1": "full", "moment:m_2": "full"}
    got = resolve_modes(cs, {"moment": "summary", "moment:m_2": "not in context"})
    assert got == {"moment:m_1": "summary", "moment:m_2": "not in context"}


_candidates = st.lists(
    st.tuples(st.text(min_size=1, max_size=300), st.text(max_size=80), st.sampled_from(MODES)),
    max_size=12,
)


@given(_candidates, st.integers(min_value=0, max_value=600))
def test_fit_property(raw: list[tuple[str, str, Mode]], budget: int) -> None:
    cs = [
        Candidate(f"moment:m_{i + 1}", "moment", f"[m{i}] {f}", f"[m{i}] {s}")
        for i, (f, s, _) in enumerate(raw)
    ]
    modes = {c.id: m for c, (_, _, m) in zip(cs, raw, strict=True)}
    ctx = fit(cs, modes, budget)
    assert ctx.tokens_used <= budget
    assert DEFAULT_COUNTER.count(ctx.render()) <= budget
    assert ctx.tokens_used == (DEFAULT_COUNTER.count(INSTRUCTION) if ctx.items else 0) + sum(
        i.tokens for i in ctx.items
    )
    accounted = {i.id for i in ctx.items} | {i for i, _ in ctx.cut}
    assert accounted == {c.id for c in cs}
    for item in ctx.items:
        assert modes[item.id] != "not in context"
        assert item.mode == modes[item.id] or (item.id, "summarised to fit") in ctx.cut
    # the first candidate that could fit alone is never dropped for a later one
    for c in cs:
        if modes[c.id] == "not in context":
            continue
        text = c.full if modes[c.id] == "full" else c.summary
        if DEFAULT_COUNTER.count(INSTRUCTION) + DEFAULT_COUNTER.count(text) + 1 <= budget:
            assert ctx.items and ctx.items[0].id == c.id
        break


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    # the notebook refuses blank moments, pending items and decisions: only texts it holds
    st.lists(st.text(alphabet="abc lyon.", min_size=1, max_size=120).filter(str.strip), max_size=8),
    st.lists(st.text(min_size=1, max_size=100).filter(str.strip), max_size=4),
    st.lists(st.text(min_size=1, max_size=100).filter(str.strip), max_size=7),
    st.text(max_size=600),
    st.text(max_size=800),
    st.integers(min_value=0, max_value=800),
    st.dictionaries(
        st.sampled_from(["session_notebook", "pending", "decision", "moment", "condensed_history"]),
        st.sampled_from(MODES),
    ),
)
def test_budget_property_over_random_notebooks(
    moments: list[str],
    pendings: list[str],
    decisions: list[str],
    notebook_text: str,
    history: str,
    budget: int,
    config: dict[str, str],
) -> None:
    nb = Notebook(MemoryBackend())
    other = nb.start_session()
    for text in moments:
        nb.record(other.id, text)
    s = nb.start_session()
    for what in pendings:
        nb.open_pending(s.id, what)
    for what in decisions:
        nb.decide(s.id, what)
    builder = ContextBuilder(nb, budget_tokens=budget)
    ctx = builder.build(
        message="lyon abc",
        session_id=s.id,
        session_notebook=notebook_text,
        condensed_history=history,
        context_config=config,
    )
    candidates = builder.candidates(
        message="lyon abc",
        session_id=s.id,
        session_notebook=notebook_text,
        condensed_history=history,
    )
    for c in candidates:
        assert c.full.startswith(f"[{c.id}]") and c.summary.startswith(f"[{c.id}]")
        assert len(c.summary) <= len(c.full)
    assert ctx.tokens_used <= budget
    assert DEFAULT_COUNTER.count(ctx.render()) <= budget
    for item in ctx.items:
        assert item.text.startswith(f"[{item.id}]")
        assert config.get(item.kind, "full") != "not in context"
    assert len([i for i in ctx.items if i.kind == "decision"]) <= 5


def test_context_finds_moments_by_meaning_unless_set_to_lexical(tmp_path: Path) -> None:
    with Notebook.open(tmp_path / "home", background_embedding=False) as nb:
        earlier = nb.start_session("Earlier")
        found = nb.record(earlier.id, "I forgot my login credentials for the expenses portal.")
        s = nb.start_session("Chat")
        nb.reindex()

        def moment_ids() -> list[str]:
            ctx = ContextBuilder(nb).build(message="reset password", session_id=s.id)
            return [i.id for i in ctx.items if i.kind == "moment"]

        assert moment_ids() == [f"moment:{found.id}"]  # no word in common: by meaning
        nb.config.chat.context_search = "lexical"
        assert moment_ids() == []


def test_matches_come_first_then_the_turns_around_them(nb: Notebook) -> None:
    """The context's moments: every match of the search, best first (one that is the
    neighbour of another match still counts as a match), then, while there is room, the
    turns just around the matches, of their own session and not redacted."""
    s = nb.start_session()
    before = nb.record(s.id, "We met at the station.")
    first = nb.record(s.id, "The locker code is 4471.")
    second = nb.record(s.id, "Ana changed the locker code last week.")
    after = nb.record(s.id, "Then we took the tram.")
    hidden = nb.record(s.id, "Nothing else happened.")
    other = nb.start_session()
    builder = ContextBuilder(nb, max_moments=4)
    ids = _ids(builder.build(message="locker code", session_id=other.id))
    matches = {f"moment:{first.id}", f"moment:{second.id}"}
    assert set(ids[:2]) == matches  # both matches ahead of any neighbour
    assert ids[2:] == [f"moment:{before.id}", f"moment:{after.id}"]
    nb.redact(before.id, "no reason")
    ids = _ids(ContextBuilder(nb, max_moments=8).build(message="locker code", session_id=None))
    assert f"moment:{before.id}" not in ids and f"moment:{hidden.id}" not in ids
    assert set(ids[:2]) == matches
