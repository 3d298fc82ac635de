"""The judge behind the fact rules (issue 30): the rules alone by default; a chat model (a
langchain_core fake here) may confirm, reject or change what they propose, and make a link
of a pair they only suspect; when it fails or answers nonsense the rules' word stands."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from agent_notebook import Notebook
from agent_notebook.config import FactSettings, NotebookConfig
from agent_notebook.facts import FactEngine, FactJudge, LlmJudge, RuleJudge, Statement
from agent_notebook.storage import MemoryBackend
from tests.support.chat_models import RecordingModel

T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def _links(judge: FactJudge | None, *texts: str) -> set[tuple[str, str, str]]:
    engine = FactEngine(judge=judge)
    said = [Statement(str(n + 1), t, T0 + timedelta(hours=n)) for n, t in enumerate(texts)]
    return {(k.source, k.relation, k.target) for s in said for k in engine.observe(s).links}


MOVED = ("The launch is on June 5.", "The launch moved to June 12.")
#: A value changed with no update cue: the rules only suspect it.
SUSPECTED = ("I spent $40 on groceries at the market.", "I spent $55 on groceries at the market.")


def test_the_rule_judge_lets_the_rules_stand() -> None:
    assert isinstance(RuleJudge(), FactJudge) and isinstance(LlmJudge(RecordingModel()), FactJudge)
    assert _links(RuleJudge(), *MOVED) == _links(None, *MOVED) == {("1", "superseded_by", "2")}
    assert _links(RuleJudge(), *SUSPECTED) == set()


def test_a_model_rejects_confirms_or_makes_a_link_of_a_suspicion() -> None:
    assert _links(LlmJudge(FakeListChatModel(responses=["none"])), *MOVED) == set()
    assert _links(LlmJudge(FakeListChatModel(responses=["Update."])), *MOVED) == {
        ("1", "superseded_by", "2")
    }
    assert _links(
        LlmJudge(FakeListChatModel(responses=["<think>hm</think> update"])), *SUSPECTED
    ) == {("1", "superseded_by", "2")}
    conflict = _links(LlmJudge(FakeListChatModel(responses=["conflict"])), *SUSPECTED)
    assert conflict == {("2", "conflicts_with", "1"), ("1", "conflicts_with", "2")}


def test_a_failing_or_unreadable_model_leaves_the_rules_word_and_says_why() -> None:
    down = LlmJudge(RecordingModel(error="provider down"))
    assert _links(down, *MOVED) == {("1", "superseded_by", "2")}
    assert "provider down" in down.last_fallback_reason
    babble = LlmJudge(RecordingModel(answer="It depends."))
    assert _links(babble, *MOVED) == {("1", "superseded_by", "2")}
    assert (
        "It depends" in babble.last_fallback_reason or "it depends" in babble.last_fallback_reason
    )
    (prompt,) = babble.model.seen  # type: ignore[attr-defined]
    assert "June 5" in str(prompt[0].content) and "June 12" in str(prompt[0].content)


def test_a_notebook_uses_the_judge_it_is_given() -> None:
    config = NotebookConfig(facts=FactSettings(enabled=True))
    with Notebook(MemoryBackend(), embedder=None, config=config) as nb:
        nb.facts.judge = LlmJudge(FakeListChatModel(responses=["none"]))
        s = nb.start_session().id
        first = nb.record(s, MOVED[0], timestamp=T0)
        nb.record(s, MOVED[1], timestamp=T0 + timedelta(days=1))
        assert nb.get_moment(first.id).relations.links == []
