"""The ``agent-notebook`` command: data on stdout, messages on stderr, exit codes, and errors
that change nothing. It runs in the test's process (``clirun``), and once as a real process."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.clirun import cli, cli_process, counts, data

SESSION = "s_2026-05-20_001"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "nb"
    assert cli(home, "init").returncode == 0
    chat = [
        {
            "role": "user",
            "speaker": "Ana",
            "content": "Book the train to Lyon",
            "id": "u1",
            "timestamp": "2026-05-20T09:00:00Z",
        },
        {
            "role": "assistant",
            "content": "Booked seat 42 on the TGV",
            "id": "a1",
            "timestamp": "2026-05-20T10:00:00Z",
        },
    ]
    (tmp_path / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    assert cli(home, "ingest", str(tmp_path / "chat.json")).returncode == 0
    return home


def test_record_prints_json_data_and_messages_on_stderr(home: Path) -> None:
    drafts = [{"text": "Pack the charger", "speaker": "Ana"}, {"text": "Done", "role": "assistant"}]
    result = cli(
        home, "record", "--session", SESSION, "-f", "json", stdin=json.dumps(drafts).encode()
    )
    recorded = data(result)
    assert [m["id"] for m in recorded] == ["m_3", "m_4"]
    assert recorded[0]["session"] == SESSION and recorded[0]["speaker"] == "Ana"
    assert "recorded 2 moment(s)" in result.stderr.decode()
    one = data(
        cli(
            home,
            "record",
            "-f",
            "json",
            stdin=json.dumps({"session": SESSION, "text": "x"}).encode(),
        )
    )
    assert one[0]["id"] == "m_5"
    new = data(cli(home, "record", "--task", "Errands", "-f", "json", stdin=b'{"text": "milk"}'))
    assert new[0]["session"] != SESSION
    assert counts(home) == (2, 6)


def test_listing_and_show(home: Path) -> None:
    sessions = data(cli(home, "sessions", "-f", "json"))
    assert [s["id"] for s in sessions] == [SESSION] and sessions[0]["stats"]["moments"] == 2
    moments = data(cli(home, "moments", SESSION, "-f", "json", "--offset", "1"))
    assert [(m["id"], m["source_id"]) for m in moments] == [("m_2", "a1")]
    shown = data(cli(home, "show", SESSION))
    assert shown["id"] == SESSION and shown["context"]["recent_moments"] == ["m_1", "m_2"]
    table = cli(home, "sessions")
    assert table.returncode == 0 and SESSION in table.stdout.decode()


def test_search_with_filters(home: Path) -> None:
    def ids(*args: str) -> list[str]:
        return [h["moment"]["id"] for h in data(cli(home, "search", *args, "-f", "json"))]

    assert ids("train TGV") == ["m_1", "m_2"] or ids("train TGV") == ["m_2", "m_1"]
    assert ids("train TGV", "--speaker", "ana") == ["m_1"]
    assert ids("train TGV", "--since", "2026-05-20T09:30") == ["m_2"]
    assert ids("train TGV", "--until", "2026-05-20T09:30:00+00:00") == ["m_1"]
    assert ids("train TGV", "--session", SESSION, "--limit", "1") in (["m_1"], ["m_2"])
    bad = cli(home, "search", "train", "--since", "yesterday")
    assert bad.returncode == 1 and "--since" in bad.stderr.decode() and not bad.stdout


@pytest.mark.parametrize(
    ("stdin", "args", "expected"),
    [
        (b'{"text": "x"', ["--session", SESSION], "not JSON"),
        (b'{"text": "caf\xe9"}', ["--session", SESSION], "not valid UTF-8 at byte 13"),
        (b'{"text": "x"}', ["--session", "s_2026-01-01_001"], "no session s_2026-01-01_001"),
        (b'{"text": "x"}', ["--session", "../x"], "invalid session id '../x'"),
        (b'{"text": "x", "importance": 1.5}', ["--session", SESSION], "importance"),
        (b'[{"text": "ok"}, {"text": 3}]', ["--session", SESSION], "moment 1"),
        (b"[]", ["--session", SESSION], "non-empty list"),
        (b'{"text": "x", "session": {}}', [], '"session" must be a session id'),
        (b'[{"text": "x", "session": []}]', [], '"session" must be a session id'),
    ],
)
def test_bad_record_input_names_the_problem_and_changes_nothing(
    home: Path, stdin: bytes, args: list[str], expected: str
) -> None:
    before = counts(home)
    result = cli(home, "record", *args, stdin=stdin)
    assert result.returncode == 1
    assert expected in result.stderr.decode()
    assert result.stdout == b""
    assert counts(home) == before


def test_malformed_ingest_file_names_the_line_and_changes_nothing(
    home: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "fine"}\n{"role": "user"}\n', encoding="utf-8")
    before = counts(home)
    result = cli(home, "ingest", str(bad))
    assert result.returncode == 1
    assert f"{bad}:2" in result.stderr.decode()
    assert counts(home) == before


def test_usage_errors_exit_2(home: Path) -> None:
    assert cli(home, "search").returncode == 2
    assert cli(home, "sessions", "--format", "xml").returncode == 2


def test_export_import_round_trip(home: Path, tmp_path: Path) -> None:
    exported = cli(home, "export", "--to", "yaml", str(tmp_path / "out"))
    assert exported.returncode == 0, exported.stderr.decode()
    assert (tmp_path / "out" / "sessions" / SESSION / "moments" / "m_2.yaml").exists()
    other = tmp_path / "other"
    assert cli(other, "import", str(tmp_path / "out")).returncode == 0
    assert data(cli(other, "show", SESSION)) == data(cli(home, "show", SESSION))
    again = cli(other, "import", str(tmp_path / "out"))
    assert again.returncode == 0 and "3 identical record(s) skipped" in again.stderr.decode()
    db = cli(home, "export", "--to", "sqlite", str(tmp_path / "copy.db"))
    assert db.returncode == 0 and (tmp_path / "copy.db").exists()


def test_opening_a_missing_notebook_says_how_to_create_it(tmp_path: Path) -> None:
    result = cli(tmp_path / "nowhere", "sessions")
    assert result.returncode == 1 and "agent-notebook init" in result.stderr.decode()
    assert not (tmp_path / "nowhere").exists()


def test_session_notebook_commands(home: Path) -> None:
    set_ = cli(home, "notebook", "set", "t-1", "Current State", stdin=b"Implementing auth\n")
    assert set_.returncode == 0 and set_.stdout.decode().strip() == "Implementing auth"
    shown = data(cli(home, "notebook", "show", "t-1", "--section", "Current State", "-f", "json"))
    assert shown["content"] == "Implementing auth"
    whole = cli(home, "notebook", "show", "t-1")
    assert "## Worklog\n_Chronological activity log_" in whole.stdout.decode()
    bad = cli(home, "notebook", "set", "t-1", "Bogus", stdin=b"x")
    assert bad.returncode == 1 and "Current State" in bad.stderr.decode()
    dotted = cli(home, "notebook", "show", "a.b")
    assert dotted.returncode == 1 and "period" in dotted.stderr.decode()
    listed = cli(home, "notebook", "list", "-f", "json")
    assert data(listed) == ["t-1"]
    unknown = cli(home, "notebook", "show", "nosuchthread")
    assert unknown.returncode == 1 and unknown.stdout == b""
    assert "has no session notebook" in unknown.stderr.decode()
    assert "notebook list" in unknown.stderr.decode()


def test_importing_the_same_export_twice_keeps_every_name(home: Path, tmp_path: Path) -> None:
    """A hand-written session notebook (no session, no checkpoint) is the same thread when
    imported again, not a new ``t-1~2``; the second import writes nothing."""
    cli(home, "notebook", "set", "t-1", "Current State", stdin=b"Implementing auth\n")
    assert cli(home, "export", str(tmp_path / "out")).returncode == 0
    for _ in range(2):
        again = cli(home, "import", str(tmp_path / "out"), "-f", "json")
        assert again.returncode == 0, again.stderr.decode()
        report = data(again)
        assert (report["sessions"], report["moments"], report["store_items"]) == (0, 0, 0)
        assert report["renumbered"] == {} and report["kept"] == []
    assert data(cli(home, "notebook", "list", "-f", "json")) == ["t-1"]


def test_the_command_as_a_process_keeps_data_messages_and_codes_apart(
    home: Path, tmp_path: Path
) -> None:
    """What the in-process runs stand for: ``python -m agent_notebook`` itself."""
    listed = cli_process(home, "sessions", "-f", "json")
    assert [s["id"] for s in data(listed)] == [SESSION] and listed.stderr == b""
    missing = cli_process(tmp_path / "nowhere", "sessions")
    assert missing.returncode == 1 and missing.stdout == b""
    assert "agent-notebook init" in missing.stderr.decode()
    assert "Traceback" not in missing.stderr.decode()
    assert cli_process(home, "sessions", "--format", "xml").returncode == 2


def test_forget_previews_the_text_and_refuses_a_concept_nothing_mentions(home: Path) -> None:
    preview = cli(home, "forget", "Lyon", "--dry-run", "--words-only", env={"COLUMNS": "200"})
    assert preview.returncode == 0, preview.stderr.decode()
    out = preview.stdout.decode()
    assert "m_1" in out and "Book the train to [redacted]" in out  # what would be left
    assert "would forget the words of 1 moment(s)" in preview.stderr.decode()
    unknown = cli(home, "forget", "zeppelin")
    assert unknown.returncode == 1
    assert "nothing in the notebook mentions 'zeppelin'" in unknown.stderr.decode()
    assert data(cli(home, "show", SESSION))["id"] == SESSION  # nothing was changed


def test_search_marks_a_superseded_moment_with_facts_on(tmp_path: Path) -> None:
    home = tmp_path / "nb"
    assert cli(home, "init").returncode == 0
    with (home / "config.yaml").open("a", encoding="utf-8") as config:
        config.write("\nfacts:\n  enabled: true\n")
    chat = [
        {"role": "user", "content": text, "id": f"u{n}", "timestamp": f"2026-05-2{n}T09:00:00Z"}
        for n, text in enumerate(["The launch is on June 5.", "The launch moved to June 12."])
    ]
    (tmp_path / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    assert cli(home, "ingest", str(tmp_path / "chat.json")).returncode == 0
    hits = data(cli(home, "search", "launch", "--mode", "lexical", "-f", "json"))
    assert [(h["moment"]["id"], h["superseded_by"]) for h in hits] == [
        ("m_2", None),
        ("m_1", "m_2"),
    ]
    # a process of its own: this one's console took its width when it was made
    table = cli_process(home, "search", "launch", "--mode", "lexical", env={"COLUMNS": "200"})
    assert "superseded by m_2" in table.stdout.decode()


def test_search_explain_reads_at_80_columns_and_the_table_has_a_date(home: Path) -> None:
    narrow = {"COLUMNS": "80", "AGENT_NOTEBOOK_EMBEDDER": "none"}
    explained = cli_process(home, "search", "train Lyon", "--explain", env=narrow)
    assert explained.returncode == 0, explained.stderr.decode()
    out = explained.stdout.decode()
    assert out.startswith("#1 m_1  score ") and "2026-05-20" in out
    assert "found by: lexical " in out and "relevance " in out
    assert max(len(line) for line in out.splitlines()) <= 80
    table = cli_process(home, "search", "train Lyon", env=narrow).stdout.decode()
    assert "date" in table and "2026-05-20" in table


def test_search_explain_shows_the_date_signal_of_a_query_naming_a_day(home: Path) -> None:
    """The date signal (moments said on a day the query names) is one of what found a hit,
    and ``--explain`` shows it beside the others, as it shows every signal that found one."""
    wide = {"COLUMNS": "200", "AGENT_NOTEBOOK_EMBEDDER": "none"}
    explained = cli_process(home, "search", "train on 2026-05-20", "--explain", env=wide)
    assert explained.returncode == 0, explained.stderr.decode()
    found_by = [line for line in explained.stdout.decode().splitlines() if "found by:" in line]
    assert found_by and all(" date " in line for line in found_by)
    assert re.search(r" date \d+% #1", found_by[0])  # the train: by its words and its day
    hits = data(cli(home, "search", "train on 2026-05-20", "-f", "json", "--explain", env=wide))
    assert hits[0]["explain"]["date_share"] > 0 and hits[0]["explain"]["date_rank"] == 1.0
