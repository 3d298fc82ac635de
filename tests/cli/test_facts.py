"""The owner's fact commands (issue 30) run as the command runs: decisions with their
edits, pending items, conflicts listed and resolved, and ``forget`` by policy beside
``forget CONCEPT``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_notebook import config as cfg
from tests.support.clirun import cli, cli_process, data

ENV = {cfg.EMBEDDER_ENV: "none"}
MOMENTS = [
    {"text": "I have never used Docker.", "timestamp": "2026-01-01T10:00:00Z"},
    {"text": "I used Docker to deploy the blog last week.", "timestamp": "2026-01-02T10:00:00Z"},
    {"text": "The old wiki lived on a Raspberry Pi.", "timestamp": "2020-01-02T10:00:00Z"},
]


def run(home: Path, *args: str, stdin: str | None = None) -> Any:
    return cli(home, *args, stdin=stdin, env=ENV)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "nb"
    home.mkdir()
    cfg.write_config(home, cfg.NotebookConfig(facts=cfg.FactSettings(enabled=True)))
    assert run(home, "init").returncode == 0
    assert run(home, "record", "--task", "Tools", stdin=json.dumps(MOMENTS)).returncode == 0
    return home


def session_of(home: Path) -> str:
    return str(data(run(home, "sessions", "-f", "json"))[0]["id"])


def test_decisions_are_added_edited_and_listed_with_their_history(home: Path) -> None:
    s = session_of(home)
    made = data(run(home, "decide", s, "Use PostgreSQL 15", "--why", "JSONB", "-f", "json"))
    assert (made["id"], made["what"]) == ("d_1", "Use PostgreSQL 15")
    edited = data(run(home, "edit-decision", s, "d_1", "--what", "Use PostgreSQL 16", "-f", "json"))
    assert (edited["id"], edited["edits"], edited["why"]) == ("d_2", "d_1", "JSONB")
    log = data(run(home, "decisions", "--session", s, "-f", "json"))
    assert [(d["id"], d["what"], d["edited_by"]) for d in log] == [
        ("d_1", "Use PostgreSQL 15", "d_2"),
        ("d_2", "Use PostgreSQL 16", None),
    ]
    bad = run(home, "edit-decision", s, "d_5", "--what", "x")
    assert bad.returncode == 1 and b"no decision d_5" in bad.stderr
    assert len(data(run(home, "decisions", "-f", "json"))) == 2  # nothing was added


def test_pending_items_are_added_edited_closed_once_and_listed(home: Path) -> None:
    s = session_of(home)
    assert data(run(home, "add-pending", s, "Book a hotel", "-f", "json"))["id"] == "p_1"
    edited = data(run(home, "edit-pending", s, "p_1", "Book a hotel in Lyon", "-f", "json"))
    assert edited["what"] == "Book a hotel in Lyon"
    closed = data(run(home, "close-pending", s, "p_1", "--resolution", "booked", "-f", "json"))
    assert closed["resolution"] == "booked" and closed["closed"]
    again = run(home, "close-pending", s, "p_1")
    assert again.returncode == 1 and b"closed already" in again.stderr
    assert data(run(home, "pending", "--open", "-f", "json")) == []
    (item,) = data(run(home, "pending", "-f", "json"))
    assert (item["session"], item["what"]) == (s, "Book a hotel in Lyon")


def test_conflicts_are_listed_and_resolved_into_the_audit_log(home: Path) -> None:
    (pair,) = data(run(home, "conflicts", "-f", "json"))
    assert (pair["a"]["id"], pair["b"]["id"]) == ("m_1", "m_2")
    assert pair["a"]["text"] == "I have never used Docker." and pair["a"]["current"]
    table = run(home, "conflicts")
    assert b"m_1" in table.stdout and b"never used" in table.stdout
    neither = run(home, "resolve-conflict", "m_1", "m_2")
    assert neither.returncode == 1 and b"give keep" in neither.stderr
    done = run(home, "resolve-conflict", "m_1", "m_2", "--keep", "m_2", "--reason", "checked")
    assert done.returncode == 0, done.stderr
    assert b"kept m_2, m_1 superseded" in done.stderr
    assert data(run(home, "conflicts", "-f", "json")) == []
    last = data(run(home, "decisions", "-f", "json"))[-1]
    assert (last["what"], last["why"]) == (
        "conflict m_1 vs m_2 resolved: kept m_2, m_1 superseded",
        "checked",
    )
    assert data(run(home, "show", session_of(home), "-f", "json"))  # the session still reads


def test_the_conflicts_table_keeps_each_date_on_one_line_at_80_columns(home: Path) -> None:
    """Issue 43, item 7: the dates were folded across lines in an 80-column terminal."""
    table = cli_process(home, "conflicts", env={**ENV, "COLUMNS": "80"})
    assert table.returncode == 0, table.stderr.decode()
    lines = table.stdout.decode().splitlines()
    assert max(map(len, lines)) <= 80
    first = next(line for line in lines if "m_1" in line)  # a row a side, said first on top
    second = next(line for line in lines if "m_2" in line)
    assert "2026-01-01" in first and "I have never used Docker." in first, lines
    assert "2026-01-02" in second and lines.index(second) == lines.index(first) + 1, lines


def test_forget_by_policy_dry_run_then_for_good(home: Path) -> None:
    dry = run(home, "forget", "--older-than", "1000d", "--dry-run", "-f", "json")
    report = data(dry)
    assert report["dry_run"] and [m["id"] for m in report["moments"]] == ["m_3"]
    assert report["moments"][0]["excerpt"] == "The old wiki lived on a Raspberry Pi."
    assert b"would forget 1 of 3" in dry.stderr
    table = run(home, "forget", "--older-than", "1000d", "--dry-run")
    assert b"m_3" in table.stdout and b"Raspberry" in table.stdout
    for policy in (["--inactive-for", "1000d"], ["--keep-top", "2"]):  # the newer two stay
        picked = data(run(home, "forget", *policy, "--dry-run", "-f", "json"))["moments"]
        assert [m["id"] for m in picked] == ["m_3"], policy
    assert data(run(home, "moments", session_of(home), "-f", "json"))[2]["redacted"] is None

    for args, words in (
        (["--older-than", "3 months"], b"'3 months' is not a duration"),
        (["Lyon", "--keep-top", "2"], b"not both nor neither"),
        ([], b"not both nor neither"),
    ):
        bad = run(home, "forget", *args)
        assert bad.returncode == 1 and words in bad.stderr, bad.stderr
    gone = data(run(home, "forget", "--older-than", "1000d", "-f", "json"))
    assert [m["id"] for m in gone["moments"]] == ["m_3"] and not gone["dry_run"]
    moment = data(run(home, "moments", session_of(home), "-f", "json"))[2]
    assert moment["redacted"]["why"] == "forgetting policy: older than 1000d"
    audit = [d["what"] for d in data(run(home, "decisions", "-f", "json"))]
    assert "redacted m_3 (forgetting policy: older than 1000d)" in audit


@pytest.mark.parametrize("command", ["decisions", "pending", "conflicts"])
def test_with_facts_off_the_lists_say_how_to_turn_them_on(tmp_path: Path, command: str) -> None:
    home = tmp_path / "off"
    assert run(home, "init").returncode == 0
    result = run(home, command)
    assert result.returncode == 0
    err = result.stderr.decode()
    assert "facts are off" in err and "enabled: true" in err


def test_with_facts_on_the_lists_say_nothing_of_it(home: Path) -> None:
    assert b"facts are off" not in run(home, "decisions").stderr


def test_about_shows_the_current_job_its_history_and_forget_removes_it(tmp_path: Path) -> None:
    from tests.support.subjects import SESSIONS, moments_of

    home = tmp_path / "maya"
    home.mkdir(mode=0o700)
    cfg.write_config(home, cfg.NotebookConfig(facts=cfg.FactSettings(enabled=True)))
    for index, (task, _) in enumerate(SESSIONS):
        recorded = run(home, "record", "--task", task, stdin=json.dumps(moments_of(index)))
        assert recorded.returncode == 0, recorded.stderr
    view = data(run(home, "about", "Maya", "-f", "json"))
    employer = next(f for f in view["facts"] if f["key"] == "employer")
    assert [(v["value"], v["moment"]) for v in employer["current"]] == [("Monzo", "m_5")]
    assert [(v["value"], v["ended"], v["replaced_with"]) for v in employer["history"]] == [
        ("Tesco", "story", None),
        ("Tesco", "superseded", "Monzo"),
    ]
    table = run(home, "about", "maya")
    assert table.returncode == 0
    assert b"Monzo" in table.stdout and b"superseded" in table.stdout
    assert b"open conflicts" in table.stdout
    then = data(run(home, "about", "Maya", "--as-of", "2026-05-15", "-f", "json"))
    assert [v["value"] for f in then["facts"] if f["key"] == "employer" for v in f["current"]] == [
        "Tesco"
    ]
    bad = run(home, "about", "Maya", "--as-of", "soon")
    assert bad.returncode == 1 and b"--as-of: 'soon' is not an ISO 8601" in bad.stderr
    assert run(home, "forget", "Monzo", "--reason", "left").returncode == 0
    after = run(home, "about", "Maya", "-f", "json")
    assert b"monzo" not in after.stdout.lower()


def test_about_with_facts_off_says_nothing_is_linked(tmp_path: Path) -> None:
    home = tmp_path / "off"
    assert run(home, "init").returncode == 0
    said = [{"text": "I work at Tesco.", "speaker": "Maya"}]
    assert run(home, "record", "--task", "t", stdin=json.dumps(said)).returncode == 0
    shown = run(home, "about", "Maya")
    assert shown.returncode == 0 and b"facts are off" in shown.stderr
    assert b"Tesco" in shown.stdout and b"current" in shown.stdout
