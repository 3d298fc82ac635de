"""The owner's hand on the facts (issue 30): decisions edited with their history kept,
pending items edited and closed, conflicts listed and resolved with an audit entry, and the
forgetting policy (``older_than``, ``inactive_for``, ``keep_top``) with a dry run, on real
SQLite notebooks and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook import config as cfg
from agent_notebook.errors import Conflict, InvalidInput, NotFound
from agent_notebook.storage import YamlDirBackend
from tests.support import pg
from tests.support.snapshots import snapshot

T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
NOW = T0 + timedelta(days=100)
HALF = {"importance": 0.5}


def open_home(home: Path, backend: str = "sqlite") -> Notebook:
    home.mkdir(parents=True, exist_ok=True)
    url = pg.url_with_schema(home.parent) if backend == "postgresql" else backend
    cfg.write_config(home, cfg.NotebookConfig(backend=url, facts=cfg.FactSettings(enabled=True)))
    return Notebook.open(home, background_embedding=False)


@pytest.fixture(params=["sqlite", "yaml", "postgresql"])
def nb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Notebook]:
    with open_home(tmp_path / "home", request.param) as opened:
        yield opened


def conflicting(nb: Notebook) -> tuple[str, str, str]:
    s = nb.start_session("tools").id
    never = nb.record(s, "I have never used Docker.", timestamp=T0)
    did = nb.record(s, "I used Docker to deploy the blog last week.", timestamp=T0 + timedelta(1))
    return s, never.id, did.id


def test_an_edit_appends_a_correction_and_the_log_keeps_both(nb: Notebook) -> None:
    s = nb.start_session("db").id
    nb.decide(s, "Use PostgreSQL 15", "JSONB")
    edited = nb.edit_decision(s, "d_1", what="Use PostgreSQL 16")
    assert (edited.id, edited.edits, edited.what, edited.why) == (
        "d_2",
        "d_1",
        "Use PostgreSQL 16",
        "JSONB",
    )
    log = nb.decision_log(s)
    assert [(d.id, d.what, d.edited_by) for d in log] == [
        ("d_1", "Use PostgreSQL 15", "d_2"),
        ("d_2", "Use PostgreSQL 16", None),
    ]
    before = snapshot(nb.backend)
    for bad, error, words in (
        ({"decision_id": "d_9", "what": "x"}, NotFound, "no decision d_9"),
        ({"decision_id": "1", "what": "x"}, InvalidInput, "d_N"),
        ({"decision_id": "d_1"}, InvalidInput, "what"),
        ({"decision_id": "d_1", "what": "  "}, InvalidInput, "empty"),
        ({"decision_id": "d_2", "what": "Use PostgreSQL 16"}, InvalidInput, "a change"),
    ):
        with pytest.raises(error, match=words):
            nb.edit_decision(s, **bad)  # type: ignore[arg-type]
    assert snapshot(nb.backend) == before


def test_pending_items_are_edited_with_an_audit_note_and_closed_once(nb: Notebook) -> None:
    s = nb.start_session("trip").id
    item = nb.open_pending(s, "Book a hotel")
    assert nb.edit_pending(s, item.id, "Book a hotel in Lyon").what == "Book a hotel in Lyon"
    note = nb.get_session(s).decisions[-1]
    assert (note.what, note.why) == ("edited pending p_1", "was: Book a hotel")
    nb.close_pending(s, item.id, "booked")
    with pytest.raises(Conflict, match="closed already"):
        nb.close_pending(s, item.id, "again")
    with pytest.raises(Conflict, match="not edited"):
        nb.edit_pending(s, item.id, "Book two hotels")
    with pytest.raises(NotFound, match="no pending item p_7"):
        nb.edit_pending(s, "p_7", "x")
    assert [(sid, p.id) for sid, p in nb.pending_items()] == [(s, "p_1")]
    assert nb.pending_items(s, open_only=True) == []


def test_a_conflict_is_listed_and_keeping_one_side_supersedes_the_other(nb: Notebook) -> None:
    s, never, did = conflicting(nb)
    (pair,) = nb.conflicts()
    assert (pair.a.id, pair.b.id) == (never, did)
    assert pair.a.text == "I have never used Docker." and pair.a.session == s
    assert nb.conflicts(s) == [pair]

    done = nb.resolve_conflict(did, never, keep=did, reason="the blog runs on Docker")
    assert (done.kept, done.superseded, done.dismissed) == (did, never, False)
    old = nb.get_moment(never)
    assert old.relations.links == [f"superseded_by:{did}"]
    assert old.valid_until == nb.get_moment(did).timestamp
    assert nb.get_moment(did).relations.links == []
    assert nb.conflicts() == []
    entry = nb.get_session(s).decisions[-1]
    assert entry.what == f"conflict {did} vs {never} resolved: kept {did}, {never} superseded"
    assert (entry.source, entry.why, entry.who) == (None, "the blog runs on Docker", "owner")
    assert [h.moment.id for h in nb.search("Docker", mode="lexical", current=True)] == [did]
    with pytest.raises(NotFound, match="not flagged as conflicting"):
        nb.resolve_conflict(never, did, dismiss=True)


def test_a_dismissed_conflict_leaves_both_standing(nb: Notebook) -> None:
    s, never, did = conflicting(nb)
    with pytest.raises(InvalidInput, match="neither side"):
        nb.resolve_conflict(never, did, keep="m_99")
    with pytest.raises(InvalidInput, match="one of them"):
        nb.resolve_conflict(never, did)
    done = nb.resolve_conflict(never, did, dismiss=True)
    assert done.dismissed and done.kept is None
    assert nb.get_moment(never).valid_until is None and nb.get_moment(did).valid_until is None
    assert (
        nb.get_session(s).decisions[-1].what == f"conflict {never} vs {did} dismissed: both stand"
    )


def policy_notebook(nb: Notebook) -> dict[str, str]:
    s = nb.start_session("years").id
    ids = {
        "old": nb.record(s, "The old wiki lived on a Raspberry Pi.", timestamp=T0, **HALF).id,
        "old_pinned": nb.record(s, "The root key sits in the safe.", timestamp=T0, pinned=True).id,
        "old_decided": nb.record(s, "Decision: we go with Caddy for TLS.", timestamp=T0).id,
        "old_recurring": nb.record(
            s, "The staging server runs on port 8080.", timestamp=T0, **HALF
        ).id,
        "old_important": nb.record(
            s, "Ana's birthday is on 3 March.", timestamp=T0, importance=0.95
        ).id,
        "new": nb.record(
            s, "The new wiki is on the NAS.", timestamp=NOW - timedelta(days=2), **HALF
        ).id,
    }
    nb.record(s, "the staging server runs on port 8080!", timestamp=NOW - timedelta(1), **HALF)
    return ids


def test_a_dry_run_lists_what_the_policy_would_forget_and_changes_nothing(
    nb: Notebook,
) -> None:
    ids = policy_notebook(nb)
    before = snapshot(nb.backend)
    older = nb.forget_by_policy(older_than="30d", dry_run=True, now=NOW)
    assert older.dry_run and older.policy == "forgetting policy: older than 30d"
    assert {c.id for c in older.moments} == {
        ids["old"],
        ids["old_recurring"],
        ids["old_important"],
    }
    assert set(older.protected) == {ids["old_pinned"], ids["old_decided"]}
    listed = {c.id: c for c in older.moments}[ids["old"]]
    assert listed.excerpt == "The old wiki lived on a Raspberry Pi." and listed.timestamp == T0
    inactive = nb.forget_by_policy(inactive_for="4w", dry_run=True, now=NOW)
    assert {c.id for c in inactive.moments} == {ids["old"], ids["old_important"]}
    # standing: the repeat and the moment it repeats (seen yesterday), the new one, then the
    # important old one above the plain old one; the pinned and decided ones are not counted
    top = nb.forget_by_policy(older_than="30d", keep_top=4, dry_run=True, now=NOW)
    assert [c.id for c in top.moments] == [ids["old"]]
    three = nb.forget_by_policy(older_than="30d", keep_top=3, dry_run=True, now=NOW)
    assert {c.id for c in three.moments} == {ids["old"], ids["old_important"]}
    assert snapshot(nb.backend) == before
    for bad, words in (
        ({"older_than": "3 months"}, "forget --older-than: '3 months' is not a duration"),
        ({"inactive_for": "0d"}, "--inactive-for"),
        ({"keep_top": -1}, "negative"),
        ({"older_than": "9" * 19 + "h"}, "over 200 years"),
        ({}, "give --older-than"),
    ):
        with pytest.raises(InvalidInput, match=words):
            nb.forget_by_policy(**bad)  # type: ignore[arg-type]
    assert snapshot(nb.backend) == before


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_policy_redacts_what_it_picks_and_audits_each(tmp_path: Path, backend: str) -> None:
    with open_home(tmp_path / "home", backend) as nb:
        ids = policy_notebook(nb)
        done = nb.forget_by_policy(older_than="30d", keep_top=3, now=NOW)
        gone = {c.id for c in done.moments}
        assert gone == {ids["old"], ids["old_important"]} and not done.dry_run
        for moment_id in gone:
            moment = nb.get_moment(moment_id)
            assert moment.redacted is not None and moment.content.text == ""
            assert moment.redacted.why == "forgetting policy: older than 30d, keep the top 3"
        kept = nb.get_moment(ids["old_recurring"])
        assert kept.redacted is None
        audit = [d.what for d in nb.get_session(kept.session).decisions]
        for moment_id in sorted(gone, key=lambda i: int(i[2:])):
            assert f"redacted {moment_id} (forgetting policy: older than 30d, keep the top 3)" in (
                audit
            )
        assert nb.search("Raspberry", mode="lexical", min_score=0) == []


def test_edits_and_resolutions_survive_an_export_to_yaml_and_an_import(tmp_path: Path) -> None:
    with open_home(tmp_path / "home") as nb:
        s, never, did = conflicting(nb)
        nb.decide(s, "Use PostgreSQL 15")
        nb.edit_decision(s, "d_1", why="JSONB")
        nb.resolve_conflict(never, did, keep=did)
        nb.export_file(tmp_path / "out", "yaml")
    with open_home(tmp_path / "copy") as copy:
        exported = YamlDirBackend(tmp_path / "out")
        try:
            copy.import_from(exported)
        finally:
            exported.close()
        log = copy.decision_log(s)
        assert [(d.id, d.edits, d.edited_by, d.why) for d in log[:2]] == [
            ("d_1", None, "d_2", ""),
            ("d_2", "d_1", None, "JSONB"),
        ]
        assert log[-1].what.startswith(f"conflict {never} vs {did} resolved")
        assert copy.get_moment(never).relations.links == [f"superseded_by:{did}"]
        assert copy.conflicts() == []


def test_marking_a_moment_changes_its_importance_and_pin_only(nb: Notebook) -> None:
    s = nb.start_session("marks").id
    said = nb.record(s, "Book the train to Lyon", timestamp=T0)
    marked = nb.mark_moment(said.id, importance=0.9, pinned=True)
    again = nb.get_moment(said.id)
    assert again == marked and again.metadata.importance == 0.9 and again.metadata.pinned
    assert again.content.text == "Book the train to Lyon" and again.pinned
    with pytest.raises(InvalidInput, match=r"outside 0 to 1.*nothing changed"):
        nb.mark_moment(said.id, importance=1.5)
    with pytest.raises(NotFound, match="no moment m_99"):
        nb.mark_moment("m_99", pinned=False)
    assert nb.get_moment(said.id) == again


def test_sessions_and_concepts_are_found_filtered_and_sorted(nb: Notebook) -> None:
    for day, task in enumerate(["Lyon trip", "Tax forms", "Lyon, again"]):
        made = nb.start_session(task, started=T0 + timedelta(days=day))
        nb.record(made.id, f"{task}: notes", timestamp=T0 + timedelta(days=day), concepts=[task])
    assert [s.task for s in nb.sessions(text="lyon")] == ["Lyon trip", "Lyon, again"]
    assert [s.task for s in nb.sessions(order="-started", limit=2)] == ["Lyon, again", "Tax forms"]
    assert nb.sessions(text="lyon", status="done") == []
    with pytest.raises(InvalidInput, match="status 'finished' is not one of"):
        nb.sessions(status="finished")
    assert {c.concept for c in nb.concepts(text="LYON")} == {"lyon trip", "lyon, again"}
