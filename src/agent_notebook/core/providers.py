"""Models by ``provider:model`` name, as LangChain names them (``init_embeddings``,
``init_chat_model``): the one place such a name becomes an embedding model
(``search.embedder``) or a chat model (``chat.model``, ``facts.judge_model``,
``compaction.model``).

A provider is looked up first among the entry points of the installed distributions, in the
group :data:`EMBEDDINGS_GROUP` or :data:`CHAT_MODELS_GROUP`: an entry point named after the
provider names a callable that takes the model's name (what follows ``provider:``) and
returns a LangChain ``Embeddings`` or ``BaseChatModel``. Any package can register one::

    [project.entry-points."agent_notebook.embeddings"]
    mycorp = "mycorp_models:embeddings"      # search.embedder: "mycorp:small-v2"

Other providers go to LangChain's init functions (``openai``, ``ollama``, ``cohere``...,
each with its ``langchain-<provider>`` package). Errors say what was wrong, which setting
named the model, and how to fix it. LangChain loads only when a model is made.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Final

from ..errors import InvalidInput, MissingDependency, NotebookError

__all__ = [
    "CHAT_MODELS",
    "CHAT_MODELS_GROUP",
    "EMBEDDINGS",
    "EMBEDDINGS_GROUP",
    "Kind",
    "answers",
    "check",
    "make",
    "split_name",
]

EMBEDDINGS_GROUP: Final = "agent_notebook.embeddings"
CHAT_MODELS_GROUP: Final = "agent_notebook.chat_models"

#: A provider's name: lower-case letters, digits, ``_`` and ``-`` (LangChain's are so).
_PROVIDER = re.compile(r"[a-z0-9][a-z0-9_-]*")


@dataclass(frozen=True)
class Kind:
    """One kind of model made by name: its entry point group and LangChain's function."""

    noun: str
    group: str
    #: The LangChain module with the init function and its table of providers.
    module: str
    function: str
    example: str


EMBEDDINGS: Final = Kind(
    "embedding model",
    EMBEDDINGS_GROUP,
    "langchain.embeddings.base",
    "init_embeddings",
    "openai:text-embedding-3-small",
)
CHAT_MODELS: Final = Kind(
    "chat model",
    CHAT_MODELS_GROUP,
    "langchain.chat_models.base",
    "init_chat_model",
    "openai:gpt-4o-mini",
)


def split_name(name: str) -> tuple[str, str] | None:
    """``(provider, model)`` of a ``provider:model`` name, or None when it is not one."""
    provider, colon, model = name.partition(":")
    if not colon or not model.strip() or not _PROVIDER.fullmatch(provider):
        return None
    return provider, model.strip()


def registered(kind: Kind, provider: str) -> EntryPoint | None:
    """The entry point registering ``provider`` for ``kind``, if an installed
    distribution has one."""
    found = entry_points(group=kind.group, name=provider)
    return next(iter(found), None)


def _langchain_table(kind: Kind) -> dict[str, tuple[str, str, Any]] | None:
    """LangChain's providers for ``kind`` (module, class, maker), or None where this
    version of LangChain keeps no such table (its init function then says)."""
    try:
        module = importlib.import_module(kind.module)
    except ImportError:
        return None
    table = getattr(module, "_BUILTIN_PROVIDERS", None)
    return table if isinstance(table, dict) else None


def _package(module: str) -> str:
    return module.split(".", 1)[0].replace("_", "-")


def check(kind: Kind, name: str, setting: str) -> None:
    """InvalidInput unless ``name`` is a ``provider:model`` name whose provider is
    registered (entry point) or known to LangChain; MissingDependency when LangChain knows
    it but its package is not installed. Nothing is imported of the provider, nothing is
    called."""
    parts = split_name(name)
    if parts is None:
        raise InvalidInput(
            f"{setting}: {name!r} is not a provider:model name (for example {kind.example})"
        )
    provider = parts[0]
    if registered(kind, provider) is not None:
        return
    table = _langchain_table(kind)
    if table is None:
        return  # LangChain's init function will say
    if provider not in table:
        known = ", ".join(sorted(table))
        raise InvalidInput(
            f"{setting}: no {kind.noun} provider {provider!r} (in {name!r}): it is neither "
            f"registered (entry point group {kind.group!r}) nor one of LangChain's ({known}); "
            f"fix the name (for example {kind.example})"
        )
    module = table[provider][0]
    if importlib.util.find_spec(module.split(".", 1)[0]) is None:
        raise MissingDependency(_feature(kind, name, setting), package=_package(module))


def make(kind: Kind, name: str, setting: str) -> Any:
    """The model ``name`` names: a registered provider's, else LangChain's. Errors (an
    unknown provider, a missing package, a provider refusing to start, such as without its
    API key) are InvalidInput or MissingDependency, naming ``setting``."""
    check(kind, name, setting)
    provider, model = split_name(name) or ("", name)
    entry = registered(kind, provider)
    try:
        if entry is not None:
            return entry.load()(model)
        init: Callable[[str], Any] = getattr(importlib.import_module(kind.module), kind.function)
        return init(name)
    except ImportError as err:
        package = (getattr(err, "name", None) or f"langchain_{provider}").replace("_", "-")
        raise MissingDependency(_feature(kind, name, setting), package=_package(package)) from err
    except Exception as err:  # a provider's own error, said with the setting
        raise InvalidInput(
            f"{setting}: cannot make the {kind.noun} {name!r}: {type(err).__name__}: "
            f"{_first_line(err)}; {_fix(provider)}"
        ) from err


def _feature(kind: Kind, name: str, setting: str) -> str:
    return f"the {kind.noun} {name!r} ({setting})"


def _fix(provider: str) -> str:
    return (
        f"check the provider's set-up (its API key in the environment, such as "
        f"{provider.upper()}_API_KEY, or its server running) or name another model"
    )


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else "(no message)"


def answers(call: Callable[[], object], timeout_s: float) -> str | None:
    """Run ``call`` (one tiny request to a model) for at most ``timeout_s`` seconds: None
    when it returned, else why not. A call still running then is left behind on a daemon
    thread (it cannot be stopped; it never holds the process open)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as err:  # noqa: BLE001 - reported, not raised
            outcome.append(err)
        else:
            outcome.append(None)

    worker = threading.Thread(target=run, name="agent-notebook-probe", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if not outcome:
        return f"no answer within {timeout_s:g} s"
    err = outcome[0]
    if err is None:
        return None
    if isinstance(err, NotebookError) and err.__cause__ is not None:
        err = err.__cause__  # what the provider said, not our sentence around it
    return f"{type(err).__name__}: {_first_line(err)}"
