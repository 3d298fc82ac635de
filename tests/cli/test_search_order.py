"""Search results in score order when the fact rules move a hit (issue 43, item 6), and
``--explain`` says why a hit has no relevance."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.clirun import cli, cli_process, data

LAUNCH = [
    "The launch is on June 5. The launch party follows the launch.",  # the best match
    "The launch moved to June 12.",  # ends the first
    "The launch budget is 3000 euros for the whole event.",
]


def _notebook(tmp_path: Path) -> Path:
    home = tmp_path / "nb"
    assert cli(home, "init").returncode == 0
    with (home / "config.yaml").open("a", encoding="utf-8") as config:
        config.write("\nfacts:\n  enabled: true\n")
    chat = [
        {"role": "user", "content": text, "id": f"u{n}", "timestamp": f"2026-05-2{n}T09:00:00Z"}
        for n, text in enumerate(LAUNCH)
    ]
    (tmp_path / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    assert cli(home, "ingest", str(tmp_path / "chat.json")).returncode == 0
    return home


def test_a_superseded_hit_placed_below_its_successor_scores_just_below_it(
    tmp_path: Path,
) -> None:
    home = _notebook(tmp_path)
    hits = data(cli(home, "search", "launch", "--mode", "lexical", "--explain", "-f", "json"))
    assert [(h["moment"]["id"], h["superseded_by"]) for h in hits] == [
        ("m_2", None),
        ("m_1", "m_2"),
        ("m_3", None),
    ]
    scores = [h["score"] for h in hits]
    assert scores[0] > scores[1] >= scores[2], scores  # in score order, the ended one under
    own = hits[1]["explain"]["own_score"]  # what it scored itself: the best match
    assert own >= scores[0] > scores[1]
    explained = cli_process(
        home, "search", "launch", "--mode", "lexical", "--explain", env={"COLUMNS": "200"}
    )
    assert explained.returncode == 0, explained.stderr.decode()
    out = explained.stdout.decode()
    assert f"placed just below m_2 that ended it (its own score {own:.3g})" in out, out


def test_explain_says_why_a_hit_has_no_relevance(tmp_path: Path) -> None:
    home = _notebook(tmp_path)
    explained = cli_process(
        home,
        "search",
        "launch",
        "--mode",
        "lexical",
        "--explain",
        "--min-score",
        "0",
        env={"COLUMNS": "200"},
    )
    assert explained.returncode == 0, explained.stderr.decode()
    out = explained.stdout.decode()
    assert out.count("relevance - (not judged: --min-score 0 keeps every match)") == 3, out
    judged = cli_process(
        home, "search", "launch", "--mode", "lexical", "--explain", env={"COLUMNS": "200"}
    ).stdout.decode()
    assert "relevance 1.00" in judged and "relevance -" not in judged
