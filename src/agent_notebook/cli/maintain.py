"""Commands that look after the notebook: reindex, doctor."""

from __future__ import annotations

from operator import itemgetter

from .common import (
    FormatOption,
    HomeOption,
    OutputFormat,
    emit,
    fail,
    open_notebook,
    progress_bar,
    stderr,
)


def reindex(home: HomeOption = None, fmt: FormatOption = OutputFormat.TABLE) -> None:
    """Embed every moment that has no vector yet: after a crash, an import, or a change of
    embedding model. Safe to stop and run again.

    Example: agent-notebook reindex --format json
    """
    with open_notebook(home) as nb:
        if nb.semantic is None:
            fail("no embedder, so nothing to index; 'agent-notebook doctor' says why")
        with progress_bar() as bar:
            task = bar.add_task("embed", total=nb.unembedded())
            done = nb.reindex(progress=lambda n: bar.advance(task, n))
        result = {"model": nb.semantic.model_id, "embedded": done, "waiting": nb.unembedded()}
    if fmt is OutputFormat.JSON:
        emit(result, fmt)
    else:
        emit([result], fmt, [(key, itemgetter(key)) for key in result])


def doctor(home: HomeOption = None, fmt: FormatOption = OutputFormat.TABLE) -> None:
    """Check the notebook and this installation: where the data is, which backend, whether
    search can find by meaning (the embedder) and how many moments wait for a vector.

    Example: agent-notebook doctor --format json
    """
    from ..embed import default_embedder_status

    with open_notebook(home) as nb:
        semantic = nb.semantic
        status = default_embedder_status()
        if semantic is None:
            embedder = "none: " + (status.detail if not status.available else "turned off")
        elif semantic.model_id == status.model_id:
            embedder = status.detail
        else:
            embedder = semantic.model_id
        checks = {
            "home": str(nb.home),
            "backend": f"{nb.backend.capabilities.name} at {nb.backend.location}",
            "moments": nb.backend.count_moments(),
            "embedder": embedder,
            "search": "hybrid (lexical, vector, concept)" if semantic else "lexical only",
            "unembedded": nb.unembedded(),
        }
    if fmt is OutputFormat.JSON:
        emit(checks, fmt)
    else:
        emit(
            [{"check": k, "value": v} for k, v in checks.items()],
            fmt,
            [("check", lambda r: r["check"]), ("value", lambda r: r["value"])],
        )
    if checks["unembedded"]:
        stderr.print(
            f"{checks['unembedded']} moment(s) wait for a vector: run 'agent-notebook reindex'"
        )
