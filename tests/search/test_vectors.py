"""The in-process vector index, on real numpy and faiss: exact search against brute force,
the HNSW mode's recall and filtering, upserts and removals, files, and threads."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path

import faiss
import numpy as np
import pytest
from numpy.typing import NDArray

from agent_notebook.errors import CorruptFile, InvalidInput
from agent_notebook.search import vectors as vectors_module
from agent_notebook.search.vectors import VectorIndex
from tests.support.waiting import HANG_GUARD_S

DIM = 64
MODEL = "test-model"


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> NDArray[np.float32]:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def brute(
    keys: NDArray[np.int64],
    matrix: NDArray[np.float32],
    q: NDArray[np.float32],
    k: int,
    allowed: set[int] | None = None,
) -> list[tuple[int, float]]:
    scores = matrix @ q
    order = np.argsort(-scores, kind="stable")
    ranked = [(int(keys[i]), float(scores[i])) for i in order]
    if allowed is not None:
        ranked = [(key, s) for key, s in ranked if key in allowed]
    return ranked[:k]


def assert_same(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    assert [key for key, _ in found] == [key for key, _ in expected]
    np.testing.assert_allclose([s for _, s in found], [s for _, s in expected], atol=1e-5)


@pytest.fixture(scope="module")
def data() -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    rng = np.random.default_rng(7)
    keys = rng.permutation(np.arange(1, 6001, dtype=np.int64))[:2000]  # sparse, unordered
    return keys, unit(rng, 2000)


def snapshot(index: VectorIndex, queries: NDArray[np.float32]) -> list[list[tuple[int, float]]]:
    return [index.search(q, 10) for q in queries]


# -- exact mode ----------------------------------------------------------------------------


def test_exact_search_equals_brute_force(
    data: tuple[NDArray[np.int64], NDArray[np.float32]],
) -> None:
    keys, matrix = data
    index = VectorIndex(DIM, MODEL)
    for start in range(0, len(keys), 300):  # batches, as the embedding worker adds them
        index.add(keys[start : start + 300].tolist(), matrix[start : start + 300])
    assert len(index) == 2000 and not index.approximate
    rng = np.random.default_rng(1)
    key_list = keys.tolist()
    for q in unit(rng, 5):
        for k in (1, 10, 50, 2000, 5000):
            assert_same(index.search(q, k), brute(keys, matrix, q, k))
        for size in (3, 100, 1500):  # a few rows gathered; most rows scored then picked
            allowed = {int(x) for x in rng.choice(key_list, size, replace=False)}
            for k in (1, 10, 50):
                expected = brute(keys, matrix, q, k, allowed)
                assert_same(index.search(q, k, allowed=allowed), expected)
                assert_same(index.search(q, k, allowed=sorted(allowed)), expected)
        allowed = {key_list[0], 999_999}  # keys without a vector are simply not found
        assert [key for key, _ in index.search(q, 5, allowed=allowed)] == [key_list[0]]
        assert index.search(q, 5, allowed=set()) == []
        twice = index.search(q, 5, allowed=[key_list[1], key_list[1], key_list[2]])
        assert sorted(key for key, _ in twice) == sorted(key_list[1:3])  # each key once
        assert index.search(q, 0) == []


def test_empty_index_finds_nothing() -> None:
    index = VectorIndex(DIM, MODEL)
    q = unit(np.random.default_rng(0), 1)[0]
    assert index.search(q, 10) == [] and index.search(q, 10, allowed={1}) == []
    assert len(index) == 0 and 1 not in index


def test_upsert_replaces_and_remove_removes() -> None:
    rng = np.random.default_rng(2)
    index = VectorIndex(DIM, MODEL)
    first = unit(rng, 3)
    index.add([1, 2, 3], first)
    assert len(index) == 3 and 2 in index and 4 not in index
    assert index.search(first[1], 1)[0][0] == 2

    replacement = unit(rng, 1)
    index.add([2], replacement)  # upsert: same key, new vector
    assert len(index) == 3
    assert_same(index.search(replacement[0], 1), [(2, 1.0)])
    assert 2 not in [key for key, _ in index.search(first[1], 3)[:1]]

    index.remove([1, 99])  # 99 was never there: ignored
    assert len(index) == 2 and 1 not in index
    assert {key for key, _ in index.search(first[0], 10)} == {2, 3}
    index.remove([3, 2])
    assert len(index) == 0 and index.search(first[0], 10) == []
    index.add([3], first[2:3])  # the freed rows are reused
    assert_same(index.search(first[2], 5), [(3, 1.0)])


def test_vectors_are_normalised_and_copied() -> None:
    index = VectorIndex(4, MODEL)
    vector = np.array([[3.0, 0.0, 4.0, 0.0]], dtype=np.float32)
    index.add([5], vector)
    vector[0, 0] = -100.0  # the caller's array is not kept
    [(key, score)] = index.search(np.array([0.6, 0.0, 0.8, 0.0], dtype=np.float32), 1)
    assert key == 5 and score == pytest.approx(1.0, abs=1e-6)
    [(_, score)] = index.search(np.array([0.0, 0.0, 2.0, 0.0], dtype=np.float32), 1)
    assert score == pytest.approx(0.8, abs=1e-6)  # a cosine, whatever the query's length


@pytest.mark.parametrize(
    ("keys", "vectors", "message"),
    [
        ([10, 11], np.ones((2, DIM + 1), np.float32), "vectors of"),
        ([10, 11], np.ones((3, DIM), np.float32), "vectors of"),
        ([10], np.ones(DIM, np.float32), "vectors of"),
        ([10, 11], np.full((2, DIM), np.nan, np.float32), "NaN"),
        ([10, 11], np.array([[np.inf] * DIM, [1.0] * DIM], np.float32), "NaN or infinite"),
        ([10, 10], np.ones((2, DIM), np.float32), "distinct"),
        ([0, 11], np.ones((2, DIM), np.float32), "moment numbers"),
        ([1.5, 11], np.ones((2, DIM), np.float32), "integers"),
        (["m_1", "m_2"], np.ones((2, DIM), np.float32), "integers"),
        ([10, 11], np.ones((2, DIM), np.int64), "floats"),
    ],
)
def test_invalid_input_changes_nothing(keys: list[object], vectors: object, message: str) -> None:
    rng = np.random.default_rng(3)
    index = VectorIndex(DIM, MODEL)
    base = unit(rng, 3)
    index.add([1, 2, 10], base)
    q = base[2]
    before = index.search(q, 10)
    with pytest.raises(InvalidInput, match=message):
        index.add(keys, vectors)  # type: ignore[arg-type]
    assert len(index) == 3 and 11 not in index
    assert index.search(q, 10) == before


@pytest.mark.parametrize(
    "query",
    [np.ones(DIM + 1, np.float32), np.ones((2, DIM), np.float32), np.full(DIM, np.nan, np.float32)],
)
def test_invalid_query_is_rejected(query: NDArray[np.float32]) -> None:
    index = VectorIndex(DIM, MODEL)
    index.add([1], unit(np.random.default_rng(4), 1))
    with pytest.raises(InvalidInput):
        index.search(query, 5)


# -- approximate mode ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def big() -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    rng = np.random.default_rng(11)
    return np.arange(1, 3001, dtype=np.int64), unit(rng, 3000)


def approximate_index(big: tuple[NDArray[np.int64], NDArray[np.float32]]) -> VectorIndex:
    keys, matrix = big
    index = VectorIndex(DIM, MODEL, exact_limit=200)
    for start in range(0, len(keys), 256):
        index.add(keys[start : start + 256].tolist(), matrix[start : start + 256])
    assert index.wait_idle(HANG_GUARD_S)
    assert index.approximate
    return index


def test_approximate_recall(big: tuple[NDArray[np.int64], NDArray[np.float32]]) -> None:
    keys, matrix = big
    index = approximate_index(big)
    queries = unit(np.random.default_rng(12), 50)
    hits = 0
    for q in queries:
        found = index.search(q, 10)
        expected = brute(keys, matrix, q, 10)
        hits += len({key for key, _ in found} & {key for key, _ in expected})
        scores = [s for _, s in found]
        assert scores == sorted(scores, reverse=True)
        for key, score in found:  # scores are exact cosines even when the ranking is not
            assert score == pytest.approx(float(matrix[key - 1] @ q), abs=1e-5)
    assert hits / (10 * len(queries)) >= 0.9


def test_approximate_removal_and_allowed_never_leak(
    big: tuple[NDArray[np.int64], NDArray[np.float32]], monkeypatch: pytest.MonkeyPatch
) -> None:
    keys, matrix = big
    index = approximate_index(big)
    rng = np.random.default_rng(13)
    removed = {int(x) for x in rng.choice(keys, 250, replace=False)}  # < 10%: no rebuild
    index.remove(removed)
    assert index.approximate and len(index) == 2750
    queries = unit(rng, 20)
    for q in queries:
        assert not {key for key, _ in index.search(q, 50)} & removed
    for q in matrix[sorted(removed)[:20]]:  # a removed vector's own query: its key is gone
        assert not {key for key, _ in index.search(q, 10)} & removed

    live = sorted(set(keys.tolist()) - removed)
    # Large allowed sets go through the graph with a filter; force that path at this size.
    monkeypatch.setattr(vectors_module, "SMALL_ALLOWED", 10)
    for size in (20, 300, 2000):
        allowed = {int(x) for x in rng.choice(live, size, replace=False)} | set(removed)
        for q in queries[:5]:
            found = index.search(q, 10, allowed=allowed)
            assert len(found) == 10
            assert {key for key, _ in found} <= allowed - removed
            if size == 20:  # scored exactly: the true best
                live_allowed = allowed - removed
                expected = brute(keys, matrix, q, 10, live_allowed)
                assert_same(found, expected)

    more = {int(x) for x in rng.choice(live, 300, replace=False)}  # now > 10% stale: rebuild
    index.remove(more)
    assert index.wait_idle(HANG_GUARD_S)
    assert index.approximate and len(index) == 2450
    gone = removed | more
    for q in queries:
        found = index.search(q, 20)
        assert len(found) == 20 and not {key for key, _ in found} & gone


def test_approximate_upserts(big: tuple[NDArray[np.int64], NDArray[np.float32]]) -> None:
    keys, matrix = big
    index = approximate_index(big)
    # The same vectors again, as a re-embedding of the same text differs (in the last bits):
    # no churn.
    nudged = matrix[:500] + 1e-5 * np.random.default_rng(15).standard_normal(matrix[:500].shape)
    stored = (nudged / np.linalg.norm(nudged, axis=1, keepdims=True)).astype(np.float32)
    index.add(keys[:500].tolist(), stored)
    assert index._graph is not None and index._graph.stale == 0
    # New vectors for old keys are found under the new vector, not the old one.
    fresh = unit(np.random.default_rng(14), 5)
    index.add([1, 2, 3, 4, 5], fresh)
    assert len(index) == 3000
    for i, q in enumerate(fresh):
        assert_same(index.search(q, 1), [(i + 1, 1.0)])
    for i in range(5):
        assert (i + 1) not in [key for key, _ in index.search(matrix[i], 3)]


def test_falls_back_to_exact_when_small_again(
    big: tuple[NDArray[np.int64], NDArray[np.float32]],
) -> None:
    keys, matrix = big
    index = approximate_index(big)
    index.remove(keys[150:].tolist())  # far beyond a tenth stale, and under the limit
    assert index.wait_idle(HANG_GUARD_S)
    assert not index.approximate and len(index) == 150
    q = unit(np.random.default_rng(15), 1)[0]
    assert_same(index.search(q, 20), brute(keys[:150], matrix[:150], q, 20))


# -- files ---------------------------------------------------------------------------------


def test_save_load_exact(
    tmp_path: Path, data: tuple[NDArray[np.int64], NDArray[np.float32]]
) -> None:
    keys, matrix = data
    index = VectorIndex(DIM, MODEL)
    index.add(keys.tolist(), matrix)
    index.remove(keys[:100].tolist())
    path = tmp_path / "embeddings.faiss"
    index.save(path)
    for saved in (path, tmp_path / "embeddings.faiss.json"):
        assert stat.S_IMODE(os.stat(saved).st_mode) == 0o600
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]

    on_disk = faiss.read_index(str(path))  # a plain faiss file
    assert isinstance(on_disk, faiss.IndexIDMap2) and on_disk.ntotal == 1900
    assert isinstance(faiss.downcast_index(on_disk.index), faiss.IndexFlatIP)
    meta = json.loads((tmp_path / "embeddings.faiss.json").read_text())
    assert meta["model_id"] == MODEL and meta["dim"] == DIM and meta["count"] == 1900

    loaded = VectorIndex.load(path, model_id=MODEL, dim=DIM)
    assert loaded is not None and len(loaded) == 1900 and not loaded.approximate
    assert keys[0] not in loaded and keys[100] in loaded
    queries = unit(np.random.default_rng(16), 10)
    assert snapshot(loaded, queries) == snapshot(index, queries)
    allowed = set(keys[50:400].tolist())
    assert loaded.search(queries[0], 5, allowed=allowed) == index.search(
        queries[0], 5, allowed=allowed
    )


def test_save_load_approximate(
    tmp_path: Path, big: tuple[NDArray[np.int64], NDArray[np.float32]]
) -> None:
    keys, _ = big
    index = approximate_index(big)
    index.remove(keys[:100].tolist())  # stale entries travel as id -1
    path = tmp_path / "embeddings.faiss"
    index.save(path)

    on_disk = faiss.read_index(str(path))
    assert isinstance(on_disk, faiss.IndexIDMap2)
    assert isinstance(faiss.downcast_index(on_disk.index), faiss.IndexHNSWFlat)
    assert int((faiss.vector_to_array(on_disk.id_map) == -1).sum()) == 100

    loaded = VectorIndex.load(path, model_id=MODEL, dim=DIM, exact_limit=200)
    assert loaded is not None and loaded.approximate and len(loaded) == 2900
    queries = unit(np.random.default_rng(17), 20)
    assert snapshot(loaded, queries) == snapshot(index, queries)
    assert all(key > 100 for result in snapshot(loaded, queries) for key, _ in result)

    loaded.add([5000], queries[:1])  # the loaded graph keeps growing
    assert loaded.search(queries[0], 1)[0][0] == 5000

    # The default limit is far above 2,900: the same file loads as an exact index.
    exact = VectorIndex.load(path, model_id=MODEL, dim=DIM)
    assert exact is not None and not exact.approximate and len(exact) == 2900
    assert [r[0][0] for r in snapshot(exact, queries)] == [
        r[0][0] for r in snapshot(index, queries)
    ]


def test_flat_file_above_the_limit_builds_the_graph(
    tmp_path: Path, big: tuple[NDArray[np.int64], NDArray[np.float32]]
) -> None:
    keys, matrix = big
    index = VectorIndex(DIM, MODEL)
    index.add(keys.tolist(), matrix)
    index.save(tmp_path / "e.faiss")
    loaded = VectorIndex.load(tmp_path / "e.faiss", model_id=MODEL, dim=DIM, exact_limit=200)
    assert loaded is not None
    assert loaded.wait_idle(HANG_GUARD_S) and loaded.approximate and len(loaded) == 3000


def test_load_refuses_other_models_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.faiss"
    assert VectorIndex.load(path, model_id=MODEL, dim=DIM) is None
    index = VectorIndex(DIM, MODEL)
    index.add([1, 2], unit(np.random.default_rng(18), 2))
    index.save(path)
    assert VectorIndex.load(path, model_id="another-model", dim=DIM) is None
    assert VectorIndex.load(path, model_id=MODEL, dim=DIM * 2) is None
    assert VectorIndex.load(path, model_id=MODEL, dim=DIM) is not None
    (tmp_path / "embeddings.faiss.json").unlink()  # a save interrupted between its files
    assert VectorIndex.load(path, model_id=MODEL, dim=DIM) is None


def test_empty_index_round_trips(tmp_path: Path) -> None:
    VectorIndex(DIM, MODEL).save(tmp_path / "e.faiss")
    loaded = VectorIndex.load(tmp_path / "e.faiss", model_id=MODEL, dim=DIM)
    assert loaded is not None and len(loaded) == 0


def corrupt_truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:200])


def corrupt_garbage(path: Path) -> None:
    path.write_bytes(b"not a faiss index at all" * 10)


def corrupt_sidecar(path: Path) -> None:
    path.with_name(path.name + ".json").write_text("{ not json")


def corrupt_wrong_type(path: Path) -> None:
    """A real faiss file with a matching checksum, but not one this module writes."""
    flat = faiss.IndexFlatIP(DIM)
    flat.add(unit(np.random.default_rng(19), 2))
    data = faiss.serialize_index(flat).tobytes()
    path.write_bytes(data)
    sidecar = path.with_name(path.name + ".json")
    meta = json.loads(sidecar.read_text())
    import hashlib

    meta.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    sidecar.write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "damage", [corrupt_truncate, corrupt_garbage, corrupt_sidecar, corrupt_wrong_type]
)
def test_damaged_files_raise_corrupt_file(tmp_path: Path, damage: object) -> None:
    path = tmp_path / "embeddings.faiss"
    index = VectorIndex(DIM, MODEL)
    index.add([1, 2, 3], unit(np.random.default_rng(20), 3))
    index.save(path)
    damage(path)  # type: ignore[operator]
    with pytest.raises(CorruptFile, match="agent-notebook reindex") as caught:
        VectorIndex.load(path, model_id=MODEL, dim=DIM)
    assert str(tmp_path) in str(caught.value)


# -- threads -------------------------------------------------------------------------------


def test_concurrent_adds_and_searches() -> None:
    """A worker adds (and crosses into the graph mode, built in the background) while
    another thread searches until it is done; every answer is consistent."""
    rng = np.random.default_rng(21)
    matrix = unit(rng, 6000)
    queries = unit(rng, 32)
    index = VectorIndex(DIM, MODEL, exact_limit=1000)
    errors: list[Exception] = []
    stop = threading.Event()

    def writer() -> None:
        try:
            for start in range(0, len(matrix), 64):
                batch = matrix[start : start + 64]
                index.add(list(range(start + 1, start + 1 + len(batch))), batch)
                if start % 640 == 0:
                    index.remove([start + 1])  # and a few removals
                time.sleep(0.005)
        except Exception as err:
            errors.append(err)
            raise
        finally:
            stop.set()

    thread = threading.Thread(target=writer)
    thread.start()
    searches = 0
    while searches < 20 or not stop.is_set():  # searching while the writer writes
        q = queries[searches % len(queries)]
        allowed = set(range(1, 3000, 3)) if searches % 2 else None
        found = index.search(q, 10, allowed=allowed)
        keys = [key for key, _ in found]
        assert len(keys) == len(set(keys)) <= 10
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        for key, score in found:
            assert score == pytest.approx(float(matrix[key - 1] @ q), abs=1e-5)
            assert allowed is None or key in allowed
        searches += 1
    thread.join()
    assert not errors
    assert index.wait_idle(HANG_GUARD_S) and index.approximate
    removed = {start + 1 for start in range(0, len(matrix), 640)}
    assert len(index) == 6000 - len(removed)
    for q in queries:
        assert not {key for key, _ in index.search(q, 20)} & removed
