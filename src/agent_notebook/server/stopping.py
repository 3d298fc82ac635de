"""A uvicorn server that stops when told (issue 40, item 5).

The first SIGTERM or SIGINT asks uvicorn to shut down: it stops accepting, lets the requests
in flight finish for ``timeout_graceful_shutdown`` seconds, then cancels them. A request can
outlast that cancellation (a worker thread waiting in the database cannot be interrupted),
and Python waits for such threads as it exits; so a watchdog ends the process
:data:`CLOSING_S` seconds after the grace period whatever is still running. A second signal
ends it at once, by that signal (as its default action would). The watchdog exits with
status 128 + the signal's number (143 for SIGTERM), as a shell reports a death by it. Every
acknowledged write was committed before its answer was sent; a write cut off was never
acknowledged.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType
from typing import Final

import uvicorn

#: How long the requests in flight may take to finish once a stop is asked (seconds).
SHUTDOWN_GRACE_S: Final = 5
#: After the grace period, how long closing may take (the app's shutdown, the threads
#: cancelled requests leave behind) before the process ends anyway.
CLOSING_S: Final = 2.0


class StoppingServer(uvicorn.Server):
    """``uvicorn.Server`` whose shutdown is bounded: see the module's description."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        grace = config.timeout_graceful_shutdown
        self.deadline_s = (SHUTDOWN_GRACE_S if grace is None else grace) + CLOSING_S
        self._watchdog: threading.Timer | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit:  # told twice: stop now, by the signal's default action
            _say("a second signal: stopping now, without waiting for the requests in flight")
            signal.signal(sig, signal.SIG_DFL)  # in the main thread: signal handlers run there
            os.kill(os.getpid(), sig)
            return
        super().handle_exit(sig, frame)
        self._watchdog = threading.Timer(self.deadline_s, _exit_now, (sig, self.deadline_s))
        self._watchdog.daemon = True
        self._watchdog.start()


def _exit_now(sig: int, after_s: float) -> None:
    """End the process from the watchdog's thread: no cleanup, no waiting for threads."""
    try:
        _say(f"still stopping {after_s:g} s after the signal: stopping now")
    finally:
        os._exit(128 + sig)


def _say(why: str) -> None:
    try:
        sys.stderr.write(f"agent-notebook serve: {why}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed: nothing to tell
        pass
