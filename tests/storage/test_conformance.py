"""The storage conformance suite, run on every backend (see conftest.BACKENDS)."""

from agent_notebook.storage.conformance import *  # noqa: F403
