"""Choosing the chat model of a turn: the request's ``model_override``, else the default
(``config.yaml``'s ``model`` or ``AGENT_NOTEBOOK_MODEL``), through ``init_chat_model``."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from ..config import MODEL_ENV as MODEL_ENV  # re-export: was defined here
from ..config import model_from_env
from ..errors import InvalidInput, MissingDependency
from ..errors import ModelNotConfigured as ModelNotConfigured  # re-export: was defined here
from ..notebook.facade import Notebook


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
        chosen: BaseChatModel | str | None = override or self.default or model_from_env()
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


class OfflineChatModel(BaseChatModel):
    """A chat model with no network: its answer is :meth:`answer` of the messages."""

    @property
    def _llm_type(self) -> str:
        return f"agent-notebook-{type(self).__name__}"

    def answer(self, messages: list[BaseMessage]) -> str:
        raise NotImplementedError

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        answer = AIMessage(self.answer(messages))
        return ChatResult(generations=[ChatGeneration(message=answer)])


class EchoChatModel(OfflineChatModel):
    """The offline test double behind ``--model fake:echo``: it answers
    "echo: <the last user line> (messages: <how many it was given, system prompt aside>)"."""

    def answer(self, messages: list[BaseMessage]) -> str:
        seen = [m for m in messages if not isinstance(m, SystemMessage)]
        last = next((m.text for m in reversed(seen) if isinstance(m, HumanMessage)), "")
        return f"echo: {last} (messages: {len(seen)})"


#: The heading the system prompt puts before what the notebook recalled (chat/system.jinja).
RECALLED_HEADING = "# From the notebook"
#: At most this many recalled items make an offline answer.
NOTES_PER_ANSWER = 3


class NotesChatModel(OfflineChatModel):
    """``--model offline:notes``: no language model at all. It answers with the items the
    notebook recalled into its system prompt (each cited by its tag, e.g. ``[moment:m_12]``)
    and the user's earlier lines of the chat (its messages: the recall leaves them out) that
    share the most content words with the user's last line, best first; or says that
    the notebook recalled nothing on it. So a chat works offline and shows what memory holds."""

    def answer(self, messages: list[BaseMessage]) -> str:
        said = [str(m.text) for m in messages if isinstance(m, HumanMessage)]
        last = said[-1] if said else ""
        return notes_answer([*recalled_items(messages), *earlier_turns(said[:-1])], last)


def recalled(messages: list[BaseMessage]) -> str | None:
    """What the notebook recalled into the system prompt among ``messages`` (the part under
    :data:`RECALLED_HEADING`), or None when it recalled nothing."""
    system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
    _, found, rest = system.partition(RECALLED_HEADING)
    return rest.split("\n# ", 1)[0].strip() if found else None


def recalled_items(messages: list[BaseMessage]) -> list[str]:
    """The tagged items the notebook recalled (:func:`recalled`), in order."""
    part = recalled(messages) or ""
    return [block.strip() for block in part.split("\n\n") if block.strip().startswith("[")]


def earlier_turns(said: list[str]) -> list[str]:
    """The user's earlier lines of this chat as items: the notebook's search leaves out the
    latest turns of the conversation (the model has them in its messages), so the offline
    model reads them there."""
    return [f"[earlier in this chat] you said: {text.strip()}" for text in said if text.strip()]


def notes_answer(items: list[str], question: str) -> str:
    """The offline answer: the items sharing the most content words with ``question``."""
    from ..search.query import content_words

    wanted = set(content_words(question))
    scored = [(len(wanted & set(content_words(item))), -n, item) for n, item in enumerate(items)]
    best = sorted((s for s in scored if s[0] > 0), reverse=True)[:NOTES_PER_ANSWER]
    if not best:
        return "My notebook recalls nothing on that (offline:notes answers only from it)."
    return "From my notebook:\n" + "\n".join(item for *_, item in best)


def attach_fact_judge(notebook: Notebook, model: BaseChatModel) -> bool:
    """With ``facts.enabled`` and ``facts.judge`` on, let ``model`` judge what the fact rules
    propose on record (:class:`~agent_notebook.facts.judge.LlmJudge`); whether it does."""
    settings = notebook.config.facts
    if not (settings.enabled and settings.judge):
        return False
    from ..facts.judge import LlmJudge

    notebook.facts.judge = LlmJudge(model)
    return True


def offline_models() -> dict[str, BaseChatModel]:
    """The models ``--model`` can name without a provider, with no network: ``offline:notes``
    answers from what the notebook recalled, ``fake:echo`` is a test double."""
    return {"offline:notes": NotesChatModel(), "fake:echo": EchoChatModel()}
