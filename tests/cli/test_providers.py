"""Any provider by name (issue 43): ``search.embedder``, ``chat.model``, ``facts.judge_model``
and ``compaction.model`` take ``provider:model`` names. The provider here is ``fakeprov``,
LangChain's fake embeddings and chat models registered through the entry point groups by a
tiny distribution (tests/support/providers.py), as a user's package would register one; the
CLI runs as a real process reading a ``config.yaml`` that names it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.chat.models import ModelResolver, NotesChatModel, chat_model
from agent_notebook.errors import InvalidInput
from tests.support.clirun import cli, cli_process, text_cli
from tests.support.providers import fake_providers, on_pythonpath

MOMENTS = json.dumps(
    [
        {"text": "Book the train to Lyon for 7 June", "role": "user"},
        {"text": "My sister lives in Porto", "role": "user"},
    ]
)


def _home(tmp_path: Path, config: str) -> Path:
    home = tmp_path / "nb"
    home.mkdir(mode=0o700)
    _configure(home, config)
    return home


def _configure(home: Path, config: str) -> None:
    """Write ``config.yaml`` owner-only, as ``init`` would (no warning about it)."""
    path = home / "config.yaml"
    path.write_text(config, encoding="utf-8")
    path.chmod(0o600)


def _vectors(home: Path) -> dict[str, int]:
    """How many stored vectors each model made (read with no embedder of this process)."""
    with Notebook.open(home, create=False, embedder=None) as nb:
        return {m: len(nb.backend.get_vectors(m)) for m in nb.backend.vector_models()}


def _moments(home: Path) -> int:
    with Notebook.open(home, create=False, embedder=None) as nb:
        return nb.backend.count_moments()


@pytest.mark.slow  # five processes: about 10 s on a loaded machine
def test_a_provider_embedder_named_in_config_embeds_tags_and_reembeds_on_a_new_name(
    tmp_path: Path,
) -> None:
    env = on_pythonpath(fake_providers(tmp_path / "dist"))
    home = _home(tmp_path, 'search:\n  embedder: "fakeprov:det-16"\n')

    recorded = cli_process(home, "record", "--task", "Trip", stdin=MOMENTS.encode(), env=env)
    assert recorded.returncode == 0, recorded.stderr.decode()
    found = cli_process(home, "search", "train to Lyon", "--format", "json", env=env)
    assert found.returncode == 0, found.stderr.decode()
    assert "Book the train to Lyon" in found.stdout.decode()
    assert _vectors(home) == {"fakeprov:det-16": 2}  # tagged with the provider:model name

    doctor = cli_process(home, "doctor", "--format", "json", env=env)
    checks = json.loads(doctor.stdout)
    assert checks["embedder"] == "fakeprov:det-16 (provider fakeprov, 16 dimensions): answers"
    assert checks["search"].startswith("hybrid") and checks["unembedded"] == 0

    # Another model by name: its vectors are made anew at the next search (as for any
    # model change), the earlier model's are never compared with them.
    _configure(home, 'search:\n  embedder: "fakeprov:det-32"\n')
    again = cli_process(home, "search", "sister", "--format", "json", env=env)
    assert again.returncode == 0, again.stderr.decode()
    assert "Porto" in again.stdout.decode()
    assert _vectors(home).get("fakeprov:det-32") == 2


def test_an_unknown_provider_is_refused_at_open_and_nothing_is_recorded(tmp_path: Path) -> None:
    env = on_pythonpath(fake_providers(tmp_path / "dist"))
    home = _home(tmp_path, 'search:\n  embedder: "nosuch:model-1"\n')

    refused = cli_process(home, "record", "--task", "Trip", stdin=MOMENTS.encode(), env=env)
    assert refused.returncode == 1
    said = refused.stderr.decode()
    assert f"search.embedder in {home / 'config.yaml'}" in said
    assert "no embedding model provider 'nosuch'" in said
    assert "agent_notebook.embeddings" in said and "openai" in said  # how to fix it
    assert "Traceback" not in said
    assert _moments(home) == 0

    # The environment's name is checked the same way, and named as the setting.
    _configure(home, "search:\n  embedder: default\n")
    by_env = text_cli(
        home,
        "record",
        "--task",
        "T",
        stdin=MOMENTS,
        env={"AGENT_NOTEBOOK_EMBEDDER": "nosuch:model-1"},
    )
    assert by_env.returncode == 1
    assert by_env.stderr.startswith("error: AGENT_NOTEBOOK_EMBEDDER: no embedding model")
    assert _moments(home) == 0


def test_a_name_that_is_no_embedder_is_refused_by_the_config_file(tmp_path: Path) -> None:
    home = _home(tmp_path, "search:\n  embedder: minilm-large\n")
    refused = text_cli(home, "sessions")
    assert refused.returncode == 1
    assert "search.embedder" in refused.stderr and "provider:model" in refused.stderr


@pytest.mark.skipif(
    importlib.util.find_spec("langchain_openai") is not None, reason="langchain-openai is here"
)
def test_a_missing_provider_package_says_what_to_install(tmp_path: Path) -> None:
    home = _home(tmp_path, 'search:\n  embedder: "openai:text-embedding-3-small"\n')
    refused = text_cli(home, "search", "train")
    assert refused.returncode == 1
    assert "the embedding model 'openai:text-embedding-3-small'" in refused.stderr
    assert "pip install 'langchain-openai'" in refused.stderr


def test_a_provider_that_does_not_answer_fails_clearly_and_doctor_names_every_model(
    tmp_path: Path,
) -> None:
    """The provider's server is away: a search fails saying so (which setting, what the
    provider said, what to do) and changes nothing; doctor names each model in use, its
    provider, and whether it answers."""
    env = on_pythonpath(fake_providers(tmp_path / "dist"))
    home = _home(
        tmp_path,
        'search:\n  embedder: "fakeprov:down"\n'
        'chat:\n  model: "fakeprov:say-ok"\n'
        'facts:\n  enabled: true\n  judge: true\n  judge_model: "fakeprov:down"\n'
        "compaction:\n  summarizer: llm\n  model: offline:notes\n",
    )
    with Notebook.open(home, embedder=None) as nb:  # a moment recorded before
        nb.record(nb.start_session("Trip").id, "Book the train to Lyon", role="user")

    failed = cli_process(home, "search", "train", env=env)
    assert failed.returncode == 1
    said = failed.stderr.decode()
    assert f"search.embedder in {home / 'config.yaml'}" in said
    assert "'fakeprov:down' did not answer: ConnectionError: connection refused" in said
    assert "Traceback" not in said
    assert _vectors(home) == {} and _moments(home) == 1

    doctor = cli_process(home, "doctor", "--format", "json", env=env)
    assert doctor.returncode == 0, doctor.stderr.decode()
    checks = json.loads(doctor.stdout)
    assert checks["embedder"].startswith(
        "fails: fakeprov:down (provider fakeprov) does not answer: ConnectionError"
    )
    assert checks["search"].startswith("fails") and checks["unembedded"] == 1
    assert checks["chat model"] == "fakeprov:say-ok (provider fakeprov): answers"
    assert checks["facts judge"] == (
        "fakeprov:down (provider fakeprov): does not answer: ConnectionError: connection refused"
    )
    assert checks["compaction summarizer"] == "llm: offline:notes: built in, offline (no call made)"


def test_the_offline_defaults_say_so_in_doctor_without_a_call(tmp_path: Path) -> None:
    home = _home(tmp_path, "search:\n  embedder: none\n")
    checks = json.loads(text_cli(home, "doctor", "--format", "json").stdout)
    assert checks["chat model"] == "none configured (set chat.model or AGENT_NOTEBOOK_MODEL)"
    assert checks["facts judge"].startswith("off")
    assert checks["compaction summarizer"] == "extractive (no model)"
    offline = json.loads(
        text_cli(
            home, "doctor", "--format", "json", env={"AGENT_NOTEBOOK_MODEL": "offline:notes"}
        ).stdout
    )
    assert offline["chat model"] == "offline:notes: built in, offline (no call made)"


# -- one resolver for the chat model, the judge and the summarizer ---------------------------


def test_chat_models_resolve_by_name_offline_registered_or_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(fake_providers(tmp_path / "dist")))
    assert isinstance(chat_model("offline:notes"), NotesChatModel)
    said = chat_model("fakeprov:say-hello", "facts.judge_model").invoke("hi")
    assert said.text == "hello"
    with pytest.raises(InvalidInput, match=r"^facts\.judge_model: no chat model provider 'nosuch'"):
        chat_model("nosuch:model", "facts.judge_model")
    resolver = ModelResolver("fakeprov:say-a")
    assert resolver.resolve() is resolver.resolve()  # made once
    with pytest.raises(InvalidInput, match=r"^compaction\.model: "):
        resolver.resolve("nosuch:x", "compaction.model")


def test_compaction_model_names_the_summarizer_by_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(fake_providers(tmp_path / "dist")))
    config = "search:\n  embedder: none\ncompaction:\n  summarizer: llm\n  model: {}\n"
    home = _home(tmp_path, config.format('"fakeprov:say-summary"'))
    assert cli(home, "compact", "--dry-run").returncode == 0
    _configure(home, config.format('"nosuch:x"'))
    refused = text_cli(home, "compact", "--dry-run")
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: compaction.model: no chat model provider 'nosuch'")
