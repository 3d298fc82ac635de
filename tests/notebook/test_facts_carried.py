"""What the fact rules derive survives every backend, a reopen, a migration to PostgreSQL,
and the redaction or forgetting of the moment that superseded another (issue 30)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent_notebook import Notebook
from agent_notebook.config import CONFIG_FILE, FactSettings, NotebookConfig
from agent_notebook.storage import StorageBackend
from tests.support import pg
from tests.support.backends import make_backend

T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
FACTS_ON = NotebookConfig(facts=FactSettings(enabled=True))


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
