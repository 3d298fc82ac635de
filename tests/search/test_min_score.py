"""The relevance cut-off of search (issue 15): matches on nothing but stopwords or a weak
vector similarity are left out (``min_score``), and every front end says when nothing matches
well; and tables print data as it is (Rich markup is never read in it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_notebook import Notebook
from agent_notebook.cli import app
from agent_notebook.errors import InvalidInput
from agent_notebook.search.engine import content_words
from agent_notebook.storage import SqliteBackend
from tests.support.clirun import cli_process

FACTS = [
    "The door code is 4411, keep it private",
    "Booked the 09:04 TGV, seat 42.",
    "Book the train to Lyon for 7 June",
    "Pack the charger and the passport",
    "What should we eat tonight? Something vegetarian",
    "A lentil curry, then.",
]


@pytest.fixture
def nb(tmp_path: Path) -> Iterator[Notebook]:
    """The real offline embedder (skipped where it cannot run)."""
    notebook = Notebook(SqliteBackend(tmp_path / "notebook.db"), background_embedding=False)
    if notebook.semantic is None:
        pytest.skip("no embedder on this machine")
    session = notebook.start_session("Trip")
    for text in FACTS:
        notebook.record(session.id, text)
    notebook.reindex()
    yield notebook
    notebook.close()


def ids_of(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.moment.id for h in hits]


def test_after_a_redact_nothing_unrelated_comes_back(nb: Notebook) -> None:
    assert ids_of(nb.search("door code"))[0] == "m_1"
    nb.redact("m_1", "a secret")
    assert nb.search("door code") == []
    weak = nb.search("door code", min_score=0)  # every match, however weak
    assert weak and "m_1" not in ids_of(weak)


def test_every_hit_kept_is_relevant_and_says_how(nb: Notebook) -> None:
    hits = nb.search("train to Lyon")
    assert "m_3" in ids_of(hits)
    assert all(h.explain["relevance"] >= 0.3 for h in hits)
    assert len(hits) < len(FACTS)


def test_a_question_s_reply_is_as_relevant_as_the_question(nb: Notebook) -> None:
    # "A lentil curry, then." shares no word with the query: it is the reply to m_5.
    assert {"m_5", "m_6"} <= set(ids_of(nb.search("vegetarian dinner tonight")))


def test_min_score_must_be_between_0_and_1(nb: Notebook) -> None:
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(InvalidInput, match="min_score"):
            nb.search("train", min_score=bad)


def test_matches_on_stopwords_alone_are_left_out_without_an_embedder(tmp_path: Path) -> None:
    with Notebook(SqliteBackend(tmp_path / "lexical.db"), embedder=None) as nb:
        session = nb.start_session("Words")
        nb.record(session.id, "what is the weather in the mountains")
        nb.record(session.id, "the door code changed")
        assert ids_of(nb.search("what is the door code")) == ["m_2"]
        assert nb.search("what is it") == []
        assert ids_of(nb.search("what is it", min_score=0)) == ["m_1"]


def test_content_words_drop_stopwords_and_stray_letters() -> None:
    assert content_words("What's the door code of Ana's flat?") == ["door", "code", "ana", "flat"]
    assert content_words("what is it") == []
    assert content_words("7 June") == ["7", "june"]


# -- the command line ---------------------------------------------------------------------------


def run(home: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    env = {"AGENT_NOTEBOOK_EMBEDDER": "none", "COLUMNS": "200"}  # wide: no cell is folded
    result = CliRunner().invoke(app, [*args, "--home", str(home)], input=stdin, env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "nb"
    drafts = [
        {"text": "The password is [secret:password masked] for now"},
        {"text": "Use [bold]bold[/bold] and [link=x]links[/link] literally"},
    ]
    code, _, err = run(home, "record", "--task", "[red]Notes[/red]", stdin=json.dumps(drafts))
    assert code == 0, err
    return home


def test_the_cli_says_when_nothing_matches_well(home: Path) -> None:
    code, out, err = run(home, "search", "what is it", "--format", "json")
    assert code == 0, err
    assert json.loads(out) == []
    assert "nothing matches 'what is it' well" in err
    assert "--min-score 0 shows every match" in err  # names the option to change
    code, out, _ = run(home, "search", "what is it", "--min-score", "0", "--format", "json")
    assert [h["moment"]["id"] for h in json.loads(out)] == ["m_1"]  # by "is"


def shown(home: Path, *args: str) -> str:
    """What a real process prints on a 200-column terminal: each table cell whole (an
    in-process console may have been sized by an earlier test)."""
    done = cli_process(home, *args, env={"AGENT_NOTEBOOK_EMBEDDER": "none", "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def test_tables_show_data_as_it_is(home: Path) -> None:
    sessions = shown(home, "sessions")
    assert "[red]Notes[/red]" in sessions
    [session] = [w for w in sessions.split() if w.startswith("s_")]
    out = shown(home, "moments", session)
    assert "[secret:password masked]" in out
    assert "[bold]bold[/bold]" in out and "[link=x]links[/link]" in out
    assert "[secret:password masked]" in shown(home, "search", "password", "--explain")


def test_errors_show_data_as_it_is(home: Path) -> None:
    code, _, err = run(home, "show", "[bold]s_x[/bold]")
    assert code == 1
    assert "[bold]s_x[/bold]" in err
