"""Commands that look after the notebook: reindex, doctor."""

from __future__ import annotations

from operator import itemgetter
from typing import Annotated, Any

from ..privacy import permissions
from .common import (
    FormatOption,
    HomeOption,
    OutputFormat,
    emit,
    fail,
    flag,
    open_notebook,
    progress_bar,
    stderr,
)

FactsOption = Annotated[
    bool,
    flag(
        "--facts",
        "Instead: file every moment under the subjects it states facts about (the fact "
        "index), for a notebook recorded before it or with facts off.",
    ),
]


def reindex(
    home: HomeOption = None, fmt: FormatOption = OutputFormat.TABLE, facts: FactsOption = False
) -> None:
    """Embed every moment that has no vector yet: after a crash, an import, or a change of
    embedding model. With --facts, build the fact index instead, so that a new statement
    meets what was said before on the same subject in any session. Safe to stop and run
    again.

    Example: agent-notebook reindex --format json
    """
    with open_notebook(home) as nb:
        result: dict[str, object]
        if facts:
            moments = nb.stats().moments
            with progress_bar() as bar:
                task = bar.add_task("file", total=moments)
                filed = nb.facts.reindex(progress=lambda n: bar.advance(task, n))
            result = {"moments": moments, "filed_anew": filed}
            if (hint := nb.facts.off_hint()) is not None:
                stderr.print(hint, highlight=False)
        else:
            if nb.vectors.semantic is None:
                fail("no embedder, so nothing to index; 'agent-notebook doctor' says why")
            with progress_bar() as bar:
                task = bar.add_task("embed", total=nb.vectors.unembedded())
                done = nb.vectors.reindex(progress=lambda n: bar.advance(task, n))
            result = {
                "model": nb.vectors.semantic.model_id,
                "embedded": done,
                "waiting": nb.vectors.unembedded(),
            }
    if fmt is OutputFormat.JSON:
        emit(result, fmt)
    else:
        emit([result], fmt, [(key, itemgetter(key)) for key in result])


FixOption = Annotated[
    bool,
    flag("--fix", "Make what is open to other users owner-only again (dirs 0700, files 0600)."),
]


def doctor(
    home: HomeOption = None, fmt: FormatOption = OutputFormat.TABLE, fix: FixOption = False
) -> None:
    """Check the notebook and this installation: where the data is, which backend, whether
    search can find by meaning (the embedder: which provider and model, and whether it
    answers), how many moments wait for a vector, which chat models the chat, the facts
    judge and the compaction summarizer use and whether each answers (one tiny call each;
    the offline ones say so with no call), and whether every file and directory of the home
    is owner-only (--fix makes them so).

    Exit code 0 when nothing is open to other users (after --fix), 1 when something still
    is (a file of another owner, a symlink leaving the home), so scripts can check it.

    Example: agent-notebook doctor --fix --format json
    """
    from ..chat.models import describe_chat_model
    from ..notebook.doctor import doctor as run_checks

    with permissions.quiet_on_open(), open_notebook(home) as nb:
        report = run_checks(nb, fix=fix, chat_models=describe_chat_model)
        assert nb.home is not None
        root = nb.home
    checks, loosened, fixed = report.checks, report.loosened, report.fixed
    if fmt is OutputFormat.JSON:
        emit(
            {
                **checks,
                "loosened": [_loosened_row(loose) for loose in loosened],
                "fixed": [_fixed_row(change) for change in fixed],
            },
            fmt,
        )
    else:
        emit(
            [{"check": k, "value": v} for k, v in checks.items()],
            fmt,
            [("check", lambda r: r["check"]), ("value", lambda r: r["value"])],
        )
        if fixed:
            emit(
                [_fixed_row(change) for change in fixed],
                fmt,
                [(key, itemgetter(key)) for key in ("path", "kind", "before", "after", "error")],
                title="permissions changed",
            )
        if loosened:
            emit(
                [_loosened_row(loose) for loose in loosened],
                fmt,
                [(key, itemgetter(key)) for key in ("path", "kind", "mode", "want", "note")],
                title="open to other users",
            )
    if checks["unembedded"]:
        stderr.print(
            f"{checks['unembedded']} moment(s) wait for a vector: run 'agent-notebook reindex'"
        )
    if loosened:
        fixable = any(loose.fixable for loose in loosened) and not fix
        hint = f": run '{permissions.fix_command(root)}'" if fixable else ""
        fail(f"{len(loosened)} path(s) of the notebook are open to other users{hint}")


def _mode(mode: int | None) -> str | None:
    return None if mode is None else f"{mode:04o}"


def _loosened_row(loose: permissions.Loosened) -> dict[str, Any]:
    return {
        "path": str(loose.path),
        "kind": loose.kind,
        "mode": _mode(loose.mode),
        "want": _mode(loose.want),
        "note": loose.note,
    }


def _fixed_row(change: permissions.Fixed) -> dict[str, Any]:
    return {
        "path": str(change.path),
        "kind": change.kind,
        "before": _mode(change.before),
        "after": _mode(change.after),
        "error": change.error,
    }
