"""Part 3: the CLI, in real processes."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from .common import (
    EDGE_STRINGS,
    EDGE_VALUES,
    Tally,
    Tree,
    classify_cli,
    draw,
    last_line,
    log,
    make_home,
    run_child,
)

# -- part 3: the CLI ----------------------------------------------------------------------------


def cli_strategies(seeded_session: str, seeded_moment: str, files: Path) -> Any:
    from hypothesis import strategies as st

    chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
    word = st.text(chars, max_size=30)
    # one argument of argv is at most 128 KiB (MAX_ARG_STRLEN): the 600 KB edge is cut to 100 KB
    plain = st.sampled_from(
        [
            "Ana",
            "Book the train to Lyon",
            "2026-06-07",
            "2026-06-07T10:00Z",
            "10",
            "p_1",
            "d_1",
            "me",
            "30d",
        ]
    )
    arg = st.one_of(
        plain, word, st.sampled_from([s.replace("\x00", "")[:100_000] for s in EDGE_STRINGS])
    )
    session = st.one_of(st.just(seeded_session), arg)
    number = st.one_of(st.integers(), st.integers(-3, 300000).map(str), st.just("1e308"), word).map(
        str
    )
    scalar = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        word,
        st.sampled_from(EDGE_VALUES[:12]),
    )
    wild = st.recursive(
        scalar,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(word, inner, max_size=4),
        max_leaves=12,
    )
    draft_keys = [
        "text",
        "role",
        "speaker",
        "timestamp",
        "importance",
        "concepts",
        "retrieval_keys",
        "actions",
        "parent",
        "source_id",
        "session",
        "pinned",
        "decay_rate",
    ]
    draft = st.fixed_dictionaries(
        {"text": st.one_of(word, arg)},
        optional={
            k: st.one_of(wild, st.sampled_from(EDGE_VALUES)) for k in draft_keys if k != "text"
        },
    )
    json_stdin = st.one_of(draft, st.lists(draft, max_size=4), wild).map(
        lambda v: json.dumps(v, default=str).encode()
    )
    stdin = st.one_of(json_stdin, st.binary(max_size=200))

    def opt(name: str, value: Any) -> Any:
        return st.one_of(st.just([]), value.map(lambda v: [name, v]))

    def cmd(*parts: Any) -> Any:
        return st.tuples(*parts).map(
            lambda ps: [x for p in ps for x in (p if isinstance(p, list) else [p])]
        )

    message = st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system", "tool", "x"]) | wild},
        optional={
            "content": wild | word,
            "timestamp": wild | st.sampled_from(EDGE_STRINGS),
            "speaker": wild,
            "id": wild,
        },
    )
    ingest_body = st.one_of(
        st.lists(message, max_size=5).map(lambda v: json.dumps(v, default=str).encode()),
        st.lists(message, max_size=5).map(
            lambda v: "\n".join(json.dumps(m, default=str) for m in v).encode()
        ),
        st.just(b'[{"role": "user", "content": "hi", "timestamp": ' + b"9" * 5001 + b"}]"),
        st.binary(max_size=300),
        wild.map(lambda v: json.dumps(v, default=str).encode()),
    )
    ingest_name = st.sampled_from(["chat.json", "chat.jsonl", "locomo.json", "noext"])
    yaml_doc = wild.map(lambda v: yaml.safe_dump(v).encode())
    imports = st.tuples(yaml_doc, yaml_doc, yaml_doc)
    return st.one_of(
        cmd(
            st.just(["record"]),
            st.one_of(opt("--session", session), opt("--task", arg)),
            st.just(["--format", "json"]),
        )
        .map(lambda a: (a, None))
        .flatmap(lambda t: stdin.map(lambda s: (t[0], s, None))),
        st.tuples(
            ingest_name,
            ingest_body,
            opt(
                "--source-format",
                st.sampled_from(["messages-json", "messages-jsonl", "locomo", "nope"]),
            ),
        ).map(lambda t: (["ingest", f"@FILE/{t[0]}", *t[2]], b"", ("file", t[0], t[1]))),
        imports.map(lambda t: (["import", "@DIR"], b"", ("dir", t))),
        cmd(
            st.just(["search"]),
            arg,
            opt("--since", arg),
            opt("--until", arg),
            opt("--limit", number),
            opt("--mode", st.sampled_from(["hybrid", "lexical", "vector", "x"])),
            opt("--speaker", arg),
            opt("--concept", arg),
            opt("--session", session),
        ).map(lambda a: (a, b"", None)),
        cmd(
            st.just(["slice"]),
            arg,
            opt("--budget", number),
            opt("--audience", arg),
            opt("--session", session),
        ).map(lambda a: (a, b"", None)),
        cmd(st.just(["show"]), session).map(lambda a: (a, b"", None)),
        cmd(st.just(["moments"]), session, opt("--offset", number), opt("--limit", number)).map(
            lambda a: (a, b"", None)
        ),
        cmd(st.just(["decide"]), session, arg, opt("--why", arg), opt("--who", arg)).map(
            lambda a: (a, b"", None)
        ),
        cmd(st.just(["add-pending"]), session, arg).map(lambda a: (a, b"", None)),
        cmd(
            st.just(["close-pending"]),
            session,
            st.one_of(st.just("p_1"), arg),
            opt("--resolution", arg),
        ).map(lambda a: (a, b"", None)),
        cmd(
            st.just(["edit-decision"]),
            session,
            st.one_of(st.just("d_1"), arg),
            opt("--what", arg),
            opt("--why", arg),
            opt("--who", arg),
        ).map(lambda a: (a, b"", None)),
        cmd(st.just(["about"]), arg, opt("--as-of", arg)).map(lambda a: (a, b"", None)),
        cmd(st.just(["notebook", "set"]), arg, st.one_of(st.just("Current State"), arg))
        .map(lambda a: (a, b"", None))
        .flatmap(lambda t: stdin.map(lambda s: (t[0], s, None))),
        cmd(
            st.just(["redact"]), st.one_of(st.just(seeded_moment), arg), st.just("--reason"), arg
        ).map(lambda a: (a, b"", None)),
        cmd(
            st.just(["forget"]),
            arg,
            st.just(["--dry-run"]),
            opt("--older-than", arg),
            opt("--keep-top", number),
        ).map(lambda a: (a, b"", None)),
    )


def cli_part(tree: Tree, tmp: Path, args: argparse.Namespace) -> list[Tally]:
    home = tmp / "cli-home"
    make_home(tree, home)
    first = tree.cli(
        "record",
        "--home",
        str(home),
        "--task",
        "Plan the Lyon trip",
        "--format",
        "json",
        stdin=json.dumps(
            [{"text": "Ana books the train", "speaker": "Ana"}, {"text": "Ben agrees"}]
        ).encode(),
    )
    moments = json.loads(first.stdout)
    sid, mid = moments[0]["session"], moments[0]["id"]
    tree.cli("decide", sid, "Take the train", "--home", str(home))
    tree.cli("add-pending", sid, "Book the hotel", "--home", str(home))
    files = tmp / "cli-files"
    cases = draw(cli_strategies(sid, mid, files), args.cli_runs, 6000)
    tally = Tally("CLI processes")
    by_command: dict[str, Tally] = {}
    deadline = time.monotonic() + args.cli_seconds
    for i, (argv, stdin, extra) in enumerate(cases):
        if time.monotonic() > deadline:
            break
        work = tmp / "cli-runs" / str(i)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        argv = list(argv)
        if extra and extra[0] == "file":
            path = work / extra[1]
            path.write_bytes(extra[2])
            argv = [str(path) if a.startswith("@FILE/") else a for a in argv]
        elif extra and extra[0] == "dir":
            src = work / "export"
            moment_dir = src / "sessions" / "s_2026-01-01_001" / "moments"
            moment_dir.mkdir(parents=True)
            (src / "index.yaml").write_bytes(extra[1][0])
            (src / "sessions" / "s_2026-01-01_001.yaml").write_bytes(extra[1][1])
            (moment_dir / "m_1.yaml").write_bytes(extra[1][2])
            argv = [str(src) if a == "@DIR" else a for a in argv]
        argv = [a.replace("\x00", "") for a in argv]
        full = [*argv, "--home", str(home)]
        done = run_child(tree, full, stdin or b"", args.timeout, work)
        kind, code = classify_cli(done)
        shown = " ".join(json.dumps(a)[:80] for a in argv)
        request = f"agent-notebook {shown} stdin={stdin[:120]!r}{'...' if stdin and len(stdin) > 120 else ''}"
        if extra and extra[0] == "file":
            request += f" file={extra[2][:160]!r}"
        if extra and extra[0] == "dir":
            request += f" index.yaml={extra[1][0][:80]!r} session={extra[1][1][:80]!r} m_1={extra[1][2][:80]!r}"
        answer = f"exit {code}: {last_line(done.stderr) or last_line(done.stdout)}"
        if os.environ.get("FUZZ_DEBUG"):
            log(f"{request[:150]} -> {answer[:200]}")
        name = argv[0] if argv[0] != "notebook" else "notebook set"
        sub = by_command.setdefault(name, Tally(f"  {name}"))
        full = {"argv": argv, "stdin": stdin or b"", "extra": extra, "stderr": done.stderr[-4000:]}
        for t in (tally, sub):
            t.add(kind, code, request, answer, full)
            t.seconds += done.seconds
        shutil.rmtree(work, ignore_errors=True)
    tally.note = (
        f"{tally.tried} of {len(cases)} generated runs in the budget; exit codes "
        + ", ".join(f"{k}: {v}" for k, v in sorted(tally.codes.items()))
    )
    return [tally, *sorted(by_command.values(), key=lambda t: t.name)]
