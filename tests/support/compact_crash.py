"""``agent-notebook compact`` in a process the crash tests pause or kill at a durable step.

Test-only: the shipped package kills nothing. Run as a script, it gives every
:class:`~agent_notebook.compaction.runner.Compactor` of its process a ``step_hook``, then runs
the real entry point (``agent_notebook.cli.main``) on the arguments after ``--``::

    python tests/support/compact_crash.py --kill-after 16 -- compact --home H --now 2027-01-01
    python tests/support/compact_crash.py --pause 0.05 -- compact --home H --now 2027-01-01

``--pause S`` sleeps ``S`` seconds after each durable step (so a test can kill the process
from outside between two of them); ``--kill-after N`` sends the process SIGKILL at its
``N``-th durable step. :func:`command` builds the argument list for ``subprocess``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from functools import partialmethod
from pathlib import Path

SCRIPT = Path(__file__).resolve()


def command(*cli_args: str, kill_after: int | None = None, pause: float = 0.0) -> list[str]:
    """The argument list that runs ``agent-notebook *cli_args`` under this script's hooks."""
    hooks = ["--pause", str(pause)]
    if kill_after is not None:
        hooks += ["--kill-after", str(kill_after)]
    return [sys.executable, str(SCRIPT), *hooks, "--", *cli_args]


def step_hook(kill_after: int | None, pause: float) -> Callable[[int], None]:
    def hook(steps: int) -> None:
        if pause:
            time.sleep(pause)
        if kill_after is not None and steps >= kill_after:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kill-after", type=int, default=None)
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("cli", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    cli_args = args.cli[1:] if args.cli[:1] == ["--"] else args.cli

    from agent_notebook.cli import main as cli_main
    from agent_notebook.compaction.runner import Compactor

    Compactor.__init__ = partialmethod(  # type: ignore[method-assign, assignment]
        Compactor.__init__, step_hook=step_hook(args.kill_after, args.pause)
    )
    sys.argv = ["agent-notebook", *cli_args]
    cli_main()


if __name__ == "__main__":
    main(sys.argv[1:])
