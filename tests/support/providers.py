"""A tiny installed distribution registering fake model providers, as a user's package
would (issue 43): ``fakeprov`` in the entry point groups ``agent_notebook.embeddings`` and
``agent_notebook.chat_models``, over LangChain's fakes.

- ``fakeprov:det-<n>``: ``DeterministicFakeEmbedding`` of ``n`` dimensions (the same text
  always gets the same vector);
- ``fakeprov:down``: a provider whose server is away (every call: ``ConnectionError``);
- ``fakeprov:say-<word>``: a ``FakeListChatModel`` answering ``<word>``; ``fakeprov:down``
  as above.

:func:`fake_providers` writes it into a directory; put that directory on ``sys.path`` (a
process's ``PYTHONPATH``, :func:`on_pythonpath`) and ``importlib.metadata`` finds it.
"""

from __future__ import annotations

import os
from pathlib import Path

PROVIDER = "fakeprov"
MODULE = "an_fake_models"

SOURCE = """
from langchain_core.embeddings import Embeddings
from langchain_core.embeddings.fake import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel


class DownEmbeddings(Embeddings):
    def embed_documents(self, texts):
        raise ConnectionError("connection refused")

    def embed_query(self, text):
        raise ConnectionError("connection refused")


class DownChat(FakeListChatModel):
    def _call(self, *args, **kwargs):
        raise ConnectionError("connection refused")


def embeddings(model):
    if model == "down":
        return DownEmbeddings()
    return DeterministicFakeEmbedding(size=int(model.removeprefix("det-")))


def chat(model):
    if model == "down":
        return DownChat(responses=["never"])
    return FakeListChatModel(responses=[model.removeprefix("say-")])
"""


def fake_providers(root: Path) -> Path:
    """Write the distribution (its module and its ``.dist-info``) into ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{MODULE}.py").write_text(SOURCE, encoding="utf-8")
    info = root / f"{MODULE}-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {MODULE.replace('_', '-')}\nVersion: 1.0\n",
        encoding="utf-8",
    )
    (info / "entry_points.txt").write_text(
        f"[agent_notebook.embeddings]\n{PROVIDER} = {MODULE}:embeddings\n\n"
        f"[agent_notebook.chat_models]\n{PROVIDER} = {MODULE}:chat\n",
        encoding="utf-8",
    )
    return root


def on_pythonpath(root: Path) -> dict[str, str]:
    """The environment of a process that finds the distribution in ``root``."""
    rest = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(root), rest) if p)}
