"""What the fact rules derive survives every backend, a reopen, a migration to PostgreSQL,
and the redaction or forgetting of the moment that superseded another (issue 30); and issue
39's stories (a job changed in a later session, a party planned over five days, what is
known about someone, forget and redact) hold on every backend, after export and import, and
after ``agent-notebook migrate`` to PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.config import CONFIG_FILE, FactSettings, NotebookConfig
from agent_notebook.model import Moment
from agent_notebook.storage import StorageBackend
from tests.support import party, pg
from tests.support.backends import make_backend
from tests.support.clirun import cli
from tests.support.subjects import fill as fill_maya

T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
FACTS_ON = NotebookConfig(facts=FactSettings(enabled=True))
LATER = datetime(2026, 7, 1, 10, 0, tzinfo=UTC)  # after Maya's story (tests/support/subjects)


def _facts_of(nb: Notebook) -> dict[str, object]:
    """Everything the rules derived, keyed by the moments' text (ids differ across copies)."""
    text = {m.id: m.content.text for m in nb.moments()}
    return {
        "links": sorted(
            (text[m.id], link.split(":")[0], text[link.split(":")[1]])
            for m in nb.moments()
            for link in m.relations.links
        ),
        "valid_until": sorted(
            (m.content.text, m.valid_until) for m in nb.moments() if m.valid_until
        ),
        "expires": sorted((m.content.text, m.expires) for m in nb.moments() if m.expires),
        "fact_keys": sorted(
            (m.content.text, *m.metadata.fact_keys) for m in nb.moments() if m.metadata.fact_keys
        ),
        "decisions": sorted(
            (d.what, d.why, d.who, text[d.source])
            for s in nb.sessions()
            for d in s.decisions
            if d.source
        ),
        "pending": sorted(
            (p.what, text[p.source or ""], text.get(p.closed_by or ""))
            for s in nb.sessions()
            for p in s.pending
        ),
    }


def _a_project_chat(nb: Notebook) -> None:
    s = nb.start_session("launch", started=T0).id
    said = [
        ("Decision: we go with PostgreSQL because it has JSONB.", "ana"),
        ("The launch is on June 5.", "ana"),
        ("I'll send the report to Ana tomorrow.", "bo"),
        ("The launch moved to June 12.", "ana"),
        ("I have never used Docker.", "bo"),
        ("I used Docker to deploy the blog last week.", "bo"),
        ("Sent the report to Ana this morning.", "bo"),
        ("I'm working from the Berlin office until Friday.", "ana"),
        ("The staging server runs on port 8080.", "bo"),
        ("the staging server runs on port 8080!", "bo"),
    ]
    for hours, (text, who) in enumerate(said):
        nb.record(s, text, speaker=who, timestamp=T0 + timedelta(hours=hours))


def test_every_backend_keeps_links_validity_expiry_and_decisions_across_a_reopen(
    backend: StorageBackend, reopen: Callable[[], StorageBackend], backend_kind: str
) -> None:
    nb = Notebook(backend, embedder=None, config=FACTS_ON)
    _a_project_chat(nb)
    derived = _facts_of(nb)
    links = derived["links"]
    assert isinstance(links, list)
    assert ("The launch is on June 5.", "superseded_by", "The launch moved to June 12.") in links
    assert len(derived["decisions"]) == 1 and len(derived["pending"]) == 1  # type: ignore[arg-type]
    assert derived["expires"] and derived["valid_until"]
    keys = {text: rest for text, *rest in derived["fact_keys"]}  # type: ignore[attr-defined]
    assert "value/launch" in keys["The launch is on June 5."]
    if backend_kind in {"memory", "sqlite-memory"}:
        return  # nothing to reopen: the data lives in this process only
    backend.close()
    with Notebook(reopen(), embedder=None, config=FACTS_ON) as again:
        assert _facts_of(again) == derived


def test_migrating_to_postgres_carries_every_link_validity_expiry_and_decision(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / CONFIG_FILE).write_text("facts:\n  enabled: true\n")
    (tmp_path / "pg-home").mkdir()
    (tmp_path / "pg-home" / CONFIG_FILE).write_text("facts:\n  enabled: true\n")
    target_url = pg.url_with_schema(tmp_path)
    with (
        Notebook.open(home, background_embedding=False) as source,
        Notebook.open(
            tmp_path / "pg-home", backend=target_url, background_embedding=False
        ) as target,
    ):
        _a_project_chat(source)
        assert source.migrate_to(target).ok
        assert _facts_of(target) == _facts_of(source)
        # the current view reads the same on the copy
        launch = [
            h.moment.content.text for h in target.search("launch", mode="lexical", current=True)
        ]
        assert launch == ["The launch moved to June 12."]
        # the copy's index is built: a statement meets the launch beyond the engine's reach
        target.facts.keeper.window = 1
        target.facts.keeper.forget()
        s = target.start_session("later").id
        for n in range(3):
            target.record(s, f"Small talk, part {'abc'[n]}.", timestamp=T0 + timedelta(days=2))
        later = target.record(s, "The launch moved to June 19.", timestamp=T0 + timedelta(days=3))
        june_12 = next(m for m in target.moments() if m.content.text.endswith("June 12."))
        assert f"superseded_by:{later.id}" in june_12.relations.links


def test_redacting_or_forgetting_the_superseding_moment_brings_back_nothing() -> None:
    """The later value's text goes; the earlier value stays superseded (it was stale then and
    is now), and no text of the redacted moment comes back through a link or a decision."""
    with Notebook(make_backend("memory", Path()), embedder=None, config=FACTS_ON) as nb:
        s = nb.start_session("launch").id
        first = nb.record(s, "The launch is on June 5.", timestamp=T0)
        second = nb.record(s, "The launch moved to June 12.", timestamp=T0 + timedelta(days=1))
        decided = nb.record(
            s,
            "Decision: we ship on June 12 because QA needs a week.",
            timestamp=T0 + timedelta(days=1),
        )
        nb.redact(second.id, "private")
        old = nb.get_moment(first.id)
        assert old.relations.links == [f"superseded_by:{second.id}"]
        assert old.valid_until == T0 + timedelta(days=1)
        assert [h.moment.id for h in nb.search("launch", mode="lexical", current=True)] == []
        assert "June 12" not in nb.get_moment(second.id).model_dump_json()

        report = nb.forget("QA", "no longer relevant")
        assert decided.id in report.moments
        session_text = nb.get_session(s).model_dump_json()
        assert "QA needs a week" not in session_text
        assert "June 12" not in session_text
        # a later repeat of a redacted value is new, not a repeat of the tombstone
        again = nb.record(s, "The launch moved to June 12.", timestamp=T0 + timedelta(days=2))
        assert not any(
            link.startswith("duplicate_of") for link in nb.get_moment(again.id).relations.links
        )
        assert nb.get_moment(first.id).valid_until == T0 + timedelta(days=1)


# -- issue 39's stories, on every backend and through every copy ------------------------------
#
# Each story is built on a backend, then read there, on a fresh notebook it was exported to
# (YAML) and imported into, on a notebook that held moments already (ids renumbered), and on
# PostgreSQL after ``agent-notebook migrate`` from SQLite: the same checks each time, by the
# moments' texts (a copy may renumber them). A copy goes on: a later job change said in it
# still meets the one said before the copy.


def _by_text(nb: Notebook) -> dict[str, Moment]:
    return {m.content.text: m for m in nb.moments()}


def _links(m: Moment, relation: str) -> list[str]:
    return [
        target for r, target in (link.split(":") for link in m.relations.links) if r == relation
    ]


def _maya_holds(nb: Notebook) -> None:
    """A job changed in a later session ends the one said before; a story about the old job
    in a later session ends nothing; the current view shows the current job; ``about``
    shows it with its history (the old job replaced by it, the story as a story)."""
    said = _by_text(nb)
    old, new = said["I work at Tesco as a cashier."], said["Big news: I've started at Monzo."]
    story = said["Back in 2019 I worked at Tesco."]
    assert _links(old, "superseded_by") == [new.id]
    assert old.valid_until == new.timestamp
    assert _links(new, "superseded_by") == _links(story, "superseded_by") == []
    assert not any(story.id in _links(m, "superseded_by") for m in said.values())  # ends nothing
    current = {h.moment.id for h in nb.search("Tesco Monzo", mode="lexical", current=True)}
    assert current == {new.id, story.id}

    view = nb.facts.about("maya")
    employer = next(f for f in view.facts if f.key == "employer")
    assert [(v.value, v.moment, v.sentence) for v in employer.current] == [
        ("Monzo", new.id, new.content.text)
    ]
    assert [
        (v.value, v.moment, v.ended, v.replaced_by, v.replaced_with) for v in employer.history
    ] == [
        ("Tesco", story.id, "story", None, None),
        ("Tesco", old.id, "superseded", new.id, "Monzo"),
    ]
    budget = next(f for f in view.facts if f.key == "value:budget")
    assert [v.value for v in budget.current] == ["$2,000"]
    [pair] = view.conflicts
    assert (pair.a.text, pair.b.text) == ("My budget is $2,000.", "The budget is $3,000.")


def _maya_goes_on(nb: Notebook) -> list[str]:
    """A copy goes on linking: a later job, said after the copy, ends the one said in it;
    returns Maya's current employers."""
    s = nb.start_session("July", started=LATER).id
    newest = nb.record(s, "I've started at Revolut.", speaker="Maya", timestamp=LATER)
    monzo = _by_text(nb)["Big news: I've started at Monzo."]
    assert _links(monzo, "superseded_by") == [newest.id]
    return ["Revolut"]


def _maya_forgotten(nb: Notebook, employers: list[str]) -> None:
    """Forget and redact remove a fact from ``about`` (``employers``: the current ones
    that are left)."""
    nb.forget("Monzo", "no longer relevant")
    nb.redact(_by_text(nb)["My budget is $2,000."].id, "private")
    _maya_without_monzo_and_budget(nb, employers)


def _maya_without_monzo_and_budget(nb: Notebook, employers: list[str]) -> None:
    view = nb.facts.about("Maya")
    employer = next(f for f in view.facts if f.key == "employer")
    # with Monzo gone, the old job stays superseded, as it was then
    assert [v.value for v in employer.current] == employers
    assert "monzo" not in view.model_dump_json().casefold()
    assert "2,000" not in view.model_dump_json()
    assert "value:budget" not in {f.key for f in view.facts} and view.conflicts == []


def _party_holds(nb: Notebook) -> None:
    """The audit log ends with the final decisions; those a later one replaced are marked
    ``replaced_by`` the moment that did; the question asked twice is one item, closed by
    the decision that settled it."""
    said = {m.id: m.content.text for m in nb.moments()}
    log = [d for d in nb.facts.decision_log() if d.source is not None]
    assert sorted(d.what for d in log if d.replaced_by is None) == party.FINAL
    assert {d.what: said[d.replaced_by] for d in log if d.replaced_by} == party.REPLACED
    assert [d.what for d in sorted(log, key=lambda d: d.when)][-2:] == [
        "invite Uncle Raj, he would be hurt otherwise",
        "order the lemon cake from Dolce instead",
    ]
    assert all(said[d.source or ""].endswith(d.what + ".") for d in log)
    question, settled_by = party.QUESTION
    [item] = [p for _, p in nb.facts.pending_items() if p.what == question]
    assert item.closed is not None and said[item.closed_by or ""] == settled_by
    assert [p for _, p in nb.facts.pending_items(open_only=True)] == []


STORIES: dict[str, tuple[Callable[[Notebook], object], Callable[[Notebook], None]]] = {
    "maya": (fill_maya, _maya_holds),
    "party": (party.plan_party, _party_holds),
}


def _facts_notebook(backend: StorageBackend, home: Path) -> Notebook:
    """A notebook on ``backend`` with the fact rules on, and a home (for its media files,
    which export and import carry)."""
    return Notebook(backend, home=home, embedder=None, config=FACTS_ON)


@pytest.mark.parametrize("story", list(STORIES))
def test_issue_39_stories_hold_on_every_backend_and_after_export_and_import(
    story: str, backend: StorageBackend, backend_kind: str, tmp_path: Path
) -> None:
    build, holds = STORIES[story]
    nb = _facts_notebook(backend, tmp_path / "home")
    build(nb)
    nb.transfer.export_file(tmp_path / "exported", "yaml")
    holds(nb)
    # into a fresh notebook on the same kind of backend
    with _facts_notebook(
        make_backend(backend_kind, tmp_path / "fresh"), tmp_path / "fresh"
    ) as fresh:
        fresh.transfer.import_file(tmp_path / "exported")
        holds(fresh)
        if story == "maya":
            _maya_forgotten(fresh, _maya_goes_on(fresh))
            # what forget and redact removed stays removed in a copy
            fresh.transfer.export_file(tmp_path / "forgotten", "yaml")
            with _facts_notebook(make_backend("memory", tmp_path), tmp_path / "again") as again:
                again.transfer.import_file(tmp_path / "forgotten")
                _maya_without_monzo_and_budget(again, ["Revolut"])
    if story == "maya":
        _maya_forgotten(nb, [])


@pytest.mark.parametrize("story", ["maya", "party"])
def test_issue_39_stories_hold_after_an_import_into_a_notebook_with_moments(
    story: str, tmp_path: Path
) -> None:
    build, holds = STORIES[story]
    with (
        _facts_notebook(make_backend("memory", tmp_path), tmp_path / "source") as source,
        _facts_notebook(make_backend("sqlite-file", tmp_path), tmp_path / "target") as target,
    ):
        build(source)
        mine = target.start_session("Earlier", started=party.T0).id
        for n in range(3):  # the target's own moments take the low ids
            target.record(mine, f"An earlier note, number {n}.", timestamp=party.T0)
        report = target.transfer.import_from(source.backend)
        assert report.renumbered  # the copy was given other ids
        holds(target)


@pytest.mark.parametrize("story", list(STORIES))
def test_issue_39_stories_hold_after_migrate_from_sqlite_to_postgres(
    story: str, tmp_path: Path
) -> None:
    build, holds = STORIES[story]
    home = tmp_path / "home"
    home.mkdir()
    (home / CONFIG_FILE).write_text("facts:\n  enabled: true\n")
    with Notebook.open(home, background_embedding=False) as source:
        build(source)
    url = pg.url_with_schema(tmp_path)
    done = cli(home, "migrate", "--to", url, "--to-home", str(tmp_path / "pg"), "-f", "json")
    assert done.returncode == 0, done.stderr.decode()
    with Notebook.open(tmp_path / "pg", backend=url, background_embedding=False) as target:
        # --to-home is a new home: its config.yaml has the defaults (facts off), and the
        # view of a subject reads the links as stored only with the rules on
        target.config = FACTS_ON
        holds(target)
        if story == "maya":
            _maya_forgotten(target, _maya_goes_on(target))
