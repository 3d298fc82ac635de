"""Where a notebook lives and how it is configured.

Every setting is resolved in one order: **argument > environment > config.yaml > default**.

==================  ========================  =====================  ======================
setting             argument                  environment            default
==================  ========================  =====================  ======================
home                ``--home`` / ``home=``    AGENT_NOTEBOOK_HOME    ``~/.agent-notebook``
backend             ``backend=``              AGENT_NOTEBOOK_BACKEND ``sqlite`` (notebook.db)
sqlite_synchronous  —                         —                      ``FULL``
session_notebook    ``budgets=``              —                      seed 000's constants
chat.model          ``--model`` / ``model=``  AGENT_NOTEBOOK_MODEL   none (an error says so)
search.embedder     ``embedder=``             AGENT_NOTEBOOK_EMBEDDER ``default`` (MiniLM)
facts.judge_model   —                         —                      ``chat.model``
compaction.model    ``compact --model``       —                      ``chat.model``
moments             —                         —                      1 MiB of text a moment
guests              —                         —                      a guest's write-back caps
==================  ========================  =====================  ======================

``backend`` is ``sqlite`` (``<home>/notebook.db``), ``yaml`` (the seed's YAML layout inside
``<home>``), ``memory``, or a location understood by :func:`storage.open_backend`.

Every environment variable the package reads is read here (:func:`environment_value`), and
is one of these:

=============================  ==========================================================
environment variable           what it sets
=============================  ==========================================================
AGENT_NOTEBOOK_HOME            the home (above; also ``--home``'s default in the CLI)
AGENT_NOTEBOOK_BACKEND         the backend (above; also ``serve --backend``'s default)
AGENT_NOTEBOOK_MODEL           the chat model, when neither ``--model`` nor ``chat.model``
AGENT_NOTEBOOK_EMBEDDER        the embedder, over ``search.embedder`` (a built-in name or
                               ``provider:model``)
AGENT_NOTEBOOK_KEY             the encryption key, when ``privacy.encryption.key_env``
                               keeps this name (it names the variable read)
AGENT_NOTEBOOK_PG_TIMEOUT_S    a PostgreSQL notebook's wait for a connection, a lock or a
                               statement, in seconds (default 60)
AGENT_NOTEBOOK_PG_POOL_SIZE    the most connections each pool of a PostgreSQL notebook
                               opens (default 8; the test suite sets 3)
AGENT_NOTEBOOK_PROGRESS_EVERY  seconds between the CLI's progress lines when stderr is not
                               a terminal (default 5)
(the name given)               ``key rotate --new-key-env NAME``: the new key
=============================  ==========================================================

The package sets two variables and reads none of them: ``OMP_NUM_THREADS`` and
``OMP_WAIT_POLICY``, around the loading of the e5 embedder's engine, for OpenMP
(:mod:`agent_notebook.embed.e5`); it restores them after.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..core import files, yamlcodec
from ..core.validation import describe_validation_error
from ..errors import InvalidInput
from .guests import GuestLimits as GuestLimits
from .search import BUILTIN_EMBEDDERS as BUILTIN_EMBEDDERS
from .search import FLAT_SEARCH_KEYS as FLAT_SEARCH_KEYS
from .search import CoverageSettings as CoverageSettings
from .search import DialogueSettings as DialogueSettings
from .search import FusionSettings as FusionSettings
from .search import PriorSettings as PriorSettings
from .search import SearchSettings as SearchSettings
from .search import SpreadSettings as SpreadSettings
from .search import embedder_name_problem as embedder_name_problem

CONFIG_FILE = "config.yaml"
DB_FILE = "notebook.db"
HOME_ENV = "AGENT_NOTEBOOK_HOME"
BACKEND_ENV = "AGENT_NOTEBOOK_BACKEND"
EMBEDDER_ENV = "AGENT_NOTEBOOK_EMBEDDER"
#: The default chat model, "provider:name", when neither --model nor chat.model says one.
MODEL_ENV = "AGENT_NOTEBOOK_MODEL"
#: The encryption key's variable unless ``privacy.encryption.key_env`` names another.
KEY_ENV = "AGENT_NOTEBOOK_KEY"
#: How long a PostgreSQL notebook waits for a pooled connection, a lock or a statement
#: before it answers with a StorageError (a 503 from the server): seconds, default 60.
#: While the database is away, each request waits this long for its 503.
PG_TIMEOUT_ENV = "AGENT_NOTEBOOK_PG_TIMEOUT_S"
#: The most connections each pool of a PostgreSQL notebook opens.
PG_POOL_SIZE_ENV = "AGENT_NOTEBOOK_PG_POOL_SIZE"
DEFAULT_PG_POOL_SIZE: Final = 8
#: Seconds between two CLI progress lines when stderr is not a terminal (a log, a pipe).
PROGRESS_EVERY_ENV = "AGENT_NOTEBOOK_PROGRESS_EVERY"
DEFAULT_HOME = Path("~/.agent-notebook")


# The session notebook's thresholds and budgets (seed 000).
DEFAULT_MESSAGE_THRESHOLD: Final = 6
DEFAULT_TOOL_CALL_THRESHOLD: Final = 4
DEFAULT_MAX_SECTION_TOKENS: Final = 500
DEFAULT_MAX_TOTAL_TOKENS: Final = 3000


#: The most UTF-8 bytes of text one moment may hold (``moments.max_text_bytes``): 1 MiB.
DEFAULT_MAX_TEXT_BYTES: Final = 1024 * 1024


class MomentLimits(BaseModel):
    """What one moment may hold (``moments:`` in ``config.yaml``). A text past the limit is
    refused, naming the limit (nothing is recorded): split it into several moments, ingest
    it as a conversation, or raise the limit. Each moment's text is enriched, indexed and
    ranked whole, so a 50 MB one costs minutes and gigabytes at record and at every search."""

    model_config = ConfigDict(extra="forbid")

    max_text_bytes: int = Field(DEFAULT_MAX_TEXT_BYTES, ge=1)


class SessionBudgets(BaseModel):
    """When the session notebook updates, and how big it may grow (``session_notebook:``)."""

    model_config = ConfigDict(extra="forbid")

    message_threshold: int = Field(DEFAULT_MESSAGE_THRESHOLD, ge=1)
    tool_call_threshold: int = Field(DEFAULT_TOOL_CALL_THRESHOLD, ge=1)
    max_section_tokens: int = Field(DEFAULT_MAX_SECTION_TOKENS, ge=32)
    max_total_tokens: int = Field(DEFAULT_MAX_TOTAL_TOKENS, ge=256)


class ChatSettings(BaseModel):
    """The chat graph's settings (``chat:`` in ``config.yaml``)."""

    model_config = ConfigDict(extra="forbid")

    #: The default chat model, "provider:model"; AGENT_NOTEBOOK_MODEL when unset.
    model: str | None = None
    #: A directory whose ``chat/system.jinja`` replaces the package's prompt.
    prompts_dir: Path | None = None
    #: A separate checkpoint database (the seed's ``data/sqlite-db/checkpoints.sqlite``);
    #: default: the notebook's own file.
    checkpoints: Path | None = None
    #: Checkpoints kept per thread: null (the default) keeps every one, as LangGraph's
    #: ``SqliteSaver`` does (history, time travel, forks); a number keeps only the latest
    #: ones (an older id then raises ``CheckpointPruned``).
    keep_checkpoints: int | None = Field(None, ge=1)
    #: When a chat turn is checkpointed (LangGraph's ``durability``): ``exit`` (default)
    #: one checkpoint a turn, its end state, with the turn's messages as its writes (a
    #: third of the rows and bytes of the per-step ones); ``async``/``sync`` one per
    #: LangGraph step (input, start, answer), as LangGraph's default. A run's own
    #: ``durability=`` argument wins.
    checkpoint_durability: Literal["exit", "async", "sync"] = "exit"
    #: Live messages past this many tokens are compacted into the condensed history.
    live_budget_tokens: int = Field(6000, ge=256)
    condensed_history_tokens: int = Field(800, ge=64)
    context_budget_tokens: int = Field(4000, ge=256)
    #: How the context finds the notebook's moments for a message: ``hybrid`` embeds the
    #: message (a few ms per turn with the offline model); ``lexical`` does not.
    context_search: Literal["hybrid", "lexical"] = "hybrid"
    notebook_updater: Literal["deterministic", "llm"] = "deterministic"
    summarizer: Literal["extractive", "llm"] = "extractive"
    #: Whether the chat graph runs its checkpoint saves on one thread pool kept for the
    #: process instead of one LangGraph makes and shuts down at each run: off by default.
    #: On, it replaces a private LangGraph function for the whole process (other graphs
    #: still get LangGraph's pool) for a turn's median about 1.5-3.5 ms faster on a busy
    #: machine (see ``agent_notebook.chat.executor``).
    kept_thread_pool: bool = False


#: The longest TTL and sweep interval (``store:``): 100 years. A longer one would put an
#: item's expiry past the last date Python can hold, failing every store write.
MAX_TTL_MINUTES: Final = 100 * 365 * 24 * 60


class StoreSettings(BaseModel):
    """How long the LangGraph store keeps an app's items (``store:`` in ``config.yaml``):
    LangGraph's TTL (``store.put(..., ttl=minutes)``), with a default for puts that give
    none. An expired item is deleted by the sweeper that long-lived processes (``serve``,
    ``mcp``) run, or by :meth:`Notebook.sweep_store`. The notebook's own items (the
    namespaces ``threads`` and ``session``) never expire."""

    model_config = ConfigDict(extra="forbid")

    #: Minutes an app's item lives after it was last written (or read, with
    #: ``refresh_on_read``) when its put gives no ``ttl``; null (the default): for ever.
    default_ttl_minutes: float | None = Field(None, gt=0, le=MAX_TTL_MINUTES, allow_inf_nan=False)
    #: Whether a get or search restarts an item's TTL (a call's ``refresh_ttl`` wins); off
    #: by default: each read of an app's items would be a write, waiting on any writer.
    refresh_on_read: bool = False
    #: How often the sweeper of a long-lived process deletes expired items.
    sweep_interval_minutes: int = Field(60, ge=1, le=MAX_TTL_MINUTES)


class CompactionSettings(BaseModel):
    """The age policy of seed 002 (``compaction:`` in ``config.yaml``). Ages are in days
    before ``now``; a moment's decayed importance is ``importance * exp(-decay_rate * age)``."""

    model_config = ConfigDict(extra="forbid")

    #: Younger moments keep full fidelity.
    full_fidelity_days: float = Field(7.0, ge=0)
    #: Older moments whose decayed importance is below this are summarized, one daily
    #: summary per session and day. Pinned moments (or importance 1.0) never are.
    summarize_below: float = Field(0.3, ge=0, le=1)
    #: Daily summaries this old roll into weekly ones (ISO weeks).
    weekly_after_days: float = Field(30.0, ge=0)
    #: Weekly summaries this old roll into monthly ones, and the originals they cover move
    #: to the cold archive (``<home>/archive/``).
    monthly_after_days: float = Field(90.0, ge=0)
    #: A summary is at most this share of its sources' tokens (chosen on LoCoMo leave one
    #: conversation out for what questions find after compaction: docs/compaction.md) ...
    summary_ratio: float = Field(0.35, gt=0, le=1)
    #: ... but never under this many tokens (a short day is kept whole when it fits) ...
    min_summary_tokens: int = Field(40, ge=8)
    #: ... nor over these.
    daily_max_tokens: int = Field(300, ge=8)
    weekly_max_tokens: int = Field(600, ge=8)
    monthly_max_tokens: int = Field(1000, ge=8)
    #: Original moments of this importance or more (and decisions and corrections) are
    #: kept word for word in every rollup over them, beside the summary's budget.
    keep_whole_importance: float = Field(0.8, ge=0, le=1)
    #: ``extractive`` (no model) or ``llm`` (``model``, else ``chat.model``), which falls
    #: back to the extractive summarizer when the model fails.
    summarizer: Literal["extractive", "llm"] = "extractive"
    #: The ``llm`` summarizer's chat model, ``provider:model`` (as ``chat.model``: an
    #: ``init_chat_model`` name or a registered provider's); null: ``chat.model``.
    model: str | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _tiers_in_order(self) -> Self:
        if not self.full_fidelity_days <= self.weekly_after_days <= self.monthly_after_days:
            raise ValueError(
                "the tiers must be in order: full_fidelity_days <= weekly_after_days <= "
                f"monthly_after_days (got {self.full_fidelity_days}, "
                f"{self.weekly_after_days}, {self.monthly_after_days})"
            )
        return self


class FactSettings(BaseModel):
    """Facts read from the conversation on record, by rules, with no model (``facts:``,
    issue 30): decisions and open threads into the session, repeats, updates and
    contradictions as links between moments, expiry from the text.

    Off by default (issue 39 sets on-by-default at precision 0.9 on every kind of finding):
    on whole labelled conversations (``bench/facts_chat.py``) decisions, updates and
    conflicts are above it, open items (0.68) and closures (0.60) below. On, a record costs
    about twice as much in memory (p50 ~2x, most of it the rules on long messages), and a
    record that states a fact writes a second, derived transaction."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    #: How many of the moments recorded just before a new one it is compared with whole
    #: (beyond them, it meets the latest statements on the same subjects through the
    #: fact index, ``metadata.fact_keys``).
    window: int = Field(200, ge=1, le=100_000)
    #: Fold paraphrases on record too (vectors close *and* words shared): each record then
    #: embeds its text on the spot (an embedding per record); off, only repeats of the
    #: same words are folded on record.
    paraphrases: bool = False
    #: Let a chat model confirm, reject or propose the rules' updates and conflicts in the
    #: processes that have one (``serve``, ``chat``); its failure leaves the rules' word. A
    #: model call per proposed link.
    judge: bool = False
    #: The judge's chat model, ``provider:model`` (``init_chat_model`` names, a provider
    #: registered in the entry point group ``agent_notebook.chat_models``, or
    #: ``offline:notes``...); null (the default): the chat model (``chat.model``).
    judge_model: str | None = Field(None, min_length=1)


class Modalities(BaseModel):
    """Which modalities are recorded at all (``privacy.modalities:``). An opted-out modality
    is never written: not its content, its signature, its path, nor (``embeddings``) a
    vector of any moment."""

    model_config = ConfigDict(extra="forbid")

    text: bool = True
    audio: bool = True
    image: bool = True
    embeddings: bool = True


class EncryptionSettings(BaseModel):
    """Encryption at rest (``privacy.encryption:``), off by default for speed. The key is
    read from ``key_env`` when set there, else from ``key_file`` (kept outside the home)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    key_env: str = KEY_ENV
    key_file: Path | None = None

    def key_from_env(self) -> str | None:
        """The key's text in ``key_env``, or None when that variable is unset."""
        return environment_value(self.key_env)


class PrivacySettings(BaseModel):
    """Seed 002's privacy model (``privacy:`` in ``config.yaml``)."""

    model_config = ConfigDict(extra="forbid")

    modalities: Modalities = Field(default_factory=Modalities)
    #: What happens to an API key, token or private key about to be recorded: ``mask`` it
    #: (the default), ``refuse`` the record, or ``off`` (record it as given).
    secrets: Literal["mask", "refuse", "off"] = "mask"
    encryption: EncryptionSettings = Field(default_factory=EncryptionSettings)


class NotebookConfig(BaseModel):
    """The contents of ``config.yaml``."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    backend: str = "sqlite"
    sqlite_synchronous: Literal["NORMAL", "FULL", "EXTRA"] = "FULL"
    session_notebook: SessionBudgets = Field(default_factory=SessionBudgets)
    chat: ChatSettings = Field(default_factory=ChatSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)
    privacy: PrivacySettings = Field(default_factory=PrivacySettings)
    moments: MomentLimits = Field(default_factory=MomentLimits)
    facts: FactSettings = Field(default_factory=FactSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    guests: GuestLimits = Field(default_factory=GuestLimits)


# -- the environment --------------------------------------------------------------------------


def environment_value(name: str) -> str | None:
    """The process's environment variable ``name`` (None when unset): the package's only
    read of its environment; the variables it reads are in the module's table."""
    return os.environ.get(name)


def model_from_env() -> str | None:
    """``AGENT_NOTEBOOK_MODEL``: the chat model when neither an argument nor ``chat.model``
    names one."""
    return environment_value(MODEL_ENV)


def chat_model_name(config: NotebookConfig) -> str | None:
    """The chat model's name: ``chat.model``, else ``AGENT_NOTEBOOK_MODEL`` (None: neither)."""
    return config.chat.model or model_from_env()


def judge_model_name(config: NotebookConfig) -> str | None:
    """The facts judge's chat model: ``facts.judge_model``, else the chat model's."""
    return config.facts.judge_model or chat_model_name(config)


def summarizer_model_name(config: NotebookConfig) -> str | None:
    """The ``llm`` compaction summarizer's chat model: ``compaction.model``, else the chat
    model's."""
    return config.compaction.model or chat_model_name(config)


def embedder_from_env() -> str | None:
    """``AGENT_NOTEBOOK_EMBEDDER``, which takes precedence over ``search.embedder``."""
    return environment_value(EMBEDDER_ENV)


def postgres_timeout_s() -> float:
    """``AGENT_NOTEBOOK_PG_TIMEOUT_S`` (default 60): a positive number of seconds."""
    found = environment_value(PG_TIMEOUT_ENV)
    text = "60" if found is None else found
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise InvalidInput(
            f"{PG_TIMEOUT_ENV}={text!r}: give a number of seconds above 0, for example 60"
        )
    return seconds


def postgres_pool_size() -> int:
    """``AGENT_NOTEBOOK_PG_POOL_SIZE`` (default 8): a number of connections, 1 or more."""
    given = (environment_value(PG_POOL_SIZE_ENV) or "").strip()
    if not given:
        return DEFAULT_PG_POOL_SIZE
    if not given.isdigit() or int(given) < 1:
        raise InvalidInput(
            f"{PG_POOL_SIZE_ENV}={given!r} is not a number of connections; give 1 or more "
            f"(default {DEFAULT_PG_POOL_SIZE})"
        )
    return int(given)


def progress_every_s(default: float) -> float:
    """``AGENT_NOTEBOOK_PROGRESS_EVERY`` (seconds, at least 0), else ``default``."""
    raw = environment_value(PROGRESS_EVERY_ENV)
    if raw is None:
        return default
    try:
        return max(0.0, float(raw))
    except ValueError:
        raise InvalidInput(
            f"{PROGRESS_EVERY_ENV}={raw!r} is not a number of seconds (for example 5)"
        ) from None


def resolve_home(home: Path | str | None = None) -> Path:
    chosen = home if home is not None else environment_value(HOME_ENV) or DEFAULT_HOME
    return Path(chosen).expanduser().absolute()


def load_config(home: Path) -> NotebookConfig:
    path = home / CONFIG_FILE
    if not path.exists():
        return NotebookConfig()
    data = yamlcodec.load_data(yamlcodec.read_text(path), path) or {}
    try:
        return NotebookConfig.model_validate(data)
    except ValidationError as err:
        raise InvalidInput(
            f"{path}: {_as_written(describe_validation_error(err, NotebookConfig), data)}; fix "
            "the file or delete it to use defaults"
        ) from None


def _as_written(message: str, data: object) -> str:
    """``message`` naming a flat ``search:`` key as the file wrote it (``search.rrf_k``),
    not by the group it was read into (``search.fusion.rrf_k``)."""
    search = data.get("search") if isinstance(data, dict) else None
    if isinstance(search, dict):
        for key in FLAT_SEARCH_KEYS.keys() & search.keys():
            group, name = FLAT_SEARCH_KEYS[key]
            message = message.replace(f"search.{group}.{name}:", f"search.{key}:")
    return message


def write_config(home: Path, config: NotebookConfig) -> Path:
    path = home / CONFIG_FILE
    files.write_atomic(path, yamlcodec.dump_record(config).encode())
    return path


def backend_location(home: Path, config: NotebookConfig, backend: str | None = None) -> str:
    chosen = backend or environment_value(BACKEND_ENV) or config.backend
    if chosen == "sqlite":
        return str(home / DB_FILE)
    if chosen == "yaml":
        return f"yaml://{home}"
    return chosen


#: Every process that opens a home holds a shared ``flock`` on this file; a key rotation
#: holds it exclusively, so that no process writes under the old key while it runs.
IN_USE_FILE = ".in-use"
#: How long an open waits for a running key rotation, and a key rotation for the
#: processes that have the home open (a CLI command in flight ends by then; a server not).
ROTATION_WAIT_S = 60.0
USERS_WAIT_S = 5.0


def use_lock(home: Path, *, exclusive: bool) -> files.UseLock:
    """Hold ``home``'s in-use lock: shared to use the notebook, exclusive to have it alone."""
    path = home / IN_USE_FILE

    def busy() -> str:
        others = sorted(files.lock_holders(path) - {os.getpid()})
        pids = f" (pid {', '.join(map(str, others))})" if others else ""
        if exclusive:
            return (
                f"{home}: this needs the notebook to itself, and other processes have it "
                f"open{pids}: stop 'agent-notebook serve', 'agent-notebook mcp' and any program "
                "using this home, then run it again; nothing was changed"
            )
        return (
            f"{home}: a key rotation has this notebook to itself{pids} and was still running "
            f"after {ROTATION_WAIT_S:.0f}s; retry when it is done"
        )

    timeout = USERS_WAIT_S if exclusive else ROTATION_WAIT_S
    return files.UseLock(path, exclusive=exclusive, timeout_s=timeout, busy=busy)
