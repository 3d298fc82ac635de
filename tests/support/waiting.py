"""Waiting in tests: for a condition, never against a clock.

No test asserts on elapsed time (a loaded machine is slow, not wrong; speed belongs in
bench/). A wait polls its condition and fails at once when what it waits on has died; only
a hang, :data:`HANG_GUARD_S` of polling, ends it otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Long enough that only a hang gets there, whatever the load; use it for every timeout
#: that guards a wait (a child's exit, a thread's join, a request to a local server).
HANG_GUARD_S = 600.0


def wait_until(
    condition: Callable[[], bool],
    what: str,
    *,
    alive: Callable[[], bool] = lambda: True,
    pause: float = 0.05,
) -> bool:
    """Poll ``condition`` until it holds (True), or until ``alive()`` is False (False: the
    process or thread that was to bring it about has ended); a hang raises."""
    for _ in range(int(HANG_GUARD_S / pause)):
        if condition():
            return True
        if not alive():
            return condition()  # it may have got there just before it ended
        time.sleep(pause)
    raise AssertionError(f"{what}: still waiting after {HANG_GUARD_S:.0f} s of polling (hung)")
