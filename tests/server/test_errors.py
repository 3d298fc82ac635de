"""A model's failure is a 502 (its provider), never a 500 ("a bug in agent-notebook"):
the chat model's (``ModelFailed``), the summarizer's (``SummaryFailed``) and the
session-notebook updater's (``UpdateFailed``).

The chat graph's LLM summarizer falls back to the extractive one and the session notebook
records an updater's failure, so neither reaches a request as shipped; a library user's
summarizer without a fallback (or their own route calling an updater) does: both are made
here, on the real app, and answered 502."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from langchain_core.messages import BaseMessage

from agent_notebook.chat import chat as chat_graph
from agent_notebook.chat.models import EchoChatModel
from agent_notebook.compaction.summarize import LlmSummarizer
from agent_notebook.errors import ModelFailed, SummaryFailed, UpdateFailed
from agent_notebook.privacy.tokens import ensure_owner_token
from agent_notebook.server import ServerSettings, create_app
from agent_notebook.server.errors import status_of

#: The LLM summarizer folds what leaves the live window; a small window makes it fold at once.
CONFIG = "chat:\n  summarizer: llm\n  live_budget_tokens: 256\n  condensed_history_tokens: 64\n"
LONG = "We plan the Lyon trip: the TGV 6612 at 08:04, the hotel Bellecour, three nights. " * 8


class DownWhenSummarizing(EchoChatModel):
    """Answers a chat turn; fails as a provider that is down when asked for a summary."""

    def answer(self, messages: list[BaseMessage]) -> str:
        if any("The old condensed history" in m.text for m in messages):
            raise ConnectionError("the provider is down")
        return super().answer(messages)


def update_route() -> None:
    """What a library user's route calling an LLM updater gets when the model keeps failing."""
    raise UpdateFailed("the llm updater gave up after 3 attempt(s): ConnectionError: down")


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
    # the chat graph's LLM summarizer without its extractive fallback
    monkeypatch.setattr(chat_graph, "LlmSummarizer", partial(LlmSummarizer, fallback=None))
    home = tmp_path / "home"
    token, _ = ensure_owner_token(home)
    (home / "config.yaml").write_text(CONFIG, encoding="utf-8")
    (home / "config.yaml").chmod(0o600)
    settings = ServerSettings(
        home=home,
        model="fake:down-when-summarizing",
        models={"fake:down-when-summarizing": DownWhenSummarizing()},
        mcp=False,
    )
    app = create_app(settings)
    app.add_api_route("/api/update-now", update_route, methods=["POST"])
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as client:
        yield client


def test_a_summarizer_whose_model_fails_is_a_502(api: TestClient) -> None:
    thread = api.post("/api/chat/sessions", json={}).json()["id"]
    failed = api.post("/api/chat/execute", json={"session_id": thread, "message": LONG})
    assert failed.status_code == 502, failed.text
    body = failed.json()
    assert body["error"] == "bad gateway"
    assert "summarizer" in body["detail"] and "the provider is down" in body["detail"]
    assert "bug" not in body["fix"] and "provider" in body["fix"]


def test_an_updater_that_gets_no_proposal_is_a_502(api: TestClient) -> None:
    failed = api.post("/api/update-now")
    assert failed.status_code == 502, failed.text
    assert "llm updater gave up" in failed.json()["detail"]


@pytest.mark.parametrize("error", [ModelFailed, SummaryFailed, UpdateFailed])
def test_every_model_failure_maps_to_502(error: type[Exception]) -> None:
    assert status_of(error("the model is down")) == 502  # type: ignore[arg-type]
