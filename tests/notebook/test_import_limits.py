"""``import`` of a hostile or broken YAML export (issue 40, items 2, 4 and 8): an alias bomb
in a moment file, ``index.yaml`` or a session file; a moment over ``moments.max_text_bytes``;
``index.yaml`` without counters or with a counter past 2^63; a symbolic link in ``media/``;
brackets nested 100,000 deep.
Each is one ``error:`` line naming the file, exit 1, and nothing imported; the source folder
is only read (no ``.lock`` left in it). Run through the command (the real process once)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.core.yamlcodec import load_data
from tests.support.clirun import cli, cli_process, counts
from tests.support.media import make_image

SESSION = "s_2026-05-20_001"


def _bomb(levels: int = 12) -> str:
    """A YAML billion-laughs: each anchor repeats the one before nine times."""
    out = 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    for n in range(1, levels):
        out += f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]\n"
    return out


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A YAML export of a notebook with one session, two moments and an image."""
    root = tmp_path_factory.mktemp("export")
    with Notebook.open(root / "home") as nb:
        s = nb.start_session("Plan the Lyon trip")
        nb.record(s.id, "Book the 09:04 TGV", speaker="Ana")
        nb.record(s.id, "The harbour", image=make_image(root / "harbour.png", 1), speaker="Ana")
        nb.decide(s.id, "Take the train", who="Ana")
    assert cli(root / "home", "export", "--to", "yaml", str(root / "yaml")).returncode == 0
    assert not (root / "yaml" / ".lock").exists()  # export leaves no lock either
    return root / "yaml"


@pytest.fixture
def source(export: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "source"
    shutil.copytree(export, copy, symlinks=True)
    return copy


@pytest.fixture
def target(tmp_path: Path) -> Path:
    home = tmp_path / "target"
    assert cli(home, "init").returncode == 0
    return home


def moment_file(source: Path, number: int = 1) -> Path:
    (found,) = source.glob(f"sessions/*/moments/m_{number}.yaml")
    return found


def refused(target: Path, source: Path, *words: str, process: bool = False) -> str:
    """Import ``source`` into ``target``: exit 1, one ``error:`` line holding ``words``,
    nothing imported, no trace left in the source."""
    before = sorted(p.relative_to(source) for p in source.rglob("*"))
    run = cli_process if process else cli
    done = run(target, "import", str(source))
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert "Traceback" not in err and err.startswith("error: "), err
    assert len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err
    assert counts(target) == (0, 0)
    assert not (target / "media").exists() or not list((target / "media").rglob("*.png"))
    assert sorted(p.relative_to(source) for p in source.rglob("*")) == before
    return err


def test_an_import_leaves_no_lock_file_in_the_source(source: Path, target: Path) -> None:
    assert not (source / ".lock").exists()
    done = cli(target, "import", str(source))
    assert done.returncode == 0, done.stderr.decode()
    assert counts(target) == (1, 2)
    assert sorted(p.name for p in source.iterdir()) == ["index.yaml", "media", "sessions"]
    again = cli(target, "import", str(source))  # the same source again: skipped, still no lock
    assert again.returncode == 0 and not (source / ".lock").exists()


def test_an_alias_bomb_in_a_moment_file_is_refused_at_once(source: Path, target: Path) -> None:
    path = moment_file(source)
    path.write_text(path.read_text() + _bomb(), encoding="utf-8")
    err = refused(target, source, str(path), "alias", process=True)
    assert "write the value out in full" in err


def test_brackets_nested_100000_deep_are_refused_not_a_crash(source: Path, target: Path) -> None:
    """LibYAML recursed on the C stack and killed the process (SIGSEGV); found by
    bench/fuzz_fronts.py."""
    path = moment_file(source)
    path.write_text(path.read_text() + "deep: " + "[" * 100_000 + "]" * 100_000 + "\n")
    refused(target, source, str(path), "nested too deeply", process=True)


def test_a_text_full_of_brackets_in_a_block_scalar_still_reads() -> None:
    text = "text: |\n  " + "[{" * 2000 + "\n"
    assert load_data(text, Path("m_1.yaml")) == {"text": "[{" * 2000 + "\n"}


@pytest.mark.parametrize("name", ["index.yaml", "session"])
def test_an_alias_bomb_in_index_or_session_file_is_refused(
    source: Path, target: Path, name: str
) -> None:
    path = (
        source / "index.yaml" if name == "index.yaml" else source / "sessions" / f"{SESSION}.yaml"
    )
    if name == "session":
        (path,) = (source / "sessions").glob("s_*.yaml")
    path.write_text(path.read_text() + _bomb(), encoding="utf-8")
    refused(target, source, str(path), "alias")


def test_a_merge_key_alias_and_a_scalar_alias_are_refused(source: Path, target: Path) -> None:
    path = moment_file(source)
    text = path.read_text()
    path.write_text(text.replace("speaker: Ana", "speaker: &who Ana\nrole: *who"), encoding="utf-8")
    refused(target, source, str(path), "alias")


def test_a_moment_over_the_record_limit_is_refused(source: Path, target: Path) -> None:
    path = moment_file(source)
    big = "word " * (2 * 1024 * 1024 // 5 + 1)  # 2 MiB, over the 1 MiB record limit
    text = re.sub(r"text: .*", f"text: {big.strip()}", path.read_text(), count=1)
    path.write_text(text, encoding="utf-8")
    err = refused(target, source, str(path), "2 MiB", "moments.max_text_bytes", "imported")
    assert "over the limit of 1 MiB" in err


def test_an_index_without_counters_or_with_a_huge_counter_is_refused(
    source: Path, target: Path
) -> None:
    index = source / "index.yaml"
    original = index.read_text()
    index.write_text(re.sub(r"counters:\n(  .*\n)*", "", original), encoding="utf-8")
    refused(target, source, str(index), "'counters'")
    index.write_text(re.sub(r"(  moment): [0-9]+", r"\1: " + "9" * 26, original), encoding="utf-8")
    refused(target, source, str(index), "counters.moment", "whole number from 0 to")
    index.write_text(
        re.sub(r"(  moment): [0-9]+", r"\1: " + "9" * 5001, original), encoding="utf-8"
    )
    refused(target, source, str(index), "4300 digits")


def test_a_symlink_in_media_is_not_followed(source: Path, target: Path, tmp_path: Path) -> None:
    (image,) = (source / "media").rglob("*.png")
    outside = tmp_path / "secret.png"
    shutil.copyfile(image, outside)  # the very bytes the name promises: an oracle if read
    image.unlink()
    image.symlink_to(outside)
    os.chmod(outside, 0o000)  # reading it would fail differently: it must not be opened
    try:
        refused(target, source, str(image), "symbolic link", "cp -L", process=True)
    finally:
        os.chmod(outside, 0o600)
    folder = image.parent  # a linked folder inside media/ is refused too
    shutil.move(folder, tmp_path / "elsewhere")
    folder.symlink_to(tmp_path / "elsewhere")
    refused(target, source, str(folder), "symbolic link")
