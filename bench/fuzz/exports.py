"""Part 4: hand-made bad YAML exports, imported."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from .common import (
    MIB,
    Tally,
    Tree,
    classify_cli,
    last_line,
    make_home,
    run_child,
)

# -- part 4: hand-made YAML exports -------------------------------------------------------------


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        refs = ",".join([f"*a{i - 1}"] * width)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


def yaml_cases(template: Path) -> dict[str, Callable[[Path], None]]:
    """Each bad export: a function that spoils a copy of ``template`` (a good export)."""
    moment = next(template.glob("sessions/*/moments/m_1.yaml")).relative_to(template)
    session = next(template.glob("sessions/*.yaml")).relative_to(template)
    media = next(template.glob("media/*/*")).relative_to(template)
    bomb = alias_bomb()

    def edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
        data = yaml.safe_load(path.read_text())
        change(data)
        path.write_text(yaml.safe_dump(data, allow_unicode=True, width=10**9))

    def set_in(rel: Path, dotted: str, value: Any) -> Callable[[Path], None]:
        def go(root: Path) -> None:
            def change(data: dict[str, Any]) -> None:
                node = data
                *parents, last = dotted.split(".")
                for p in parents:
                    node = node[p]
                node[last] = value

            edit(root / rel, change)

        return go

    def text_of(size: int) -> Callable[[Path], None]:
        return set_in(moment, "content.text", "x" * size)

    def bomb_in(rel: Path) -> Callable[[Path], None]:
        def go(root: Path) -> None:
            (root / rel).write_text(
                (root / rel).read_text()
                + "bomb:\n"
                + "".join("  " + x + "\n" for x in bomb.splitlines())
            )

        return go

    def raw(rel: Path, text: str) -> Callable[[Path], None]:
        return lambda root: (root / rel).write_text(text)

    def symlink_media(root: Path) -> None:
        target = root.parent / f"{root.name}-outside.bin"
        shutil.copy(root / media, target)  # same bytes: only the link gives it away
        (root / media).unlink()
        (root / media).symlink_to(target)

    def symlink_dir(root: Path) -> None:
        outside = root.parent / f"{root.name}-outside-media"
        shutil.move(str(root / "media"), outside)
        (root / "media").symlink_to(outside)

    def no_counters(root: Path) -> None:
        edit(root / "index.yaml", lambda d: d.pop("counters", None))

    def renamed(root: Path) -> None:
        (root / moment).rename((root / moment).with_name("m_999.yaml"))

    def deep(root: Path) -> None:
        (root / moment).write_text(
            (root / moment).read_text() + "deep: " + "[" * 100_000 + "]" * 100_000 + "\n"
        )

    def actions_deep(root: Path) -> None:
        node: Any = {"type": "x"}
        for _ in range(200):
            node = {"type": "x", "args": node}
        set_in(moment, "actions", [node])(root)

    def bomb_in_result(root: Path) -> None:
        # anchors and aliases inside a value the model walks (an action's JSON result)
        inner = "".join("      " + x + "\n" for x in bomb.splitlines())
        text = (
            (root / moment)
            .read_text()
            .replace("actions: []", "actions:\n- tool: t\n  result:\n" + inner, 1)
        )
        (root / moment).write_text(text)

    return {
        "alias bomb in an action's result": bomb_in_result,
        "alias bomb in a moment file": bomb_in(moment),
        "alias bomb in a session file": bomb_in(session),
        "alias bomb in index.yaml": bomb_in(Path("index.yaml")),
        "one alias (not a bomb) in a moment": lambda root: (root / moment).write_text(
            (root / moment).read_text() + "extra: &x [1]\nagain: *x\n"
        ),
        "index.yaml without counters": no_counters,
        "a 26-digit counter": set_in(Path("index.yaml"), "counters.moment", 10**25),
        "a counter of 5,001 digits": lambda root: (root / "index.yaml").write_text(
            (root / "index.yaml")
            .read_text()
            .replace("moment: ", "moment: " + "9" * 5001 + "0*", 1)
            .replace("0*", "", 1)
        ),
        "a negative counter": set_in(Path("index.yaml"), "counters.moment", -5),
        "index.yaml a list": raw(Path("index.yaml"), "- 1\n- 2\n"),
        "index.yaml empty": raw(Path("index.yaml"), ""),
        "a moment text of 2 MiB": text_of(2 * MIB),
        "a moment text of 20 MiB": text_of(20 * MIB),
        "importance of 5,001 digits": lambda root: (root / moment).write_text(
            re.sub(r"importance: .*", "importance: " + "9" * 5001, (root / moment).read_text())
        ),
        "importance 1e308": set_in(moment, "metadata.importance", 1e308),
        "text a number": set_in(moment, "content.text", 12345),
        "timestamp 'yesterday'": set_in(moment, "timestamp", "yesterday"),
        "timestamp 9999-12-31T23:59:59-14:00": set_in(
            moment, "timestamp", "9999-12-31T23:59:59-14:00"
        ),
        "concepts a mapping": set_in(moment, "metadata.concepts", {"a": 1}),
        "session task a list": set_in(session, "task", ["a", "b"]),
        "session decisions a string": set_in(session, "decisions", "all of them"),
        "moment id ../../escape": set_in(moment, "id", "../../escape"),
        "moment file named for another id": renamed,
        "nesting 100,000 deep": deep,
        "actions nested 200 deep": actions_deep,
        "a python/object tag": lambda root: (root / moment).write_text(
            (root / moment).read_text() + "evil: !!python/object/apply:os.system ['true']\n"
        ),
        "a duplicate key": lambda root: (root / moment).write_text(
            (root / moment).read_text() + "id: m_77\n"
        ),
        "not UTF-8": lambda root: (root / moment).write_bytes(
            b"\xff\xfe" + (root / moment).read_bytes()
        ),
        "a symbolic link in media/": symlink_media,
        "media/ a symbolic link": symlink_dir,
        "image_path outside media": set_in(moment, "image_path", "../../../etc/hostname"),
    }


def yaml_part(tree: Tree, tmp: Path, args: argparse.Namespace) -> tuple[list[Tally], list[str]]:
    from PIL import Image

    source = tmp / "yaml-source"
    make_home(tree, source)
    image = tmp / "red.png"
    Image.new("RGB", (32, 32), (200, 10, 10)).save(image)
    first = tree.cli(
        "record",
        "--home",
        str(source),
        "--task",
        "Trip",
        "--format",
        "json",
        stdin=json.dumps({"text": "Ana books the train to Lyon", "speaker": "Ana"}).encode(),
    )
    sid = json.loads(first.stdout)[0]["session"]
    tree.cli(
        "record",
        "--home",
        str(source),
        "--session",
        sid,
        "--image",
        str(image),
        stdin=json.dumps({"text": "a red square"}).encode(),
    )
    tree.cli("decide", sid, "Take the train", "--home", str(source))
    template = tmp / "yaml-template"
    tree.cli("export", "--to", "yaml", str(template), "--home", str(source))
    empty = tmp / "yaml-empty-home"
    make_home(tree, empty)
    tally = Tally("YAML imports (bad exports)")
    control = Tally("  the good export (control)")
    lines = [
        "| export | exit | s | peak RSS MiB | imported? | what it said |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    cases: dict[str, Callable[[Path], None] | None] = {
        "the good export": None,
        **yaml_cases(template),
    }
    cap = int(args.import_mem_gib * 1024**3)
    for i, (name, spoil) in enumerate(cases.items()):
        root = tmp / "yaml-cases" / str(i) / "export"
        root.parent.mkdir(parents=True)
        shutil.copytree(template, root, symlinks=True)
        try:
            if spoil:
                spoil(root)
        except Exception as err:  # noqa: BLE001 - a case that cannot be made: say so
            lines.append(f"| {name} | - | - | - | - | could not make it: {err} |")
            continue
        home = tmp / "yaml-cases" / str(i) / "home"
        shutil.copytree(empty, home)
        done = run_child(
            tree,
            ["import", str(root), "--home", str(home)],
            b"",
            args.import_timeout,
            root.parent / "run",
            mem_cap=cap,
        )
        kind, code = classify_cli(done)
        said = (last_line(done.stderr) or last_line(done.stdout)).replace(str(root), "<export>")
        if done.code is not None and done.code < 0:
            said = f"killed by signal {-done.code} ({signal.Signals(-done.code).name})"
        if done.code is None:
            said = f"killed after {args.import_timeout:.0f} s"
        elif kind == "traceback":
            said = "traceback: " + said
        imported = "yes" if done.code == 0 else "no"
        t = control if spoil is None else tally
        t.add(kind, code, f"import '{name}'", f"exit {code}: {said}")
        t.seconds += done.seconds
        if spoil is not None and done.code == 0:
            t.found.append(("accepted", f"import '{name}'", said))
        lines.append(
            f"| {name} | {code} | {done.seconds:.1f} | {done.max_rss_kib / 1024:.0f} | {imported} | {said[:110].replace('|', '/')} |"
        )
        shutil.rmtree(root.parent, ignore_errors=True)
    accepted = sum(1 for k, *_ in tally.found if k == "accepted")
    tally.note = f"{accepted} of {len(cases) - 1} bad exports imported (exit 0); address space capped at {args.import_mem_gib:g} GiB, {args.import_timeout:.0f} s each"
    return [tally, control], lines
