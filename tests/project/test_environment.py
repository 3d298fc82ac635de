"""Every environment variable the package reads is read in ``config/__init__.py`` and listed in its
docstring's table: no other module reads ``os.environ`` (the e5 embedder only sets two
OpenMP variables around its engine's loading, and restores them)."""

from __future__ import annotations

import re
from pathlib import Path

import agent_notebook
from agent_notebook import config

PACKAGE = Path(agent_notebook.__file__).parent
READS = re.compile(r"os\.environ|os\.getenv|getenv\(|from os import .*environ")
#: ``module: why it may touch os.environ``
ALLOWED = {
    "config/__init__.py": "the one place that reads the environment",
    "embed/e5.py": "sets OMP_NUM_THREADS and OMP_WAIT_POLICY for OpenMP, then restores them",
}


def code_lines(path: Path) -> list[tuple[int, str]]:
    """``(number, line)`` of ``path``, without comments and docstring-looking lines."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        code = line.split("#", 1)[0]
        if "``" in code:  # prose quoting the name (a docstring), not a read
            continue
        found.append((number, code))
    return found


def test_only_config_reads_the_environment() -> None:
    readers = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in ALLOWED
        for number, line in code_lines(path)
        if READS.search(line)
    ]
    assert not readers, (
        "read the environment through agent_notebook.config (a function there, the variable "
        "in its docstring's table):\n" + "\n".join(readers)
    )


def test_every_variable_config_names_is_in_its_table() -> None:
    doc = config.__doc__ or ""
    names = {
        value
        for name, value in vars(config).items()
        if name.endswith("_ENV") and isinstance(value, str)
    }
    assert names >= {"AGENT_NOTEBOOK_PG_TIMEOUT_S", "AGENT_NOTEBOOK_PROGRESS_EVERY"}
    missing = sorted(n for n in names if not re.search(rf"^{n}\s", doc, re.MULTILINE))
    assert not missing, f"config.py's table of environment variables lacks {missing}"
