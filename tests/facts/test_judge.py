"""The judge behind the fact rules (issue 30): the rules alone by default; a chat model (a
langchain_core fake here) may confirm, reject or change what they propose, and make a link
of a pair they only suspect; when it fails or answers nonsense the rules' word stands."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from agent_notebook import Notebook
from agent_notebook.config import FactSettings, NotebookConfig
from agent_notebook.facts import FactEngine, FactJudge, LlmJudge, RuleJudge, Statement
from agent_notebook.storage import MemoryBackend
from tests.support.chat_models import RecordingModel
from tests.support.providers import fake_providers

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
    babble = LlmJudge(RecordingModel(reply="It depends."))
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


def test_facts_judge_on_lets_the_servers_chat_model_judge_record(tmp_path: Path) -> None:
    """``facts.judge`` in config.yaml: the server's chat model judges what the rules propose
    on every record through its notebook; off, or without facts, the rules decide alone."""
    from agent_notebook.server import ServerSettings
    from agent_notebook.server.app import open_tenant

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("facts:\n  enabled: true\n  judge: true\n", encoding="utf-8")
    rejecting = FakeListChatModel(responses=["none"] * 5)
    settings = ServerSettings(home=home, model="fake:judge", models={"fake:judge": rejecting})
    tenant = open_tenant(home, settings)
    try:
        nb = tenant.notebook
        assert isinstance(nb.facts.judge, LlmJudge) and nb.facts.judge.model is rejecting
        s = nb.start_session("launch").id
        first = nb.record(s, MOVED[0], timestamp=T0)
        nb.record(s, MOVED[1], timestamp=T0 + timedelta(days=1))
        assert nb.get_moment(first.id).relations.links == []  # the model said: no update
    finally:
        tenant.notebook.close()
    (home / "config.yaml").write_text("facts:\n  enabled: true\n", encoding="utf-8")
    tenant = open_tenant(home, settings)
    try:
        assert tenant.notebook.facts.judge is None
    finally:
        tenant.notebook.close()


def test_facts_judge_model_names_the_judge_apart_from_the_chat_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``facts.judge_model`` (issue 43): a provider's model by name judges, while the
    server's chat model stays the chat's."""
    from agent_notebook.server import ServerSettings
    from agent_notebook.server.app import open_tenant

    monkeypatch.syspath_prepend(str(fake_providers(tmp_path / "dist")))
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text(
        'facts:\n  enabled: true\n  judge: true\n  judge_model: "fakeprov:say-none"\n',
        encoding="utf-8",
    )
    (home / "config.yaml").chmod(0o600)
    confirming = FakeListChatModel(responses=["update"] * 5)
    settings = ServerSettings(home=home, model="fake:chat", models={"fake:chat": confirming})
    tenant = open_tenant(home, settings)
    try:
        nb = tenant.notebook
        assert isinstance(nb.facts.judge, LlmJudge)
        assert isinstance(nb.facts.judge.model, FakeListChatModel)
        assert nb.facts.judge.model.responses == ["none"]
        s = nb.start_session("launch").id
        first = nb.record(s, MOVED[0], timestamp=T0)
        nb.record(s, MOVED[1], timestamp=T0 + timedelta(days=1))
        assert nb.get_moment(first.id).relations.links == []  # the judge said: no update
    finally:
        tenant.notebook.close()
