"""What the notebook knows about someone (issue 39, item 6), on a real SQLite notebook:
the current value of each fact with the moment it came from, its history, a story about an
old job that ends nothing, the open conflicts, ``as_of``, forget and redact, facts off."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook import config as cfg
from agent_notebook.errors import InvalidInput
from agent_notebook.notebook.subjects import SubjectFact, SubjectView
from tests.support.subjects import fill


def open_home(home: Path, *, facts: bool = True, backend: str = "sqlite") -> Notebook:
    home.mkdir()
    cfg.write_config(
        home, cfg.NotebookConfig(backend=backend, facts=cfg.FactSettings(enabled=facts))
    )
    return Notebook.open(home, background_embedding=False)


@pytest.fixture(params=["sqlite", "yaml"])
def nb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Notebook]:
    with open_home(tmp_path / "nb", backend=request.param) as nb:
        fill(nb)
        yield nb


def fact(view: SubjectView, key: str) -> SubjectFact:
    return next(f for f in view.facts if f.key == key)


def test_a_new_job_in_a_later_session_is_current_and_the_old_one_is_its_history(
    nb: Notebook,
) -> None:
    view = nb.facts.about("maya")  # the speaker's name, case aside, across sessions
    assert (view.said, view.named, view.facts_enabled, view.note) == (4, 1, True, None)
    employer = fact(view, "employer")
    [now] = employer.current
    assert (now.value, now.moment, now.session) == ("Monzo", "m_5", nb.get_moment("m_5").session)
    assert now.sentence == "Big news: I've started at Monzo."
    # the story about the old job is history of its own: it replaced nothing
    story, old = employer.history
    assert (story.value, story.moment, story.ended, story.replaced_by) == (
        "Tesco",
        "m_6",
        "story",
        None,
    )
    assert (old.value, old.moment, old.ended) == ("Tesco", "m_1", "superseded")
    assert (old.replaced_by, old.replaced_with) == ("m_5", "Monzo")
    assert old.until == datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
    # what Bo said of her, and the budget they disagree on
    assert [v.value for v in fact(view, "value:maya").current] == ["Leeds"]
    assert [v.value for v in fact(view, "value:budget").current] == ["$2,000"]
    [pair] = view.conflicts
    assert (pair.a.id, pair.b.id) == ("m_2", "m_3")


def test_as_of_shows_what_held_then(nb: Notebook) -> None:
    view = nb.facts.about("Maya", as_of=datetime(2026, 5, 15, tzinfo=UTC))
    employer = fact(view, "employer")
    assert [(v.value, v.moment) for v in employer.current] == [("Tesco", "m_1")]
    assert employer.history == []
    assert view.said == 2 and view.named == 0
    assert "value:maya" not in {f.key for f in view.facts}


def test_forget_and_redact_remove_a_fact_from_the_view(nb: Notebook) -> None:
    nb.forget("Monzo", "no longer relevant")
    view = nb.facts.about("Maya")
    employer = fact(view, "employer")
    assert employer.current == []  # the old job stays superseded, as it was then
    assert "monzo" not in view.model_dump_json().casefold()
    assert [(v.moment, v.replaced_by, v.replaced_with) for v in employer.history] == [
        ("m_6", None, None),
        ("m_1", "m_5", None),
    ]
    nb.redact("m_2", "private")
    view = nb.facts.about("Maya")
    assert "value:budget" not in {f.key for f in view.facts}
    assert view.conflicts == []
    assert "2,000" not in view.model_dump_json()


def test_with_facts_off_claims_are_read_and_the_view_says_nothing_is_linked(
    tmp_path: Path,
) -> None:
    with open_home(tmp_path / "off", facts=False) as nb:
        fill(nb)
        view = nb.facts.about("Maya")
    assert view.facts_enabled is False and view.note and "facts are off" in view.note
    employer = fact(view, "employer")
    assert [v.value for v in employer.current] == ["Monzo", "Tesco"]
    assert [v.ended for v in employer.history] == ["story"]
    assert view.conflicts == []


def test_me_is_the_owner_and_a_name_no_one_has_knows_nothing(nb: Notebook) -> None:
    me = nb.facts.about("me")
    assert [(f.key, [v.value for v in f.current]) for f in me.facts] == [("home", ["York"])]
    nobody = nb.facts.about("Zed")
    assert (nobody.said, nobody.named, nobody.facts, nobody.conflicts) == (0, 0, [], [])


@pytest.mark.parametrize("name", ["", "   ", "x" * 201, "Ma\x00ya"])
def test_a_name_that_is_no_name_is_refused(nb: Notebook, name: str) -> None:
    with pytest.raises(InvalidInput, match="about"):
        nb.facts.about(name)
