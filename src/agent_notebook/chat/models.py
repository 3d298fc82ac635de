"""Choosing the chat model of a turn: the request's ``model_override``, else the default
(``config.yaml``'s ``model`` or ``AGENT_NOTEBOOK_MODEL``), through ``init_chat_model``."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from ..errors import InvalidInput, MissingDependency
from ..errors import ModelNotConfigured as ModelNotConfigured  # re-export: was defined here

MODEL_ENV = "AGENT_NOTEBOOK_MODEL"


class ModelResolver:
    """Turns "provider:model" names into chat models, once each.

    ``models`` pre-registers instances by name (a fake model in tests, a configured client in
    an app); other names go through LangChain's ``init_chat_model``.
    """

    def __init__(
        self,
        default: BaseChatModel | str | None = None,
        models: Mapping[str, BaseChatModel] | None = None,
    ) -> None:
        self.default = default
        self._models: dict[str, BaseChatModel] = dict(models or {})
        self._lock = threading.Lock()

    def resolve(self, override: str | None = None) -> BaseChatModel:
        chosen: BaseChatModel | str | None = override or self.default or os.environ.get(MODEL_ENV)
        if chosen is None:
            raise ModelNotConfigured(MODEL_ENV)
        if isinstance(chosen, BaseChatModel):
            return chosen
        with self._lock:
            if chosen not in self._models:
                self._models[chosen] = _init(chosen)
            return self._models[chosen]


def _init(name: str) -> BaseChatModel:
    from langchain.chat_models import init_chat_model

    try:
        model: Any = init_chat_model(name)
    except ImportError as err:
        provider = name.split(":", 1)[0]
        raise MissingDependency(
            f"the chat model {name!r}", package=f"langchain-{provider}"
        ) from err
    except ValueError as err:
        raise InvalidInput(f"cannot make a chat model from {name!r}: {err}") from None
    if not isinstance(model, BaseChatModel):
        raise InvalidInput(f"{name!r} did not give a chat model")
    return model


class EchoChatModel(BaseChatModel):
    """The offline test double behind ``--model fake:echo``: it answers
    "echo: <the last user line> (messages: <how many it was given, system prompt aside>)"."""

    @property
    def _llm_type(self) -> str:
        return "agent-notebook-echo"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        seen = [m for m in messages if not isinstance(m, SystemMessage)]
        last = next((m.text for m in reversed(seen) if isinstance(m, HumanMessage)), "")
        answer = AIMessage(f"echo: {last} (messages: {len(seen)})")
        return ChatResult(generations=[ChatGeneration(message=answer)])


def offline_models() -> dict[str, BaseChatModel]:
    """The models ``--model`` can name without a provider: offline test doubles."""
    return {"fake:echo": EchoChatModel()}
