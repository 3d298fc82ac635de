"""Issue 41: compaction keeps what is current, decided and open; what was replaced fades to
one line. A family party planned over five days, compacted six months later on the command
line, on a SQLite home (facts on, then off), and a fact that changes after compaction."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent_notebook import Notebook
from agent_notebook.compaction import dropped_manifest
from agent_notebook.config import FactSettings, NotebookConfig
from agent_notebook.model import Moment
from agent_notebook.storage import MemoryBackend
from tests.support.clirun import cli, cli_process, data

T0 = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
#: (day, speaker, text): five days of planning a party.
PLAN = [
    (0, "Ana", "Let us plan Maya's birthday party for 28 November."),
    (0, "Tom", "The venue is Lakeside Pavilion, it fits 40 people."),
    (0, "Ana", "Should we invite Uncle Raj?"),
    (1, "Tom", "The budget is 600 EUR for food and drinks."),
    (1, "Ana", "I will order the cake from Dolce Bakery tomorrow."),
    (1, "Tom", "Sounds good, and the guest list has 32 names so far."),
    (2, "Tom", "Lakeside Pavilion cancelled on us. Change of plans: the venue is now Casa Lucia."),
    (2, "Ana", "We decided on a taco buffet instead of pizza."),
    (3, "Ana", "I ordered the cake from Dolce Bakery yesterday, chocolate with raspberries."),
    (3, "Tom", "Actually the budget is now 750 EUR, my parents chipped in."),
    (4, "Tom", "Remember Maya is allergic to peanuts, tell the caterer."),
    (4, "Ana", "Great, the invitations go out on Monday."),
]
SIX_MONTHS = T0 + timedelta(days=180)


def plan_party(home: Path, facts: bool) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(f"facts:\n  enabled: {'true' if facts else 'false'}\n")
    drafts = [
        {
            "text": text,
            "speaker": who,
            "timestamp": (T0 + timedelta(days=day, minutes=n)).isoformat(),
        }
        for n, (day, who, text) in enumerate(PLAN)
    ]
    data(
        cli(home, "record", "--task", "Maya's party", "--format", "json", stdin=json.dumps(drafts))
    )


def rollups_of(home: Path) -> list[Moment]:
    with Notebook.open(home) as nb:
        return [m for m in nb.backend.iter_moments() if m.rollup is not None]


def lines_of(rollups: list[Moment]) -> list[str]:
    return [line for r in rollups for line in r.content.text.splitlines()]


def test_a_five_day_plan_compacted_six_months_later_keeps_what_holds(tmp_path: Path) -> None:
    home = tmp_path / "home"
    plan_party(home, facts=True)
    report = data(cli(home, "compact", "--now", SIX_MONTHS.isoformat(), "--format", "json"))
    assert report["archived"] == len(PLAN)  # the originals are in the cold archive
    rollups = rollups_of(home)
    text = "\n".join(r.content.text for r in rollups)
    lines = lines_of(rollups)
    # the final decision, the open question and the current values, word for word
    for said in (
        "We decided on a taco buffet instead of pizza.",
        "Should we invite Uncle Raj?",
        "the venue is now Casa Lucia.",
        "the budget is now 750 EUR",
    ):
        assert said in text
    # each replaced value is one line, with what replaced it
    (venue,) = [x for x in lines if "Lakeside Pavilion →" in x]
    assert "Casa Lucia" in venue
    (budget,) = [x for x in lines if "600 EUR" in x]
    assert "→ 750 EUR" in budget
    (cake,) = [x for x in lines if x.startswith("closed: ")]  # a done task, one line
    assert "Dolce Bakery" in cake
    # nothing the facts layer holds as current is in a dropped manifest
    for rollup in rollups:
        assert rollup.rollup is not None
        kinds = {k.kind for k in rollup.rollup.kept}
        assert {"decision", "open", "fact"} <= kinds
        current = [k.text for k in rollup.rollup.kept]
        assert dropped_manifest(current, rollup.content.text)[0] == []
        assert not set(rollup.rollup.dropped) & {"Uncle Raj", "Casa Lucia", "750 EUR"}


def test_with_facts_off_the_rules_still_keep_decisions_and_open_items(tmp_path: Path) -> None:
    home = tmp_path / "home"
    plan_party(home, facts=False)
    data(cli(home, "compact", "--now", SIX_MONTHS.isoformat(), "--format", "json"))
    rollups = rollups_of(home)
    text = "\n".join(r.content.text for r in rollups)
    assert "decided: Ana: We decided on a taco buffet instead of pizza." in text
    assert "open: Ana: Should we invite Uncle Raj?" in text
    (cake,) = [x for x in lines_of(rollups) if x.startswith("closed: ")]
    assert "Dolce Bakery" in cake


def test_a_fact_updated_after_compaction_marks_the_kept_line_superseded(tmp_path: Path) -> None:
    home = tmp_path / "home"
    plan_party(home, facts=True)
    data(cli(home, "compact", "--now", SIX_MONTHS.isoformat(), "--format", "json"))
    (rollup,) = rollups_of(home)
    assert rollup.rollup is not None
    (venue,) = [k for k in rollup.rollup.kept if "Casa Lucia" in k.text]
    assert venue.superseded_by is None
    later = {
        "text": "The venue is now Villa Rosa, Casa Lucia closed for good.",
        "speaker": "Tom",
        "timestamp": (SIX_MONTHS + timedelta(days=1)).isoformat(),
    }
    # another process records it, as an agent on the command line would
    recorded = cli_process(
        home, "record", "--task", "Next party", "--format", "json", stdin=json.dumps(later).encode()
    )
    ((new_id, said),) = [(m["id"], m["content"]["text"]) for m in data(recorded)]
    assert said == later["text"]
    (rollup,) = rollups_of(home)
    assert rollup.rollup is not None
    (venue,) = [k for k in rollup.rollup.kept if k.source == venue.source]
    assert venue.superseded_by == new_id
    assert venue.valid_until == SIX_MONTHS + timedelta(days=1)
    marked = f"superseded by {new_id} on {venue.valid_until:%Y-%m-%d}: {venue.text}"
    assert marked in rollup.content.text.splitlines()
    others = [k for k in rollup.rollup.kept if k.source != venue.source]
    assert all(k.superseded_by is None for k in others)  # the rest still holds


def test_a_models_summary_that_drops_a_kept_item_is_not_used(tmp_path: Path) -> None:
    from langchain_core.language_models import FakeListChatModel

    config = NotebookConfig(facts=FactSettings(enabled=True))
    config = config.model_copy(
        update={"compaction": config.compaction.model_copy(update={"summarizer": "llm"})}
    )
    with Notebook(MemoryBackend(), home=tmp_path / "h", embedder=None, config=config) as nb:
        session = nb.start_session("party", started=T0)
        for n, (day, who, text) in enumerate(PLAN):
            nb.record(session.id, text, speaker=who, timestamp=T0 + timedelta(days=day, minutes=n))
        vague = "They planned a party and talked about food."
        nb.compact(now=SIX_MONTHS, model=FakeListChatModel(responses=[vague] * 3))
        (rollup,) = [m for m in nb.backend.iter_moments() if m.rollup is not None]
        assert rollup.rollup is not None
        assert rollup.rollup.summarizer.startswith("llm (fell back: its summary dropped")
        assert vague not in rollup.content.text
        assert "Should we invite Uncle Raj?" in rollup.content.text
