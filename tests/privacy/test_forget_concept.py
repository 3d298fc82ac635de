"""``forget`` matches a concept as search does (issue 43, item 5): by the stems of all its
words, wherever they are in a moment ("peanuts, my allergy" and "allergic to peanuts" for
"peanut allergy"), never by one of them alone ("peanut butter"); it shows what matched, and
the words leave archived originals and the rollups over them too."""

from __future__ import annotations

import gzip
import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook import config as cfg
from tests.support.clirun import text_cli

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
CONCEPT = "peanut allergy"
SAID = {
    "comma": "Peanuts, my allergy, keep me away from the bakery.",
    "allergic": "Ana is allergic to peanuts.",
    "butter": "Spread peanut butter on the toast.",  # one word of the concept: stays
    "season": "The allergy season starts in April.",  # the other one: stays
}


def all_bytes(home: Path) -> dict[str, bytes]:
    """Every file under ``home`` (archives decompressed too), but SQLite's shared memory and
    the locks, which any opening touches."""
    found: dict[str, bytes] = {}
    for path in home.rglob("*"):
        if path.is_file() and not path.name.endswith(("-shm", ".lock")):
            data = path.read_bytes()
            found[str(path)] = data
            if path.name.endswith(".gz"):
                found[f"{path} (decompressed)"] = gzip.decompress(data)
    return found


def holders(home: Path, *needles: str) -> list[str]:
    wanted = [n.encode() for n in needles] + [n.capitalize().encode() for n in needles]
    return sorted(name for name, data in all_bytes(home).items() if any(w in data for w in wanted))


def run(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return text_cli(home, *args, stdin=stdin, env={cfg.EMBEDDER_ENV: "none", "COLUMNS": "200"})


def recorded(home: Path) -> dict[str, str]:
    """A SQLite notebook holding :data:`SAID`: the id of each."""
    assert run(home, "init").returncode == 0
    drafts = [{"text": text} for text in SAID.values()]
    done = run(home, "record", "--task", "food", "-f", "json", stdin=json.dumps(drafts))
    assert done.returncode == 0, done.stderr
    return dict(zip(SAID, (m["id"] for m in json.loads(done.stdout)), strict=True))


def state(home: Path) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Every moment and every concept of the index, as stored. (Not the file's bytes: the
    first command that may scrub the LangGraph store creates its empty tables in the SQLite
    file, a dry run too.)"""
    with Notebook.open(home) as nb:
        moments = [m.model_dump() for m in nb.moments()]
        concepts = [c.model_dump() for c in nb.backend.list_concepts()]
    return moments, concepts


def texts(home: Path) -> dict[str, str]:
    with Notebook.open(home) as nb:
        return {m.id: m.content.text for m in nb.moments()}


def test_forget_matches_every_word_of_the_concept_by_its_stem_and_shows_what_matched(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    ids = recorded(home)
    assert cfg.load_config(home).backend == "sqlite"
    before = state(home)

    dry = run(home, "forget", CONCEPT, "--dry-run", "-f", "json")
    assert dry.returncode == 0, dry.stderr
    report = json.loads(dry.stdout)
    assert report["moments"] == [ids["comma"], ids["allergic"]]
    assert report["matched"] == {
        ids["comma"]: ["Peanuts", "allergy"],
        ids["allergic"]: ["allergic", "peanuts"],
    }
    table = run(home, "forget", CONCEPT, "--dry-run")
    assert table.returncode == 0, table.stderr
    assert "matched" in table.stdout and "allergic, peanuts" in table.stdout
    assert "would forget 2 moment(s)" in table.stderr
    assert state(home) == before  # a dry run changes nothing

    gone = run(home, "forget", CONCEPT, "--reason", "health", "-f", "json")
    assert gone.returncode == 0, gone.stderr
    assert json.loads(gone.stdout)["moments"] == report["moments"]
    left = texts(home)
    assert left[ids["comma"]] == left[ids["allergic"]] == ""
    assert left[ids["butter"]] == SAID["butter"] and left[ids["season"]] == SAID["season"]


def test_forget_words_only_redacts_the_matched_words_and_keeps_the_rest(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ids = recorded(home)
    done = run(home, "forget", CONCEPT, "--words-only", "--reason", "health", "-f", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["words_only"] and report["moments"] == [ids["comma"], ids["allergic"]]
    assert texts(home) == {
        ids["comma"]: "[redacted], my [redacted], keep me away from the bakery.",
        ids["allergic"]: "Ana is [redacted] to [redacted].",
        ids["butter"]: SAID["butter"],
        ids["season"]: SAID["season"],
    }


@pytest.mark.parametrize("words_only", [False, True], ids=["whole", "words-only"])
def test_forget_scrubs_an_archived_original_and_the_rollups_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, words_only: bool
) -> None:
    """The archived original and a kept line (a decision) of the rollup over it say the
    concept in other words than its name; the archive file, the rollup's text and its kept
    lines are rewritten, and no file holds the words afterwards."""
    monkeypatch.setenv(cfg.EMBEDDER_ENV, "none")
    home = tmp_path / "home"
    with Notebook.open(home) as nb:
        for day in range(0, 12, 3):
            when = T0 + timedelta(days=day)
            session = nb.start_session(f"day {day}", started=when)
            said = [
                f"Ana booked seat {day} on the TGV to Lyon and the hotel Bellecour.",
                "Ana walked along the river Saone before the dinner in town.",
            ]
            if day == 3:
                said += [
                    "Ana said she is allergic to peanuts since she was a child.",
                    "We decided that the party menu has no peanuts because of the allergy.",
                ]
            moments = nb.record_many(
                session.id,
                [
                    {"text": t, "speaker": "Ana", "timestamp": when + timedelta(minutes=i)}
                    for i, t in enumerate(said)
                ],
            )
            if day == 3:
                original, decision = moments[-2].id, moments[-1].id
        nb.compact(now=T0 + timedelta(days=130))
        assert nb.backend.get_archived([original])  # archived under a rollup
        rollup = next(
            m for m in nb.backend.iter_moments() if m.rollup and original in m.rollup.originals
        )
        assert rollup.rollup is not None
        assert [k.source for k in rollup.rollup.kept] == [decision]
    assert holders(home, "peanut", "allerg")

    with Notebook.open(home) as nb:
        report = nb.forget(CONCEPT, "health", words_only=words_only)
        assert report.moments == [original, decision]
        assert report.matched[original] == ["allergic", "peanuts"]
        assert rollup.id in report.rollups
        archived = nb.archived_moment(original)
        scrubbed = nb.get_moment(rollup.id)
        assert scrubbed.rollup is not None
        if words_only:
            left = "Ana said she is [redacted] to [redacted] since she was a child."
            assert archived.content.text == left and archived.redacted is None
            assert [k.text for k in scrubbed.rollup.kept] == [
                "Ana: We decided that the party menu has no [redacted] because of the [redacted]."
            ]
            assert "child" in scrubbed.content.text
        else:
            assert archived.redacted is not None and archived.content.text == ""
            assert scrubbed.rollup.kept == []
        assert "Lyon" in scrubbed.content.text

    assert holders(home, "peanut", "allerg") == []
    assert holders(home, "Bellecour")
