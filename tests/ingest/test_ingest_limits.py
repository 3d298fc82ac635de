"""``ingest`` within stated bounds (issue 40, items 7 and 8): a JSON file over
``MAX_JSON_BYTES`` or a JSONL file over ``MAX_JSONL_BYTES`` is refused before it is read
(sparse files: nothing is allocated), the limit in the message; a JSONL file is read a line
at a time (a bad line further on still records nothing); a JSON number of 5,001 digits is
one ``error:`` line, not a traceback. Through the command (the real process once); the
peak memory is measured in ``bench/ingest_memory.py``, not here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_notebook.ingest.source import MAX_JSON_BYTES, MAX_JSONL_BYTES, MAX_LINE_BYTES
from tests.support.clirun import cli, cli_process, counts


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "nb"
    assert cli(home, "init").returncode == 0
    return home


def refused(home: Path, path: Path, *words: str, process: bool = False) -> str:
    done = (cli_process if process else cli)(home, "ingest", str(path))
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert err.startswith("error: ") and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err
    assert counts(home) == (0, 0)
    return err


def sparse(path: Path, size: int) -> Path:
    with path.open("wb") as f:
        f.truncate(size)  # a hole: no disk, no memory, the size stat reports
    return path


def test_a_json_file_over_the_limit_is_refused_before_it_is_read(
    home: Path, tmp_path: Path
) -> None:
    big = sparse(tmp_path / "chat.json", MAX_JSON_BYTES + 1)
    err = refused(home, big, "256 MiB", "JSONL", "nothing was read", process=True)
    assert "2 GiB" in err  # where to go instead, with its limit
    huge = sparse(tmp_path / "chat.jsonl", MAX_JSONL_BYTES + 1)
    refused(home, huge, "2 GiB", "Split it")


def test_jsonl_is_read_a_line_at_a_time_and_a_bad_line_records_nothing(
    home: Path, tmp_path: Path
) -> None:
    path = tmp_path / "chat.jsonl"
    good = {"role": "user", "content": "Book the train to Lyon"}
    lines = [json.dumps(good)] * 3 + ["", json.dumps({"role": "user"})]
    path.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")
    err = refused(home, path, f"{path}:5", "message 3: has no 'content'")
    assert "Traceback" not in err
    data = json.dumps(good).encode() + b'\n{"role": "user", "content": "caf\xe9"}\n'
    path.write_bytes(data)
    at = data.index(b"\xe9")
    refused(home, path, f"{path}:2", f"invalid UTF-8 at byte {at}")
    long_line = b'{"role": "user", "content": "' + b"a" * MAX_LINE_BYTES + b'"}\n'
    path.write_bytes(long_line)
    refused(home, path, f"{path}:1", "a line over 64 MiB")
    path.write_text("\n".join([json.dumps(good)] * 3) + "\n", encoding="utf-8")
    done = cli(home, "ingest", str(path))
    assert done.returncode == 0, done.stderr.decode()
    assert counts(home) == (1, 3)


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_number_of_5001_digits_is_one_clear_line(home: Path, tmp_path: Path, suffix: str) -> None:
    message = '{"role": "user", "content": "hi", "id": ' + "7" * 5001 + "}"
    path = tmp_path / f"chat{suffix}"
    path.write_text(f"[{message}]" if suffix == ".json" else message + "\n", encoding="utf-8")
    refused(home, path, str(path), "4300 digits", process=suffix == ".json")
