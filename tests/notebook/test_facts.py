"""The fact rules applied by a notebook on record (issue 30): decisions and pending items in
the session, links and validity on the moments, the current view of search, and the links
carried by export and import."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent_notebook import Notebook
from agent_notebook.config import FactSettings, NotebookConfig
from agent_notebook.embed import LangChainEmbedder
from agent_notebook.storage import MemoryBackend
from tests.support.embedders import WORDS, BagOfWords
from tests.support.party import plan_party

T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def _notebook(enabled: bool = True) -> Notebook:
    config = NotebookConfig(facts=FactSettings(enabled=enabled))
    return Notebook(MemoryBackend(), embedder=None, config=config)


def test_a_moving_launch_date_is_superseded_twice_and_read_as_of_a_past_day() -> None:
    with _notebook() as nb:
        s = nb.start_session("launch").id
        first = nb.record(s, "The launch is on June 5.", timestamp=T0)
        second = nb.record(s, "The launch moved to June 12.", timestamp=T0 + timedelta(days=2))
        third = nb.record(
            s, "Update: the launch date is now June 19.", timestamp=T0 + timedelta(days=4)
        )
        old, mid = nb.get_moment(first.id), nb.get_moment(second.id)
        assert old.relations.links == [f"superseded_by:{second.id}"]
        assert old.valid_until == second.timestamp
        assert mid.relations.links == [f"superseded_by:{third.id}"]
        assert mid.valid_until == third.timestamp
        assert nb.get_moment(third.id).valid_until is None

        every = nb.search("launch", mode="lexical")
        assert [h.moment.id for h in every] == [third.id, second.id, first.id]
        assert [h.superseded_by for h in every] == [None, third.id, second.id]
        assert every[1].fact_note() == f"superseded by {third.id}"
        assert [h.moment.id for h in nb.search("launch", mode="lexical", current=True)] == [
            third.id
        ]
        before_second = T0 + timedelta(days=1)
        (then,) = nb.search("launch", mode="lexical", as_of=before_second)
        assert (then.moment.id, then.superseded_by) == (first.id, None)
        between = T0 + timedelta(days=3)
        assert [h.moment.id for h in nb.search("launch", mode="lexical", as_of=between)] == [
            second.id
        ]


def test_decisions_and_pending_items_go_into_the_session_with_their_source() -> None:
    with _notebook() as nb:
        s = nb.start_session("project").id
        decided = nb.record(
            s, "Decision: we go with PostgreSQL because it has JSONB.", speaker="ana"
        )
        promised = nb.record(s, "I'll send the report to Ana tomorrow.", timestamp=T0)
        done = nb.record(
            s, "Sent the report to Ana this morning.", timestamp=T0 + timedelta(days=1)
        )
        session = nb.get_session(s)
        (decision,) = [d for d in session.decisions if d.source is not None]
        assert (decision.what, decision.why, decision.who) == (
            "we go with PostgreSQL",
            "it has JSONB",
            "ana",
        )
        assert decision.source == decided.id
        (item,) = session.pending
        assert (item.id, item.source, item.what) == (
            "p_1",
            promised.id,
            "send the report to Ana tomorrow",
        )
        assert item.closed == done.timestamp and item.closed_by == done.id
        assert item.resolution == f"closed by {done.id}"


def test_a_repeat_contradiction_and_expiry_are_kept_on_the_moments() -> None:
    with _notebook() as nb:
        s = nb.start_session().id
        said = nb.record(s, "The staging server runs on port 8080.", timestamp=T0)
        again = nb.record(
            s, "the staging server runs on port 8080!", timestamp=T0 + timedelta(hours=1)
        )
        never = nb.record(s, "I have never used Docker.", timestamp=T0 + timedelta(hours=2))
        did = nb.record(
            s, "I used Docker to deploy the blog last week.", timestamp=T0 + timedelta(hours=3)
        )
        away = nb.record(s, "I'm working from the Berlin office until Friday.", timestamp=T0)
        assert nb.get_moment(again.id).relations.links == [f"duplicate_of:{said.id}"]
        assert nb.get_moment(never.id).relations.links == [f"conflicts_with:{did.id}"]
        assert nb.get_moment(did.id).relations.links == [f"conflicts_with:{never.id}"]
        assert nb.get_moment(away.id).expires == datetime(2026, 6, 6, tzinfo=UTC)
        assert not nb.get_moment(away.id).holds_at(datetime(2026, 6, 7, tzinfo=UTC))


def test_an_expiry_given_on_record_is_kept_and_turned_off_facts_derive_nothing() -> None:
    with _notebook(enabled=False) as nb:
        s = nb.start_session().id
        given = T0 + timedelta(days=30)
        kept = nb.record(s, "I'm in Berlin until Friday.", timestamp=T0, expires=given)
        nb.record(s, "Decision: we go with PostgreSQL.")
        assert nb.get_moment(kept.id).expires == given
        assert not [d for d in nb.get_session(s).decisions if d.source]


def test_export_and_import_carry_every_link_validity_and_decision_source() -> None:
    with _notebook() as source, _notebook() as target:
        target.record(target.start_session(started=T0).id, "A moment that takes the low ids.")
        s = source.start_session(started=T0).id
        source.record(s, "Decision: release branches are cut every Thursday.", timestamp=T0)
        first = source.record(s, "The launch is on June 5.", timestamp=T0)
        source.record(s, "The launch moved to June 12.", timestamp=T0 + timedelta(days=1))
        target.import_from(source.backend)
        moved = [m for m in target.moments() if m.content.text == first.content.text]
        (copy,) = moved
        (link,) = copy.relations.links
        relation, later = link.split(":")
        assert relation == "superseded_by"
        assert target.get_moment(later).content.text == "The launch moved to June 12."
        assert copy.valid_until == T0 + timedelta(days=1)
        assert "value/launch" in copy.metadata.fact_keys  # and filed in the copy's index:
        assert copy.number in target.backend.fact_key_members(["value/launch"], 10**6, 8)
        sessions = [x for x in target.sessions() if any(d.source for d in x.decisions)]
        (decision,) = [d for x in sessions for d in x.decisions if d.source]
        assert target.get_moment(decision.source or "").content.text.startswith("Decision:")


def test_a_redacted_moment_leaves_no_text_in_the_decisions_and_pending_read_from_it() -> None:
    with _notebook() as nb:
        s = nb.start_session().id
        decided = nb.record(
            s, "Decision: we go with Zanzibar DB because it is secret.", timestamp=T0
        )
        promised = nb.record(s, "I'll email the Zanzibar contract to Bob.", timestamp=T0)
        nb.redact(decided.id, "private")
        nb.redact(promised.id, "private")
        session = nb.get_session(s)
        assert "zanzibar" not in session.model_dump_json().casefold()
        # What was read from them goes with them: no "[redacted]" husk among the decisions.
        assert [d.what for d in session.decisions] == [
            f"redacted {decided.id}",
            f"redacted {promised.id}",
        ]
        assert session.pending == []
        # The engine kept no claim of the redacted text: a later moment ends nothing.
        later = nb.record(s, "Decision: we go with Zanzibar DB because it is secret.")
        assert not nb.get_moment(later.id).relations.links


def test_repeats_are_shown_once_said_n_times_and_raise_the_first_ones_importance() -> None:
    with _notebook() as nb:
        s = nb.start_session().id
        first = nb.record(s, "The staging server runs on port 8080.", timestamp=T0)
        for hours in (1, 2):
            nb.record(
                s, "The staging server runs on port 8080.", timestamp=T0 + timedelta(hours=hours)
            )
        other = nb.record(s, "The production server runs on port 443.", timestamp=T0)
        hits = nb.search("server port", mode="lexical")
        assert [h.moment.id for h in hits].count(first.id) == 1
        (group,) = [h for h in hits if h.moment.id == first.id]
        assert group.said == 3 and len(group.repeats) == 2
        assert "said 3 times" in group.fact_note()
        assert {h.moment.id for h in hits} == {first.id, other.id}
        assert (
            nb.get_moment(first.id).metadata.importance
            > nb.get_moment(other.id).metadata.importance
        )
        (early,) = [
            h
            for h in nb.search("staging", mode="lexical", as_of=T0 + timedelta(minutes=90))
            if h.moment.id == first.id
        ]
        assert early.said == 2


def test_a_conflicting_moment_comes_beside_the_hit_and_into_the_guests_slice() -> None:
    with _notebook() as nb:
        s = nb.start_session().id
        never = nb.record(s, "I have never used Docker.", timestamp=T0)
        nb.record(s, "Unrelated: the weather was fine.", timestamp=T0 + timedelta(hours=1))
        did = nb.record(
            s, "I used Docker to deploy the blog last week.", timestamp=T0 + timedelta(hours=2)
        )
        hits = nb.search("deploy the blog", mode="lexical")
        assert [h.moment.id for h in hits] == [did.id, never.id]
        assert hits[0].conflicts_with == [never.id] and hits[1].conflicts_with == [did.id]
        assert hits[1].explain == {"conflict": 1.0}
        text = nb.slice("deploy the blog", 2000, audience="guest").render()
        assert f"conflicting: {did.id} vs {never.id}" in text


def test_paraphrases_fold_on_record_with_vectors_but_a_changed_value_never_does() -> None:
    config = NotebookConfig(facts=FactSettings(enabled=True, paraphrases=True))
    embedder = LangChainEmbedder(BagOfWords(), "bag-of-words", dim=len(WORDS) + 1)
    with Notebook(MemoryBackend(), embedder=embedder, config=config) as nb:
        s = nb.start_session().id
        first = nb.record(s, "The rent for the flat is due on the first day.", timestamp=T0)
        again = nb.record(s, "Rent for my flat is due on the first day!", timestamp=T0)
        price = nb.record(s, "The rent for the flat is 900 euros.", timestamp=T0)
        changed = nb.record(s, "The rent for the flat is 950 euros.", timestamp=T0)
        assert nb.get_moment(again.id).relations.links == [f"duplicate_of:{first.id}"]
        assert f"repeated_by:{again.id}" in nb.get_moment(first.id).relations.links
        assert not any(
            link.startswith("duplicate_of") for link in nb.get_moment(changed.id).relations.links
        )
        # A changed value is an update, not a repeat.
        assert nb.get_moment(price.id).relations.links == [f"superseded_by:{changed.id}"]
        (group,) = [h for h in nb.search("rent due", mode="lexical") if h.moment.id == first.id]
        assert group.said == 2


def test_of_two_values_of_one_quantity_without_an_update_cue_the_later_comes_first() -> None:
    for enabled in (False, True):
        with _notebook(enabled) as nb:
            s = nb.start_session().id
            old = nb.record(s, "I spent $40 on groceries at the market, a big shop.", timestamp=T0)
            new = nb.record(
                s, "I spent $55 on groceries at the market.", timestamp=T0 + timedelta(days=7)
            )
            hits = nb.search("spent on groceries at the market big shop", mode="lexical")
            assert [h.moment.id for h in hits] == (
                [new.id, old.id] if enabled else [old.id, new.id]
            )
            assert all(h.superseded_by is None for h in hits)


def test_a_hit_that_was_ended_brings_the_moment_that_ended_it_first() -> None:
    with _notebook() as nb:
        s = nb.start_session().id
        old = nb.record(s, "The launch is on June 5, says the press office.", timestamp=T0)
        new = nb.record(s, "The launch moved to June 12.", timestamp=T0 + timedelta(days=1))
        hits = nb.search("press office", mode="lexical")
        assert [(h.moment.id, h.superseded_by) for h in hits] == [(new.id, None), (old.id, new.id)]
        assert hits[0].explain == {"successor": 1.0}
        assert [h.moment.id for h in nb.search("press office", mode="lexical", current=True)] == []


def test_a_job_changed_in_a_later_session_ends_the_one_said_before() -> None:
    with _notebook() as nb:
        first = nb.start_session("Monday").id
        nb.record(first, "I work at Deloitte.", speaker="Maya", timestamp=T0)
        later = nb.start_session("Friday").id
        nb.record(later, "I've joined Monzo.", speaker="Maya", timestamp=T0 + timedelta(days=4))
        nb.record(
            later,
            "Back in 2019 I worked at Tesco.",
            speaker="Maya",
            timestamp=T0 + timedelta(days=4),
        )
        old, new, story = nb.moments(first)[0], *nb.moments(later)
        assert f"superseded_by:{new.id}" in old.relations.links
        assert not any(link.startswith("superseded_by") for link in new.relations.links)
        current = {h.moment.id for h in nb.search("Deloitte Monzo Tesco", current=True)}
        assert current == {new.id, story.id}


def test_an_item_opened_one_day_is_closed_in_its_session_by_a_later_one() -> None:
    with _notebook() as nb:
        first = nb.start_session("Monday").id
        nb.record(first, "We still need to book the venue.", speaker="Ana", timestamp=T0)
        later = nb.start_session("Tuesday").id
        nb.record(later, "I booked the venue.", speaker="Ana", timestamp=T0 + timedelta(days=1))
        [item] = nb.get_session(first).pending
        assert item.closed is not None and item.closed_by == nb.moments(later)[0].id
        assert nb.get_session(later).pending == []


def test_a_party_planned_over_five_days_ends_with_its_final_decisions() -> None:
    with _notebook() as nb:
        assert len(plan_party(nb)) == 5
        log = nb.facts.decision_log()
        standing = [d.what for d in log if d.replaced_by is None]
        replaced = {d.what: d.replaced_by for d in log if d.replaced_by is not None}
        assert any("Casa Lucia" in w for w in standing)
        assert any("lemon cake" in w for w in standing)
        assert any("Saturday" in w for w in standing)
        assert any("Lakeside" in w for w in replaced) and any("chocolate" in w for w in replaced)
        venue = next(d for d in log if "Lakeside" in d.what)
        assert nb.get_moment(venue.replaced_by or "").content.text.startswith("Scratch that")
        questions = [p for _, p in nb.facts.pending_items() if "Uncle Raj" in p.what]
        assert len(questions) == 1 and questions[0].closed is not None  # asked twice, one item


def test_a_long_lived_engine_is_made_anew_from_the_window_and_still_links() -> None:
    config = NotebookConfig(facts=FactSettings(enabled=True, window=3))
    with Notebook(MemoryBackend(), embedder=None, config=config) as nb:
        s = nb.start_session().id
        for n in range(7):  # more than twice the window: the engine is remade on the way
            nb.record(s, f"Filler note number {n} about nothing.", timestamp=T0)
        keeper = nb.facts.keeper
        assert keeper._engine is not None and keeper._engine[2] <= 2 * 3
        old = nb.record(s, "The budget is $50,000.", timestamp=T0)
        new = nb.record(s, "The budget is now $80,000.", timestamp=T0 + timedelta(days=1))
        assert f"superseded_by:{new.id}" in nb.get_moment(old.id).relations.links
