"""Compaction's report tells the truth (issue 41, item 3): a dry run reports the figures
the run then has, through the real command line on SQLite and in Python on PostgreSQL; a
run that adds tokens says when the originals under its rollups leave; the run reports its
progress (a dry run's copy first), and a progress report that raises stops a dry run with
nothing changed."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.storage import StorageBackend
from tests.support.clirun import cli_process, text_cli
from tests.support.compacting import T0, fill_day, snapshot

NO_EMBEDDER = {"AGENT_NOTEBOOK_EMBEDDER": "none"}
#: The figures a dry run must report as the run then has them.
FIGURES = (
    "tokens_before",
    "tokens_after",
    "active_before",
    "active_after",
    "rollups",
    "extended",
    "summarized",
    "archived",
    "archived_rollups",
    "originals_leave",
)
#: Days with moments: as of NOW, months to archive, weeks and days still active.
DAYS = (0, 1, 9, 40, 41, 70, 101, 104, 118)
NOW = T0 + timedelta(days=125)


def home_with_days(root: Path, days: tuple[int, ...] = DAYS) -> Path:
    home = root / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text("search:\n  embedder: none\n", encoding="utf-8")
    (home / "config.yaml").chmod(0o600)
    with Notebook.open(home, background_embedding=False) as nb:
        for day in days:
            fill_day(nb, day)
    return home


def figures(report: dict[str, object]) -> dict[str, object]:
    return {k: report[k] for k in FIGURES}


def test_the_dry_run_reports_what_the_run_does_through_the_command_line(tmp_path: Path) -> None:
    home = home_with_days(tmp_path)
    args = ("compact", "--now", NOW.isoformat(), "--format", "json")
    dry = cli_process(home, *args, "--dry-run", env=NO_EMBEDDER)
    assert dry.returncode == 0, dry.stderr.decode()
    real = cli_process(home, *args, env=NO_EMBEDDER)
    assert real.returncode == 0, real.stderr.decode()
    said, done = json.loads(dry.stdout), json.loads(real.stdout)
    assert said["dry_run"] and not done["dry_run"]
    assert figures(said) == figures(done)
    assert done["archived"] and done["rollups"]["daily"] and done["active_after"]
    # days 40, 41 (each its own session) and 70 are weeklies, 101, 104 and 118 dailies: the
    # first originals leave when day 40's weekly is 90 days old (as its newest source)
    first_week = (T0 + timedelta(days=40, minutes=2) + timedelta(days=90)).date()
    assert done["originals_leave"] == first_week.isoformat()


@pytest.mark.parametrize("backend_kind", ["postgres"])
def test_the_dry_run_reports_what_the_run_does_on_postgresql(
    backend: StorageBackend, tmp_path: Path
) -> None:
    nb = Notebook(backend, home=tmp_path / "home", embedder=None)
    for day in DAYS:
        fill_day(nb, day)
    dry = nb.compact(now=NOW, dry_run=True)
    real = nb.compact(now=NOW)
    assert dry.dry_run and not real.dry_run
    assert figures(dry.model_dump()) == figures(real.model_dump())
    assert real.archived and real.originals_leave is not None


def test_a_run_that_adds_tokens_says_when_the_originals_leave(tmp_path: Path) -> None:
    """The first run after a week makes a day's rollup beside its originals: more tokens,
    until the monthly tier archives the originals, 90 days after the day's newest one."""
    home = home_with_days(tmp_path, (0,))
    day_10 = T0 + timedelta(days=10)
    leave = date(2026, 4, 5)  # 2026-01-05 09:02 + 90 days
    with Notebook.open(home, background_embedding=False) as nb:
        dry = nb.compact(now=day_10, dry_run=True)
    assert " more (+" in dry.token_change and dry.originals_leave == leave
    assert dry.originals_note == "from 2026-04-05, when the monthly tier archives them"
    table = text_cli(home, "compact", "--now", day_10.isoformat(), env=NO_EMBEDDER)
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if "originals leave" in line)
    assert "from 2026-04-05" in row
    assert dry.token_change in table.stdout
    with Notebook.open(home, background_embedding=False) as nb:
        too_soon = nb.compact(now=T0 + timedelta(days=89))
        assert too_soon.archived == 0 and too_soon.originals_leave == leave
        then = nb.compact(now=T0 + timedelta(days=90, minutes=3))
    assert then.archived == 3 and then.originals_leave is None
    assert then.tokens_after < then.tokens_before
    assert then.originals_note == "none wait under a daily or weekly rollup"


def test_the_run_reports_progress_and_a_dry_run_its_copy_first(tmp_path: Path) -> None:
    home = home_with_days(tmp_path)
    with Notebook.open(home, background_embedding=False) as nb:
        total = nb.backend.count_moments()
        dry: list[tuple[str, int, int]] = []
        nb.compact(now=NOW, dry_run=True, progress=lambda *step: dry.append(step))
        real: list[tuple[str, int, int]] = []
        nb.compact(now=NOW, progress=lambda *step: real.append(step))
    assert dry[0] == ("copy", 0, total) and ("copy", total, total) in dry
    for steps in (dry, real):
        levels = [s for s in steps if s[0] != "copy"]
        assert [s[0] for s in levels if s[1] == 0] == ["daily", "weekly", "monthly"]
        for level in ("daily", "weekly", "monthly"):
            mine = [s for s in levels if s[0] == level]
            assert mine[0][1] == 0 and mine[-1][1] == mine[-1][2]  # announced, then done
    assert all(s[0] != "copy" for s in real)


def test_the_command_line_shows_the_progress_of_the_copy_and_of_each_level(
    tmp_path: Path,
) -> None:
    home = home_with_days(tmp_path)
    env = {**NO_EMBEDDER, "AGENT_NOTEBOOK_PROGRESS_EVERY": "0"}  # a line at every step
    args = ("compact", "--now", NOW.isoformat())
    dry = text_cli(home, *args, "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    real = text_cli(home, *args, env=env)
    assert real.returncode == 0, real.stderr
    assert "copying the notebook (dry run): 27/27 (100%)" in dry.stderr
    assert "copying the notebook" not in real.stderr
    for done in (dry, real):
        assert "daily rollups: 0/" in done.stderr and "monthly rollups: 3/3 (100%)" in done.stderr


class _Stop(Exception):
    pass


@pytest.mark.parametrize("stage", ["copy", "daily", "weekly"])
def test_a_progress_report_that_raises_stops_a_dry_run_with_nothing_changed(
    tmp_path: Path, stage: str
) -> None:
    home = home_with_days(tmp_path)
    seen: list[str] = []

    def progress(at: str, done: int, total: int) -> None:
        seen.append(at)
        if at == stage and done:
            raise _Stop

    with Notebook.open(home, background_embedding=False) as nb:
        before = snapshot(nb.backend)
        with pytest.raises(_Stop):
            nb.compact(now=NOW, dry_run=True, progress=progress)
        assert snapshot(nb.backend) == before
        assert nb.archive_dir is not None and not list(nb.archive_dir.rglob("*.gz"))
        assert "monthly" not in seen
        assert nb.compact(now=NOW, dry_run=True).archived  # it runs again, whole


def test_a_large_rollup_reports_progress_while_it_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One day of many moments is one rollup: its progress is reported again while it is
    made (at most PACE_S apart; 0 here), so a dry run stops inside it."""
    from agent_notebook.compaction import pacing

    monkeypatch.setattr(pacing, "PACE_S", 0.0)
    home = home_with_days(tmp_path, ())
    with Notebook.open(home, background_embedding=False) as nb:
        fill_day(nb, 0, n=300)
        before = snapshot(nb.backend)
        seen: list[tuple[str, int, int]] = []

        def progress(stage: str, done: int, total: int) -> None:
            seen.append((stage, done, total))
            if seen.count(("daily", 0, 1)) == 3:  # the one rollup is being made
                raise _Stop

        with pytest.raises(_Stop):
            nb.compact(now=T0 + timedelta(days=10), dry_run=True, progress=progress)
        assert ("daily", 1, 1) not in seen and snapshot(nb.backend) == before
        steps: list[tuple[str, int, int]] = []
        report = nb.compact(now=T0 + timedelta(days=10), progress=lambda *s: steps.append(s))
    assert report.rollups["daily"] == 1 and steps.count(("daily", 0, 1)) > 2
