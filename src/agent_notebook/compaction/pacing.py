"""A run's progress reported at a steady pace, also while one large rollup is made.

A level reports its progress after each rollup (:data:`.runner.Progress`), but one monthly
rollup of a large notebook summarizes thousands of moments and takes seconds. Making it
counts tokens all along (the budget, each sentence a summarizer weighs), so a token counter
that reports the last progress again now and then (:class:`PacedCounter`, at most every
:data:`PACE_S`) keeps the reports coming: a caller that stops the run by raising from its
progress callback (the web preview, when the browser leaves) stops it within about that
time while a summary is picked. The parts of a rollup that count no tokens (its salient
items and its dropped manifest) still run whole: seconds for a monthly rollup of
100,000 moments. Counting is unchanged, and so is every rollup.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ..core.tokens import TokenCounter
    from .runner import Progress

__all__ = ["PACE_S", "PacedCounter", "PacedProgress"]

#: At most this long (seconds) between two reports while tokens are counted.
PACE_S: Final = 0.25
#: Counts between two looks at the clock.
_LOOK_EVERY: Final = 32


class PacedProgress:
    """``progress``, remembering its last report to repeat it (:meth:`beat`)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self._last: tuple[str, int, int] | None = None
        self._at = time.monotonic()

    def __call__(self, stage: str, done: int, total: int) -> None:
        self._last, self._at = (stage, done, total), time.monotonic()
        self.progress(stage, done, total)

    def beat(self) -> None:
        """Report the last progress again when :data:`PACE_S` has passed since a report."""
        if self._last is not None and time.monotonic() - self._at >= PACE_S:
            self(*self._last)


class PacedCounter:
    """Counts as ``counter`` does, and calls ``paced.beat()`` every few counts."""

    def __init__(self, counter: TokenCounter, paced: PacedProgress) -> None:
        self.counter, self.paced = counter, paced
        self._counts = 0

    def count(self, text: str) -> int:
        self._counts += 1
        if self._counts % _LOOK_EVERY == 0:
            self.paced.beat()
        return self.counter.count(text)
