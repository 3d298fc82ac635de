"""Age-tiered compaction (seed 002): tiers on time, idempotent, resumable after SIGKILL,
archived originals back byte for byte, search with and without the archive. Real backends,
real files, real subprocesses; nothing is mocked."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from agent_notebook import Notebook
from agent_notebook import config as cfg
from agent_notebook.compaction.rollup import dropped_manifest, salient
from agent_notebook.errors import InvalidInput, NotFound
from agent_notebook.model import Moment
from agent_notebook.storage import MemoryBackend, StorageBackend
from tests.support import compact_crash
from tests.support.clirun import text_cli
from tests.support.compacting import T0, fill_day
from tests.support.waiting import HANG_GUARD_S

PERSISTENT = ("sqlite-file", "yaml")
NO_EMBEDDER = {"AGENT_NOTEBOOK_EMBEDDER": "none"}


@pytest.fixture
def nb(backend: StorageBackend, tmp_path: Path) -> Notebook:
    return Notebook(backend, home=tmp_path / "home", embedder=None)


def active(nb: Notebook) -> dict[str, Moment]:
    return {m.id: m for m in nb.backend.iter_moments()}


def rollups(nb: Notebook, level: str) -> list[Moment]:
    return [m for m in active(nb).values() if m.rollup is not None and m.rollup.level == level]


def snapshot(backend: StorageBackend) -> tuple[list[str], list[str]]:
    return (
        [m.model_dump_json() for m in backend.iter_moments()],
        [e.model_dump_json() for e in backend.list_archived()],
    )


# -- the tiers -------------------------------------------------------------------------------


def test_each_tier_happens_on_time(nb: Notebook) -> None:
    originals = fill_day(nb, 0)
    pinned = nb.record(originals[0].session, "Passport EXP-2291", timestamp=T0, pinned=True)
    vital = nb.record(originals[0].session, "Keep this", timestamp=T0, importance=1.0)
    fresh = nb.record(originals[0].session, "Still fading", timestamp=T0, importance=0.9)
    ids = {m.id for m in originals}

    def at(days: float) -> None:
        nb.compact(now=T0 + timedelta(days=days, minutes=3))

    at(6.99)
    assert not rollups(nb, "daily")
    at(7)  # 7 days: the faded moments of the day are summarized, originals stay active
    (daily,) = rollups(nb, "daily")
    assert daily.rollup is not None and set(daily.rollup.sources) == ids
    assert daily.rollup.period == "2026-01-05" and daily.session == originals[0].session
    assert ids <= set(active(nb))
    at(29.99)
    assert not rollups(nb, "weekly")
    at(30)  # 30 days: the daily rolls into a weekly, and goes to the archive
    (weekly,) = rollups(nb, "weekly")
    assert weekly.rollup is not None and weekly.rollup.sources == [daily.id]
    assert weekly.rollup.period == "2026-W02" and set(weekly.rollup.originals) == ids
    assert daily.id not in active(nb) and nb.archived_moment(daily.id) == daily
    assert ids <= set(active(nb))
    at(55)  # importance 0.9 fades below 0.3 after 55 days: a late daily, into the same week
    (extended,) = rollups(nb, "weekly")
    assert extended.id == weekly.id and extended.rollup is not None
    late = [s for s in extended.rollup.sources if s != daily.id]
    assert len(late) == 1 and nb.archived_moment(late[0]).rollup.sources == [fresh.id]  # type: ignore[union-attr]
    assert set(extended.rollup.originals) == ids | {fresh.id}
    at(89.99)
    assert not rollups(nb, "monthly")
    at(90)  # 90 days: weeklies roll into the month; the originals go to the archive
    (monthly,) = rollups(nb, "monthly")
    assert monthly.rollup is not None and monthly.rollup.period == "2026-01"
    assert set(monthly.rollup.originals) == ids | {fresh.id}
    left = active(nb)
    assert not (ids & set(left)) and fresh.id not in left
    assert {pinned.id, vital.id, monthly.id} == set(left)  # pinned and importance 1.0 stay
    assert all(nb.archived_moment(i).id == i for i in ids)


def test_a_second_run_changes_nothing(nb: Notebook) -> None:
    for day in (0, 1, 9, 40, 41, 70):
        fill_day(nb, day)
    now = T0 + timedelta(days=200)
    first = nb.compact(now=now)
    assert first.changed and first.archived == 18
    before = snapshot(nb.backend)
    assert nb.archive_dir is not None
    files_before = {p: p.read_bytes() for p in nb.archive_dir.rglob("*.gz")}
    second = nb.compact(now=now)
    assert not second.changed and second.archived == 0
    assert snapshot(nb.backend) == before
    assert {p: p.read_bytes() for p in nb.archive_dir.rglob("*.gz")} == files_before


def test_dry_run_reports_and_changes_nothing(nb: Notebook) -> None:
    for day in (0, 3, 40):
        fill_day(nb, day)
    before = snapshot(nb.backend)
    dry = nb.compact(now=T0 + timedelta(days=200), dry_run=True)
    assert dry.dry_run and dry.archived == 9 and dry.tokens_after < dry.tokens_before
    assert snapshot(nb.backend) == before
    assert nb.archive_dir is not None and not list(nb.archive_dir.rglob("*.gz"))
    real = nb.compact(now=T0 + timedelta(days=200))
    assert real.model_dump(exclude={"dry_run"}) == dry.model_dump(exclude={"dry_run"})


def test_a_run_that_adds_tokens_says_more_on_the_dry_run_and_the_run(tmp_path: Path) -> None:
    """Ten days on, a day's rollup is made beside originals too young for the archive: the
    active tokens grow, and every report says so (issue 41: it said "1.0x fewer")."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("search:\n  embedder: none\n", encoding="utf-8")
    with Notebook.open(home, background_embedding=False) as nb:
        fill_day(nb, 0)
        day_10 = T0 + timedelta(days=10)
        dry = nb.compact(now=day_10, dry_run=True)
        assert dry.tokens_after > dry.tokens_before and dry.token_change.endswith("%)")
        assert " more (+" in dry.token_change
    said = text_cli(home, "compact", "--now", day_10.isoformat(), "--dry-run", env=NO_EMBEDDER)
    assert said.returncode == 0, said.stderr
    assert dry.token_change in said.stdout and "fewer" not in said.stdout
    with Notebook.open(home, background_embedding=False) as nb:
        real = nb.compact(now=day_10)
    assert real.token_change == dry.token_change


def test_archived_originals_come_back_byte_for_byte(nb: Notebook) -> None:
    for day in (0, 2, 33):
        fill_day(nb, day)
    before = {m.id: m.model_dump_json().encode() for m in nb.backend.iter_moments()}
    nb.compact(now=T0 + timedelta(days=365))
    archived = [e.id for e in nb.backend.list_archived() if e.id in before]
    assert sorted(archived) == sorted(before)
    for moment_id in archived:
        assert nb.archived_record(moment_id) == before[moment_id]
        assert nb.archived_moment(moment_id).model_dump_json().encode() == before[moment_id]
        with pytest.raises(NotFound):
            nb.get_moment(moment_id)


def test_rollups_keep_lineage_and_the_dropped_manifest(nb: Notebook) -> None:
    fill_day(nb, 0, n=12)
    tight = nb.config.compaction.model_copy(update={"summary_ratio": 0.1})
    nb.config = nb.config.model_copy(update={"compaction": tight})
    report = nb.compact(now=T0 + timedelta(days=8))
    (daily,) = rollups(nb, "daily")
    assert daily.rollup is not None and len(daily.rollup.sources) == 12
    assert daily.rollup.tokens_after < daily.rollup.tokens_before
    assert daily.rollup.dropped  # twelve seat numbers do not all fit in a summary
    words = set(re.findall(r"[\w-]+(?: EUR)?", daily.content.text))
    assert all(item not in words for item in daily.rollup.dropped)  # "1" is not kept by "81"
    assert report.manifest[0].dropped == daily.rollup.dropped
    assert report.dropped == len(daily.rollup.dropped) <= report.salient == daily.rollup.salient


def test_concepts_point_at_the_rollup_and_the_archived_originals(nb: Notebook) -> None:
    originals = fill_day(nb, 0)
    nb.compact(now=T0 + timedelta(days=120))
    (monthly,) = rollups(nb, "monthly")
    entry = nb.concept("lyon")
    assert monthly.id in entry.moments
    assert {m.id for m in originals} <= set(entry.archived)


def test_search_returns_rollups_and_archived_originals_only_on_request(nb: Notebook) -> None:
    originals = {m.id for day in (0, 1, 2) for m in fill_day(nb, day)}
    nb.compact(now=T0 + timedelta(days=120))
    hits = nb.search("seat TGV Lyon hotel", limit=20)
    assert hits and all(h.moment.id not in originals for h in hits)
    assert {h.tier for h in hits} == {"rollup"} and all(h.explain["rollup"] for h in hits)
    both = nb.search("seat TGV Lyon hotel", limit=20, include_archive=True)
    tiers = Counter(h.tier for h in both)
    assert tiers["rollup"] >= 1 and tiers["archived"] >= 1
    for hit in both:
        assert (hit.tier == "archived") == (hit.moment.id in originals)
        assert hit.explain.get("archived", 0.0) == (1.0 if hit.tier == "archived" else 0.0)
    session = nb.archived_moment(min(originals, key=lambda i: int(i[2:]))).session
    narrowed = nb.search("seat TGV Lyon", limit=20, include_archive=True, session=session)
    assert narrowed and all(h.moment.session == session for h in narrowed if h.tier == "archived")


def test_bad_input_changes_nothing(backend: StorageBackend, tmp_path: Path) -> None:
    homeless = Notebook(backend, embedder=None)
    fill_day(homeless, 0)
    before = snapshot(backend)
    with pytest.raises(InvalidInput, match="archive directory"):
        homeless.compact(now=T0 + timedelta(days=100))
    with pytest.raises(InvalidInput, match="timezone"):
        homeless.compact(now=datetime(2026, 6, 1), archive_dir=tmp_path / "a")
    homeless.config = homeless.config.model_copy(
        update={"compaction": cfg.CompactionSettings(summarizer="llm")}
    )
    with pytest.raises(InvalidInput, match="chat model"):
        homeless.compact(now=T0 + timedelta(days=100), archive_dir=tmp_path / "a")
    assert snapshot(backend) == before
    with pytest.raises(NotFound, match="is not in the cold archive"):
        Notebook(backend, home=tmp_path, embedder=None).archived_record("m_1")


# -- killed and resumed, through the command line ------------------------------------------


def make_home(tmp_path: Path, kind: str) -> Path:
    home = tmp_path / "seed"
    home.mkdir()
    cfg.write_config(
        home, cfg.NotebookConfig(backend="sqlite" if kind == "sqlite-file" else "yaml")
    )
    with Notebook.open(home) as nb:
        nb.vectors.embedder_choice = None
        for day in range(0, 120, 8):  # 72 durable steps: see kill_after
            fill_day(nb, day, n=4)
    return home


def compact_cli(
    home: Path, *extra: str, kill_after: int | None = None, pause: float = 0.0
) -> subprocess.Popen[str]:
    """``agent-notebook compact`` in a process of its own, killed at its ``kill_after``-th
    durable step or pausing ``pause`` seconds after each (``tests/support/compact_crash.py``)."""
    return subprocess.Popen(
        compact_crash.command(
            "compact",
            "--home",
            str(home),
            "--now",
            "2027-01-01",
            *extra,
            kill_after=kill_after,
            pause=pause,
        ),
        env={**os.environ, "AGENT_NOTEBOOK_EMBEDDER": "none"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def compact(home: Path, *extra: str) -> tuple[int, str, str]:
    """``agent-notebook compact`` in this process (for the runs nothing kills)."""
    done = text_cli(home, "compact", "--now", "2027-01-01", *extra, env=NO_EMBEDDER)
    return done.returncode, done.stdout, done.stderr


def finish(run: subprocess.Popen[str], timeout: float = HANG_GUARD_S) -> tuple[int, str, str]:
    out, err = run.communicate(timeout=timeout)  # reads and closes the pipes
    return run.returncode, out, err


def state_of(home: Path) -> tuple[list[str], list[str]]:
    with Notebook.open(home, create=False) as nb:
        nb.vectors.embedder_choice = None
        return snapshot(nb.backend)


def check_nothing_lost_or_twice(home: Path, seed: Path) -> None:
    with Notebook.open(seed, create=False) as before, Notebook.open(home, create=False) as after:
        originals = {m.id: m.model_dump_json().encode() for m in before.backend.iter_moments()}
        live = {m.id for m in after.backend.iter_moments()}
        archived = {e.id for e in after.backend.list_archived()}
        assert not live & archived
        for moment_id, record in originals.items():
            assert moment_id in live or after.archived_record(moment_id) == record
        keys = Counter(
            (m.rollup.level, m.rollup.period, m.session)
            for m in after.backend.iter_moments()
            if m.rollup is not None
        )
        assert keys and max(keys.values()) == 1


_seeds: dict[str, tuple[Path, tuple[list[str], list[str]]]] = {}


@pytest.fixture
def seeded(tmp_path_factory: pytest.TempPathFactory, kind: str) -> tuple[Path, object]:
    """A notebook home of ``kind`` to compact, and the state one uninterrupted run leaves
    (made once per backend)."""
    if kind not in _seeds:
        seed = make_home(tmp_path_factory.mktemp(kind), kind)
        reference = seed.parent / "reference"
        shutil.copytree(seed, reference)
        code, _, err = compact(reference)
        assert code == 0, err
        _seeds[kind] = (seed, state_of(reference))
    return _seeds[kind]


@pytest.mark.slow
@pytest.mark.parametrize("kind", PERSISTENT)
# Steps 1-15 write the dailies; then per weekly (16-60) and per monthly (61-72) rollup: the
# rollup (16, 61), its archive file (17, 62), the archive index and removal (18, 63).
@pytest.mark.parametrize("kill_after", [1, 16, 17, 62, 70])
def test_killed_midway_then_rerun_loses_and_repeats_nothing(
    tmp_path: Path, seeded: tuple[Path, object], kill_after: int
) -> None:
    seed, reference = seeded
    killed = tmp_path / "killed"
    shutil.copytree(seed, killed)
    code, _, err = finish(compact_cli(killed, kill_after=kill_after))
    assert code == -signal.SIGKILL, err
    assert state_of(killed) != reference  # it stopped midway
    code, _, err = compact(killed, "--format", "json")
    assert code == 0, err
    assert state_of(killed) == reference
    check_nothing_lost_or_twice(killed, seed)


@pytest.mark.parametrize("kind", PERSISTENT)
def test_sigkill_from_outside_during_compaction(
    tmp_path: Path, seeded: tuple[Path, object]
) -> None:
    seed, reference = seeded
    home = tmp_path / "home"
    shutil.copytree(seed, home)
    run = compact_cli(home, pause=0.05)
    while not list((home / "archive").rglob("*.gz")) and run.poll() is None:
        time.sleep(0.02)  # until it has archived something (it pauses between steps)
    time.sleep(0.1)
    run.send_signal(signal.SIGKILL)
    assert finish(run)[0] == -signal.SIGKILL
    assert state_of(home) != reference  # opens, and is only partly compacted
    assert compact(home)[0] == 0
    check_nothing_lost_or_twice(home, seed)
    assert state_of(home) == reference


class _BrokenModel(FakeListChatModel):
    def _call(self, *args: Any, **kwargs: Any) -> str:
        raise ConnectionError("the model is down")


def test_the_llm_summarizer_and_its_fallback(nb: Notebook) -> None:
    fill_day(nb, 0)
    fill_day(nb, 1)
    nb.config = nb.config.model_copy(
        update={"compaction": cfg.CompactionSettings(summarizer="llm")}
    )
    answer = "Ana booked seats 0-2 on TGV-0 to Lyon; hotel Bellecour 80-82 EUR."
    nb.compact(now=T0 + timedelta(days=7, minutes=5), model=FakeListChatModel(responses=[answer]))
    (first,) = rollups(nb, "daily")
    summary, index = first.content.text.splitlines()
    assert summary == answer and first.rollup is not None
    assert first.rollup.summarizer == "llm"
    # what the model left out (80-82 is not 81) is in the index, as the sources write it
    assert index.startswith("Also mentioned: ") and "81 EUR" in index.split("; ")
    assert "Lyon" not in index and not first.rollup.dropped
    nb.compact(now=T0 + timedelta(days=8, minutes=5), model=_BrokenModel(responses=["x"]))
    second = next(r for r in rollups(nb, "daily") if r.id != first.id)
    assert second.rollup is not None and second.rollup.summarizer.startswith("llm (fell back")
    assert "ConnectionError" in second.rollup.summarizer and "TGV-1" in second.content.text


@pytest.mark.parametrize("kind", ["sqlite-file"])
def test_search_on_the_command_line(tmp_path: Path, seeded: tuple[Path, object]) -> None:
    home = tmp_path / "home"
    shutil.copytree(seeded[0], home)
    assert compact(home)[0] == 0

    def search(*extra: str) -> list[dict[str, Any]]:
        words = ["TGV Lyon hotel", "--limit", "30", "--format", "json", *extra]
        done = text_cli(home, "search", *words, env=NO_EMBEDDER)
        assert done.returncode == 0, done.stderr
        hits: list[dict[str, Any]] = json.loads(done.stdout)
        return hits

    assert {h["tier"] for h in search()} == {"rollup"}
    assert {h["tier"] for h in search("--include-archive")} == {"rollup", "archived"}


# -- what a rollup keeps ------------------------------------------------------------------------

DECISION = "Decision for the billing service: we move from mysql to postgres 16, not 15."


def test_an_important_decision_is_kept_word_for_word_at_every_level(nb: Notebook) -> None:
    originals = fill_day(nb, 0, n=12)
    decision = nb.record(  # fades below 0.3 after 11 days: summarized with the rest then
        originals[0].session,
        DECISION,
        speaker="Ana",
        timestamp=T0,
        importance=0.9,
        decay_rate=0.1,
    )
    for days, level in ((12, "daily"), (31, "weekly"), (130, "monthly")):
        nb.compact(now=T0 + timedelta(days=days))
        (rollup,) = rollups(nb, level)
        assert rollup.rollup is not None and decision.id in rollup.rollup.originals
        assert f"Ana: {DECISION}" in rollup.content.text.splitlines(), level
        assert rollup.content.text.count(DECISION) == 1
        assert not {"mysql", "postgres", "16"} & set(rollup.rollup.dropped)


def test_the_dropped_manifest_names_items_as_the_sources_write_them() -> None:
    texts = [
        "The launch moved to 7 June, then to June 9th.",
        "We asked Ana about the 7 June party.",
    ]
    assert salient(texts) == ["7 June", "June 9th", "Ana"]
    assert dropped_manifest(texts, "Ana said the launch moved.") == (["7 June", "June 9th"], 3)
    assert dropped_manifest(texts, "Moved to June 7th and then 9 June.")[0] == ["Ana"]
    assert dropped_manifest(["seat 16 of 2016"], "in 2016")[0] == ["16"]  # whole numbers only


def test_a_rollup_reads_by_day_and_names_who_said_what(nb: Notebook) -> None:
    first = fill_day(nb, 0, n=4)
    fill_day(nb, 1, n=4, session=first[0].session)
    nb.compact(now=T0 + timedelta(days=32))
    (weekly,) = rollups(nb, "weekly")
    lines = weekly.content.text.splitlines()
    assert lines[0] == "2026-01-05:" and "2026-01-06:" in lines
    said = [x for x in lines if not x.endswith(":") and not x.startswith("Also mentioned: ")]
    assert said and all(x.startswith("Ana") for x in said)


def test_redaction_takes_a_redacted_moments_items_out_of_the_index(nb: Notebook) -> None:
    fill_day(nb, 0, n=3)
    secret = nb.record(
        nb.sessions()[0].id,
        "Ana keeps the spare key with Bartholomew Quince at 221B Baker Street.",
        speaker="Ana",
        timestamp=T0 + timedelta(minutes=30),
        importance=0.25,
    )
    nb.compact(now=T0 + timedelta(days=8))
    (daily,) = rollups(nb, "daily")
    assert "Bartholomew Quince" in daily.content.text
    nb.redact(secret.id, "a key holder")
    (daily,) = rollups(nb, "daily")
    assert "Bartholomew" not in daily.content.text and "221B" not in daily.content.text
    assert daily.rollup is not None and not any("221B" in d for d in daily.rollup.dropped)


def test_a_rollup_keeps_the_current_fact_whole_and_may_fold_the_superseded_one(
    tmp_path: Path,
) -> None:
    """Issues 30 and 41: compaction keeps current facts word for word; what a later moment
    superseded fades to one line, never kept whole."""
    config = cfg.NotebookConfig(facts=cfg.FactSettings(enabled=True))
    with Notebook(MemoryBackend(), home=tmp_path / "home", embedder=None, config=config) as nb:
        filler = fill_day(nb, 0, n=6)
        session = filler[0].session
        old = nb.record(session, "The launch is on June 5.", timestamp=T0, importance=0.25)
        new = nb.record(
            session,
            "The launch moved to June 12.",
            timestamp=T0 + timedelta(hours=1),
            importance=0.25,
        )
        assert nb.get_moment(old.id).valid_until == new.timestamp  # the rules linked them
        nb.compact(now=T0 + timedelta(days=7, hours=2))
        (daily,) = rollups(nb, "daily")
        assert daily.rollup is not None and {old.id, new.id} <= set(daily.rollup.sources)
        kept = {line.source: line.kind for line in daily.rollup.kept}
        assert kept.get(new.id) == "fact" and old.id not in kept
        (faded,) = daily.rollup.faded  # what was replaced fades to one line, kept on record
        assert faded.source == old.id and faded.line in daily.content.text
        assert "June 5" in faded.line and "June 12" in faded.line
        assert "The launch moved to June 12." in daily.content.text  # word for word
