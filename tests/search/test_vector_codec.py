"""Moment vectors are stored as 4-bit integers with a scale (issue 17: bytes on disk):
``dim / 2 + 5`` bytes, cosine about 0.99 with the float vector and the same nearest texts,
and a notebook whose vectors were stored as int8 or float16 (before) searches the same
without a reindex."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agent_notebook.embed import MiniLmEmbedder, default_embedder
from agent_notebook.errors import StorageError
from agent_notebook.model import moment_number
from agent_notebook.notebook.facade import Notebook
from agent_notebook.search.semantic import decode_vector, encode_int8, encode_vector
from agent_notebook.search.vectors import SAME_VECTOR
from agent_notebook.storage import SqliteBackend

TEXTS = ["I am vegetarian", "The train to Lyon leaves at 7:40", "My sister has a puppy"]


@pytest.fixture(scope="module")
def minilm() -> MiniLmEmbedder:
    embedder = default_embedder()
    assert isinstance(embedder, MiniLmEmbedder)
    return embedder


def test_int4_keeps_the_direction_in_an_eighth_of_the_bytes(minilm: MiniLmEmbedder) -> None:
    vectors = np.asarray(minilm.embed_documents(TEXTS), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    stored = []
    for vector in vectors:
        blob = encode_vector(vector)
        assert len(blob) == minilm.dim // 2 + 5  # against 4 * dim as float32
        back = decode_vector(blob, minilm.dim)
        assert back.dtype == np.float32 and float(back @ vector) > 0.98
        assert decode_vector(blob, minilm.dim).tobytes() == back.tobytes()  # deterministic
        stored.append(back)
    queries = ["food without meat", "when does the train go", "a young dog"]
    asked = np.asarray(minilm.embed_documents(queries), dtype=np.float32)
    # every query finds its text first, and the scores move by less than 0.02
    assert (np.argmax(asked @ np.stack(stored).T, axis=1) == [0, 1, 2]).all()
    assert np.abs(asked @ np.stack(stored).T - asked @ vectors.T).max() < 0.02
    for odd in (np.zeros(8, dtype=np.float32), np.ones(7, dtype=np.float32)):
        blob = encode_vector(odd)
        assert len(blob) == (odd.size + 1) // 2 + 5
        assert float(np.linalg.norm(decode_vector(blob, odd.size))) in (0.0, pytest.approx(1.0))
    assert float(decode_vector(encode_vector(np.ones(7, dtype=np.float32)), 7) @ np.ones(7)) > 2.6


def test_an_int8_vector_stored_before_still_reads(minilm: MiniLmEmbedder) -> None:
    vector = np.asarray(minilm.embed_documents(TEXTS[:1])[0], dtype=np.float32)
    vector /= np.linalg.norm(vector)
    old = encode_int8(vector)
    assert len(old) == minilm.dim + 5
    assert float(decode_vector(old, minilm.dim) @ vector) >= SAME_VECTOR


def test_a_float16_vector_stored_before_still_reads() -> None:
    vector = np.random.default_rng(3).standard_normal(384).astype(np.float32)
    vector /= np.linalg.norm(vector)
    old = vector.astype("<f2").tobytes()  # the format before int8
    assert float(decode_vector(old, 384) @ vector) > 0.9999
    with pytest.raises(StorageError, match="reindex"):
        decode_vector(old[:100], 384)


def test_a_notebook_with_float16_vectors_searches_without_a_reindex(
    minilm: MiniLmEmbedder, tmp_path: Path
) -> None:
    path = tmp_path / "notebook.db"
    with Notebook(SqliteBackend(path), embedder=minilm, background_embedding=False) as nb:
        session = nb.start_session("old vectors")
        moments = nb.record_many(session.id, [{"text": text} for text in TEXTS])
        vectors = np.asarray(minilm.embed_documents(TEXTS), dtype=np.float32)
        nb.backend.put_vectors(  # as the notebook stored them before: float16
            minilm.model_id,
            [
                (moment_number(m.id), text, v.astype("<f2").tobytes())
                for m, text, v in zip(moments, TEXTS, vectors, strict=True)
            ],
        )
    with Notebook(SqliteBackend(path), embedder=minilm, background_embedding=False) as nb:
        assert nb.unembedded() == 0
        hits = nb.search("somewhere to eat without meat", mode="vector", limit=1)
        assert hits[0].moment.content.text == "I am vegetarian"
        nb.record(nb.start_session("new").id, "The dog needs a walk at noon")
        assert nb.reindex() == 1  # the new moment only, stored as int4
        sizes = sorted(len(blob) for _, blob in nb.backend.get_vectors(minilm.model_id))
        assert sizes == [minilm.dim // 2 + 5] + [2 * minilm.dim] * 3
        hits = nb.search("walking the dog at midday", mode="vector", limit=1)
        assert hits[0].moment.content.text == "The dog needs a walk at noon"
