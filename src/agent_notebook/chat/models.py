"""Choosing the chat model of a turn: the request's ``model_override``, else the default
(``config.yaml``'s ``model`` or ``AGENT_NOTEBOOK_MODEL``), by name (:func:`chat_model`):
the offline ones (``offline:notes``, ``fake:echo``), a provider registered in the entry
point group ``agent_notebook.chat_models``, else LangChain's ``init_chat_model``. The facts
judge (``facts.judge_model``) and the compaction summarizer (``compaction.model``) are named
and made the same way."""

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
from ..core import providers
from ..errors import InvalidInput, MissingDependency
from ..errors import ModelNotConfigured as ModelNotConfigured  # re-export: was defined here
from ..notebook.facade import Notebook


class ModelResolver:
    """Turns "provider:model" names into chat models, once each.

    ``models`` pre-registers instances by name (a fake model in tests, a configured client in
    an app); other names go through :func:`chat_model`.
    """

    def __init__(
        self,
        default: BaseChatModel | str | None = None,
        models: Mapping[str, BaseChatModel] | None = None,
    ) -> None:
        self.default = default
        self._models: dict[str, BaseChatModel] = dict(models or {})
        self._lock = threading.Lock()

    def resolve(self, override: str | None = None, setting: str = "") -> BaseChatModel:
        """``override`` (named by ``setting``, for messages), else the default model."""
        chosen: BaseChatModel | str | None = override or self.default or model_from_env()
        if chosen is None:
            raise ModelNotConfigured(MODEL_ENV)
        if isinstance(chosen, BaseChatModel):
            return chosen
        with self._lock:
            if chosen not in self._models:
                named = setting if override and setting else "the chat model"
                self._models[chosen] = chat_model(chosen, named)
            return self._models[chosen]


def chat_model(name: str, setting: str = "the chat model") -> BaseChatModel:
    """The chat model ``name`` names, for ``chat.model``, ``facts.judge_model`` and
    ``compaction.model`` alike: an offline one (:func:`offline_models`), a provider's by
    ``provider:model`` (registered in the entry point group ``agent_notebook.chat_models``,
    else LangChain's ``init_chat_model``), or a bare name LangChain infers the provider of
    (``gpt-4o-mini``). Errors name ``setting`` and say how to fix it."""
    offline = offline_models().get(name)
    if offline is not None:
        return offline
    if providers.split_name(name) is not None:
        model: Any = providers.make(providers.CHAT_MODELS, name, setting)
    else:
        model = _inferred(name, setting)
    if not isinstance(model, BaseChatModel):
        raise InvalidInput(
            f"{setting}: {name!r} gave a {type(model).__name__}, not a LangChain chat model"
        )
    return model


def _inferred(name: str, setting: str) -> object:
    """A chat model named without its provider (LangChain guesses it from the name)."""
    from langchain.chat_models import init_chat_model

    try:
        return init_chat_model(name)
    except ImportError as err:
        raise MissingDependency(
            f"the chat model {name!r} ({setting})", package="langchain-<provider>"
        ) from err
    except ValueError as err:
        raise InvalidInput(
            f"{setting}: cannot make a chat model from {name!r}: {err}; name it "
            "provider:model (for example openai:gpt-4o-mini)"
        ) from None


#: How long ``doctor`` waits for a chat model's answer to one tiny message.
PROBE_TIMEOUT_S = 15.0


def describe_chat_model(name: str, setting: str, timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """For ``doctor``: which provider and model ``name`` is, and whether it answers one
    tiny message within ``timeout_s`` (the offline ones say so, with no call)."""
    if name in offline_models():
        return f"{name}: built in, offline (no call made)"
    parts = providers.split_name(name)
    provider = f"provider {parts[0]}" if parts else "provider inferred by LangChain"
    problem = providers.answers(
        lambda: chat_model(name, setting).invoke([HumanMessage("Answer with one word: ok")]),
        timeout_s,
    )
    verdict = "answers" if problem is None else f"does not answer: {problem}"
    return f"{name} ({provider}): {verdict}"


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


def attach_fact_judge(notebook: Notebook, models: ModelResolver) -> bool:
    """With ``facts.enabled`` and ``facts.judge`` on, let a chat model judge what the fact
    rules propose on record (:class:`~agent_notebook.facts.judge.LlmJudge`): the one
    ``facts.judge_model`` names, else the chat model of ``models``; whether it does."""
    settings = notebook.config.facts
    if not (settings.enabled and settings.judge):
        return False
    from ..facts.judge import LlmJudge

    notebook.facts.judge = LlmJudge(models.resolve(settings.judge_model, "facts.judge_model"))
    return True


def offline_models() -> dict[str, BaseChatModel]:
    """The models ``--model`` can name without a provider, with no network: ``offline:notes``
    answers from what the notebook recalled, ``fake:echo`` is a test double."""
    return {"offline:notes": NotesChatModel(), "fake:echo": EchoChatModel()}
