"""The notebook's text vectors: embedded off the hot path, searched in process.

The storage backend holds each moment's vector (the source of truth); the moments without
one are the embedding queue, so a crash leaves moments unembedded, never lost. A worker
thread embeds that queue in batches after each write; :meth:`SemanticIndex.catch_up` does the
same in the foreground (``agent-notebook reindex``). The in-process :class:`VectorIndex` is
built from the stored vectors on first use and reads the newer changes before each search,
whoever made them (this process's worker or another process): on PostgreSQL a numbered
change log, removals included, and a claim per moment so that servers sharing the database
embed each moment once. The YAML layout's
``embeddings.faiss`` is that index saved at close, for faiss tools; a notebook rebuilds its
index from the stored vectors, which are the truth.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ..errors import CorruptFile, StorageError, VectorChangesPruned
from ..model import moment_number

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from ..embed import Embedder
    from ..model import Moment
    from ..storage import StorageBackend
    from .vectors import VectorIndex

__all__ = ["BATCH", "CHUNK", "SemanticIndex", "decode_vector", "encode_vector"]

#: Moments read from the queue at a time, then embedded shortest first so that the texts
#: run together (padded to the longest of them) have about the same length.
BATCH = 256
#: Moments embedded and stored together (one model run, one transaction): between two of
#: them the worker stops when told to and waits while a search runs. Small, because a chunk
#: under way is not interrupted: a turn that starts meanwhile shares the cores with it until
#: it ends (MiniLM costs about the same per text in a run of 1 as of 32 on two cores).
CHUNK = 8
#: How long the worker waits at most for a search to end before its next chunk.
YIELD_S = 0.5
#: Query vectors kept for reuse: a chat turn searches with the message it records next, so
#: the worker can take that moment's vector from here instead of embedding the text again;
#: as many as the worker reads at a time, so that a worker some turns behind still finds them.
RECENT_QUERIES = BATCH
#: Queries being prepared (or prepared and not yet searched) at most: each holds the worker.
PREPARED_QUERIES = 16
#: Where servers share the embedding work, how often (seconds) the worker looks again from
#: the first moment: a claim of a server killed mid-batch lapses after its lease (30 s).
TAKEOVER_S = 30.0
log = logging.getLogger(__name__)


#: The first byte of a vector stored as int8 (see :func:`encode_int8`).
INT8_TAG: Final = 0x51
#: The first byte of a vector stored as 4-bit integers (see :func:`encode_vector`).
INT4_TAG: Final = 0x34
#: The int4 step in the vector's RMS: values past 7 steps (2.45 RMS) are clipped, which costs
#: less than a step scaled to the peak (near-Gaussian components; Lloyd-Max's ~0.34).
INT4_STEP_RMS: Final = 0.35


def encode_vector(vector: NDArray[np.float32]) -> bytes:
    """Stored as 4-bit integers in -7..7 with one scale per vector: the tag byte ``0x34``,
    the scale (little-endian float32), then two values a byte (the even index in the low
    nibble), value = nibble * scale: ``dim / 2 + 5`` bytes, an eighth of float32's, half
    of int8's (the format before, issue 17). The cosine with the float vector is about
    0.99; held out on LoCoMo dev, hybrid R@5/R@10 were 72.2/80.3 against int8's 72.0/80.3
    (bench/retrieval_locomo.py). Both SQL backends store these bytes as they are."""
    import numpy as np

    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    rms = float(np.sqrt(np.mean(v * v))) if v.size else 0.0
    scale = INT4_STEP_RMS * rms if rms > 0 else 1.0
    q = np.clip(np.rint(v / scale), -7, 7).astype(np.int8)
    if q.size % 2:
        q = np.append(q, np.int8(0))
    packed = (q[0::2] & 0x0F) | ((q[1::2] & 0x0F) << 4)
    header: bytes = bytes([INT4_TAG]) + np.asarray(scale, dtype="<f4").tobytes()
    body: bytes = packed.astype(np.uint8).tobytes()
    return header + body


def encode_int8(vector: NDArray[np.float32]) -> bytes:
    """The int8 format written before (read as ever): the tag byte ``0x51``, the scale
    (little-endian float32), then ``dim`` signed bytes, value = byte * scale."""
    import numpy as np

    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    peak = float(np.abs(v).max()) if v.size else 0.0
    scale = peak / 127.0 if peak > 0 else 1.0
    quantised = np.clip(np.rint(v / scale), -127, 127).astype(np.int8)
    header: bytes = bytes([INT8_TAG]) + np.asarray(scale, dtype="<f4").tobytes()
    body: bytes = quantised.tobytes()
    return header + body


def _unpack_int4(data: bytes, dim: int) -> NDArray[np.float32]:
    import numpy as np

    packed = np.frombuffer(data, dtype=np.uint8, offset=5)
    q = np.empty(packed.size * 2, dtype=np.int8)
    q[0::2] = (packed & 0x0F).astype(np.int8)
    q[1::2] = (packed >> 4).astype(np.int8)
    q[q > 7] -= 16
    scale = np.frombuffer(data, dtype="<f4", count=1, offset=1)[0]
    vector: NDArray[np.float32] = q[:dim].astype(np.float32) * np.float32(scale)
    return vector


def decode_vector(data: bytes, dim: int) -> NDArray[np.float32]:
    """A stored vector of ``dim`` floats, unit length: int4 (:func:`encode_vector`), or
    int8 or float16 (``2 * dim`` bytes) as written before, told apart by their length."""
    import numpy as np

    if len(data) == dim + 5 and data[0] == INT8_TAG:
        scale = np.frombuffer(data, dtype="<f4", count=1, offset=1).astype(np.float32)
        vector: NDArray[np.float32] = np.frombuffer(data, dtype=np.int8, offset=5).astype(
            np.float32
        )
        vector *= scale
    elif len(data) == (dim + 1) // 2 + 5 and data[0] == INT4_TAG:
        vector = _unpack_int4(data, dim)
    elif len(data) == 2 * dim:
        vector = np.frombuffer(data, dtype="<f2").astype(np.float32)
    else:
        raise StorageError(
            f"a stored vector has {len(data)} bytes, which is not {dim} floats as int4 "
            f"({(dim + 1) // 2 + 5}), int8 ({dim + 5}) or float16 ({2 * dim}); run "
            "`agent-notebook reindex` to embed "
            "the moments again"
        )
    norm = float(np.linalg.norm(vector))
    return (vector / np.float32(norm)).astype(np.float32) if norm > 0 else vector


#: Indexes whose worker runs: stopped at exit when their notebook was never closed (a
#: daemon thread killed inside onnxruntime aborts the interpreter).
_running: weakref.WeakSet[SemanticIndex] = weakref.WeakSet()


@atexit.register
def _stop_workers() -> None:
    for index in list(_running):
        index.stop_worker()


class SemanticIndex:
    """Vectors of one notebook for one embedder. Thread-safe."""

    def __init__(
        self, backend: StorageBackend, embedder: Embedder, *, index_file: Path | None = None
    ) -> None:
        self.backend = backend
        self.embedder = embedder
        self.index_file = index_file  # where the index is saved (the YAML layout's file)
        self._index: VectorIndex | None = None
        self.loaded_from_file = False  # the index came from index_file, not the vectors
        self._through = 0  # the index holds the stored changes up to here (vector_changes)
        self._queued_after = 0  # every moment up to here had a vector at the last look
        self._full_pass_at = float("-inf")  # when the last pass from the first moment began
        self._lock = threading.RLock()
        self._embedding = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._worker: threading.Thread | None = None
        self._idle = threading.Condition()
        self._busy = False
        # Only for an embedder that gives a query and a document of one text the same vector.
        self._reuse_queries = bool(getattr(embedder, "symmetric", False))
        self._recent_queries: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
        self._recent_lock = threading.Lock()
        self._live = 0  # searches running now: the worker waits for them between chunks
        self._live_done = threading.Condition()
        self._prepared: OrderedDict[str, Future[NDArray[np.float32]]] = OrderedDict()
        self._preparer: ThreadPoolExecutor | None = None

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    # -- the index ---------------------------------------------------------------------------

    def index(self) -> VectorIndex:
        """The in-process index, brought up to date with the stored vectors."""
        from .vectors import VectorIndex

        with self._lock:
            if self._index is None:
                self._index = self._saved_index() or VectorIndex(self.embedder.dim, self.model_id)
            self._load_newer()
            return self._index

    def _saved_index(self) -> VectorIndex | None:
        """The index saved in ``index_file`` when it still holds exactly the stored vectors
        up to its last key (else None: the index is rebuilt from the stored vectors)."""
        from .vectors import VectorIndex

        if self.index_file is None:
            return None
        try:
            saved = VectorIndex.load(self.index_file, model_id=self.model_id, dim=self.embedder.dim)
        except CorruptFile as err:
            log.warning("%s; rebuilding it from the stored vectors", err)
            return None
        if saved is None or not len(saved):
            return None
        through = saved.last_key()
        newer = len(self.backend.get_vectors(self.model_id, after=through))
        stored = len(self.backend.get_vectors(self.model_id))
        if len(saved) + newer != stored:  # vectors added below its last key, or dropped
            return None
        self._through = through
        self.loaded_from_file = True
        return saved

    @property
    def position(self) -> int | None:
        """The last stored change the in-process index holds (None: not loaded yet)."""
        return None if self._index is None else self._through

    def _load_newer(self) -> None:
        """Apply the stored vector changes since the last look, in their order: the
        vectors other processes (other servers) wrote, and on a database server the
        ones they removed (a redaction there)."""
        import numpy as np

        from .vectors import VectorIndex

        assert self._index is not None
        dim = self._index.dim
        while True:
            try:
                changes, through = self.backend.vector_changes(
                    self.model_id, after=self._through, limit=4096
                )
            except VectorChangesPruned:  # too long since the last look: start again
                log.info("the vector changes since %d were pruned; reloading", self._through)
                self._index = VectorIndex(dim, self.model_id)
                self._through = 0
                continue
            if not changes:
                return
            # Runs of additions go in together; a removal is applied where it falls.
            start = 0
            for end in range(len(changes) + 1):
                if end < len(changes) and changes[end][1] is not None:
                    continue
                if end > start:
                    run = changes[start:end]
                    self._index.add(
                        [num for num, _ in run],
                        np.stack([decode_vector(blob, dim) for _, blob in run if blob is not None]),
                    )
                if end < len(changes):
                    self._index.remove([changes[end][0]])
                start = end + 1
            self._through = through

    def search(
        self,
        query: str,
        k: int,
        *,
        allowed: Collection[int] | None = None,
        latest: str | None = None,
        latest_weight: float = 0.0,
    ) -> list[tuple[str, float]]:
        """Moment ids nearest to ``query`` by cosine similarity, best first.

        ``latest`` (the last turns of a dialogue-long query, or the exchange around a
        user's last turns) is embedded on its own and added with ``latest_weight``: the
        query's vector leans to it."""
        with self._live_done:
            self._live += 1
        try:
            index = self.index()
            if not len(index) or k <= 0:
                return []
            vector = self._query_vector(query)
            if latest and latest_weight > 0:
                vector = vector + latest_weight * self._query_vector(latest)
            found = index.search(vector, k, allowed=allowed)
            return [(f"m_{num}", score) for num, score in found]
        finally:
            with self._live_done:
                self._live -= 1
                self._live_done.notify_all()

    def _yield_to_searches(self) -> None:
        """Wait (a little at most) while a search runs or a prepared query waits for its
        search: a live turn's context step (its query embedding, then the search with it)
        gets the cores, and the worker's next chunk starts after it."""
        with self._live_done:
            self._live_done.wait_for(lambda: not self._live or self._stopping, YIELD_S)

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Hold the worker while a chat turn runs: it waits (up to ``YIELD_S``) before its
        next batch or chunk, so the moments the turn records are embedded after it, not on
        the cores the rest of the turn (its checkpoint write) needs."""
        with self._live_done:
            self._live += 1
        try:
            yield
        finally:
            self._release(1)

    def prepare_query(self, query: str) -> None:
        """Start embedding ``query`` on a thread of its own: a search of it soon after
        takes that vector instead of embedding it again (a chat turn embeds its message
        while it reads the rest of its context and runs the lexical search)."""
        if self._stopping or not query.strip() or self._recent(query) is not None:
            return
        with self._recent_lock:
            if query in self._prepared:
                return
            if self._preparer is None:  # one thread, kept: a turn starts none
                self._preparer = ThreadPoolExecutor(1, thread_name_prefix="agent-notebook-query")
            # The worker leaves the cores to the turn from here until the search takes the
            # vector (not only while it is embedded: the turn's search follows).
            with self._live_done:
                self._live += 1
            self._prepared[query] = self._preparer.submit(self.embedder.embed_query, query)
            while len(self._prepared) > PREPARED_QUERIES:  # never searched: let go
                self._prepared.popitem(last=False)
                self._release(1)

    def _release(self, prepared: int) -> None:
        """``prepared`` queries were taken by their search (or dropped): the worker may go."""
        if prepared:
            with self._live_done:
                self._live -= prepared
                self._live_done.notify_all()

    def drop_prepared(self, query: str) -> None:
        """Let go of ``query``'s prepared vector if no search took it: it holds the worker
        (see :meth:`prepare_query`) until then."""
        with self._recent_lock:
            dropped = self._prepared.pop(query, None)
        if dropped is not None:
            self._release(1)

    def _prepared_vector(self, query: str) -> NDArray[np.float32] | None:
        with self._recent_lock:
            prepared = self._prepared.pop(query, None)
        if prepared is not None:
            self._release(1)  # the search holds the worker itself from here
        if prepared is None or prepared.exception() is not None:
            return None  # a failed one is embedded again by the caller, which reports why
        return prepared.result()

    def _query_vector(self, query: str) -> NDArray[np.float32]:
        vector = self._recent(query)
        if vector is None:
            vector = self._prepared_vector(query)
        if vector is None:
            vector = self.embedder.embed_query(query)
        self._keep_query(query, vector)
        return vector

    def _keep_query(self, query: str, vector: NDArray[np.float32]) -> None:
        """Keep a query's vector for the worker: the moment of the same text (the message a
        chat turn records next) takes it instead of being embedded again, prepared or not."""
        if not self._reuse_queries:
            return
        with self._recent_lock:
            self._recent_queries[query] = vector
            self._recent_queries.move_to_end(query)
            while len(self._recent_queries) > RECENT_QUERIES:
                self._recent_queries.popitem(last=False)

    def _recent(self, text: str) -> NDArray[np.float32] | None:
        with self._recent_lock:
            return self._recent_queries.get(text)

    def forget(self, numbers: list[int]) -> None:
        """Drop these moments' vectors from the in-process index (their stored vectors went
        with their text)."""
        with self._lock:
            if self._index is not None:
                self._index.remove(numbers)
        with self._recent_lock:  # no text of theirs stays, nor a vector made of it
            self._recent_queries.clear()
            dropped = len(self._prepared)
            self._prepared.clear()
        self._release(dropped)

    def purge(self) -> None:
        """Rewrite the saved index file now, without the vectors forgotten since it was
        saved (a redaction); an index with no vector left has its files deleted."""
        if self.index_file is None:
            return
        with self._lock:
            index = self.index()
            if len(index):
                index.save_compacted(self.index_file)
            else:
                for path in (
                    self.index_file,
                    self.index_file.with_name(self.index_file.name + ".json"),
                ):
                    path.unlink(missing_ok=True)

    # -- embedding ---------------------------------------------------------------------------

    def pending(self) -> int:
        return len(self.backend.unembedded(self.model_id))

    def catch_up(
        self, progress: Callable[[int], None] | None = None, *, newer_only: bool = False
    ) -> int:
        """Embed every moment that has no vector yet; returns how many were embedded. With
        ``newer_only`` (the worker, after each write) the search starts where the last one
        found nothing more: scanning the whole notebook after every turn would make a turn
        cost more as the notebook grows. A moment whose vector was dropped below that mark
        (its text rewritten) waits for the next full pass: a new process, or ``reindex``."""
        done = 0
        if newer_only and self._takeover_due():
            newer_only = False  # moments another server claimed, then left, are below
        after = self._queued_after if newer_only else 0
        if not newer_only:
            self._full_pass_at = time.monotonic()
        while True:
            self._yield_to_searches()  # a turn or a search under way first
            # One batch at a time across threads, so the worker and a reindex never
            # embed the same moments twice.
            with self._embedding:
                batch = self.backend.claim_unembedded(self.model_id, limit=BATCH, after=after)
                if batch:
                    done += self._embed(batch, progress)
            if not batch:
                # Moments are numbered in commit order, so none can appear below ``after``
                # (on a database server too: the number is taken under the writer lock of
                # the transaction that writes the moment). Where servers share the work,
                # what another server claimed and then left waits for the takeover pass.
                self._queued_after = max(self._queued_after, after)
                return done
            after = batch[-1]
            if self._stopping:
                return done

    def _takeover_due(self) -> bool:
        """Whether the worker's next pass starts from the first moment: where servers share
        the embedding work, once a claim's lease has passed since the last full pass."""
        if not self.backend.capabilities.shared_embedding:
            return False
        return time.monotonic() - self._full_pass_at > TAKEOVER_S

    def _embed(self, numbers: list[int], progress: Callable[[int], None] | None = None) -> int:
        """Embed and store these moments, shortest text first, a chunk at a time; stops
        after the current chunk when the worker is told to stop (the rest stay queued)."""
        moments = sorted(
            self.backend.get_moments([f"m_{n}" for n in numbers]),
            key=lambda m: len(m.content.text),
        )
        done = 0
        for start in range(0, len(moments), CHUNK):
            if self._stopping:
                break
            self._yield_to_searches()
            chunk = moments[start : start + CHUNK]
            self._embed_chunk(chunk)
            done += len(chunk)
            if progress is not None:
                progress(len(chunk))
        return done  # the index reads them from the store at the next search

    def _embed_chunk(self, moments: list[Moment]) -> None:
        import numpy as np

        texts = [m.content.text for m in moments]
        known = [self._recent(text) for text in texts]
        todo = [i for i, vector in enumerate(known) if vector is None]
        vectors = np.empty((len(texts), self.embedder.dim), dtype=np.float32)
        if todo:
            vectors[todo] = self.embedder.embed_documents([texts[i] for i in todo])
        for i, vector in enumerate(known):
            if vector is not None:
                vectors[i] = vector
        self.backend.put_vectors(
            self.model_id,
            [
                (moment_number(m.id), text, encode_vector(vector))
                for m, text, vector in zip(moments, texts, vectors, strict=True)
            ],
        )

    # -- the worker --------------------------------------------------------------------------

    def notify(self) -> None:
        """New moments were written: embed them soon, on the worker thread."""
        if self._stopping:
            return
        if self._worker is None:
            self._worker = threading.Thread(
                target=self._run, name="agent-notebook-embedder", daemon=True
            )
            self._worker.start()
            _running.add(self)
        with self._idle:
            self._busy = True
        self._wake.set()

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait()
            self._wake.clear()
            try:
                self.catch_up(newer_only=True)
            except Exception:  # the moments stay queued; the next write or reindex retries
                if not self._stopping:  # else its notebook is closing under it: no news
                    log.exception("embedding failed; the moments stay queued for 'reindex'")
            with self._idle:
                if not self._wake.is_set():
                    self._busy = False
                    self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until the worker has embedded everything it was told about."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._busy, timeout)

    def stop_worker(self) -> None:
        """Stop the worker after its current chunk; the rest stays queued."""
        self._stopping = True
        self._wake.set()
        with self._live_done:
            self._live_done.notify_all()  # a worker waiting for a search stops now
        if self._worker is not None:
            self._worker.join()
            self._worker = None
        _running.discard(self)

    def close(self) -> None:
        """Stop the worker after its current chunk and save the index file, if any."""
        self.stop_worker()
        if self._preparer is not None:
            self._preparer.shutdown(wait=True)
            self._preparer = None
        with self._lock:
            if self.index_file is not None and self._index is not None and len(self._index):
                self._index.save(self.index_file)
