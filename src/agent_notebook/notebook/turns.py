"""The work that follows a chat turn: derived work (a session-notebook update, the index
upkeep of the turn's moments) runs on one worker thread, in order, off the hot path; the work
handed over while a turn runs waits until the turn ends (see :meth:`TurnWork.turn_running`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, nullcontext, suppress
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..storage import StorageBackend
    from .vectors import Vectors

log = logging.getLogger(__name__)


class TurnWork:
    """The after-turn worker of one notebook (see :meth:`Notebook.after_turn`)."""

    def __init__(self, backend: StorageBackend, vectors: Vectors) -> None:
        self.backend = backend
        self.vectors = vectors
        self.executor: ThreadPoolExecutor | None = None
        self._running_turns: set[_HeldWork] = set()  # their held work: see turn_running
        self.closed = False

    def after_turn(self, work: Callable[[], object]) -> Future[object]:
        """Run ``work`` after the turn, off the hot path, one job at a time, in submission
        order. :meth:`close` and :meth:`drain` wait for it; a failure is logged (the raw log
        it derives from is already written). Work handed over while a turn runs
        (:meth:`turn_running`) starts when that turn ends, so that it takes no time (nor the
        interpreter lock) from the rest of the turn."""
        future: Future[object] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(work())
            except Exception as err:  # noqa: BLE001 (the future carries it; _log_failure logs it)
                future.set_exception(err)

        future.add_done_callback(_log_failure)
        held = _TURN_WORK.get()
        if held is None or held.owner is not self or not held.hold(run):
            self._submit(run)
        return future

    def _submit(self, job: Callable[[], None]) -> None:
        if self.executor is None:
            self.executor = ThreadPoolExecutor(1, thread_name_prefix="agent-notebook")
        self.executor.submit(job)

    @contextmanager
    def turn_running(self) -> Iterator[None]:
        """For the length of a chat turn: the embedding worker waits meanwhile (see
        :meth:`SemanticIndex.turn`), so the turn's moments are embedded after it returns
        rather than on the cores the rest of the turn needs; the work the turn hands to
        :meth:`after_turn` starts when it ends; after a turn that returned, the index
        upkeep of its moments runs as :meth:`after_turn` work, off the next turn's search,
        and so does a checkpoint of SQLite's write-ahead log now and then
        (:meth:`StorageBackend.fold_log`), off a later turn's commit. It loads nothing:
        before the first record starts the worker there is no worker to hold."""
        semantic = self.vectors.worker_index()
        held = _HeldWork(self)
        self._running_turns.add(held)
        token = _TURN_WORK.set(held)
        try:
            with nullcontext() if semantic is None else semantic.turn():
                yield
        finally:
            with suppress(ValueError):  # left in another context (a generator closed late)
                _TURN_WORK.reset(token)
            self._running_turns.discard(held)
            for job in held.release():
                self._submit(job)
        if not self.closed:  # closed meanwhile: close has settled what the turn wrote
            self.after_turn(self._after_a_turn)

    def _after_a_turn(self) -> None:
        self.backend.settle()  # the turn's moments indexed
        self.backend.fold_log()  # now and then the write-ahead log checkpointed, off a turn

    def drain(self) -> None:
        """Wait until the work handed over so far is done (not the work a running turn
        holds: it starts when the turn ends)."""
        if self.executor is not None:
            self.executor.submit(lambda: None).result()

    def close(self) -> None:
        """Run the work of a turn still running now (before the close it would otherwise
        follow), then wait for all of it and stop the worker."""
        self.closed = True
        for held in list(self._running_turns):
            for job in held.release():
                self._submit(job)
        if self.executor is not None:
            self.executor.shutdown(wait=True)
            self.executor = None


def _log_failure(future: Future[object]) -> None:
    if (err := future.exception()) is not None:
        log.error("work after a turn failed: %s", err, exc_info=err)


class _HeldWork:
    """The :meth:`Notebook.after_turn` work handed over during one running turn, held until
    the turn ends (then released, and closed: later work is submitted at once)."""

    def __init__(self, owner: TurnWork) -> None:
        self.owner = owner  # the worker of one notebook: another's turn holds none of it
        self._jobs: list[Callable[[], None]] = []
        self._open = True
        self._lock = threading.Lock()

    def hold(self, job: Callable[[], None]) -> bool:
        with self._lock:
            if self._open:
                self._jobs.append(job)
            return self._open

    def release(self) -> list[Callable[[], None]]:
        with self._lock:
            self._open = False
            jobs, self._jobs = self._jobs, []
            return jobs


#: The running turn's held work, seen by the threads the turn's run hands work to (LangGraph
#: and ``asyncio.to_thread`` copy the context).
_TURN_WORK: ContextVar[_HeldWork | None] = ContextVar("agent_notebook_turn_work", default=None)
