"""Retrieval (issue 5): hybrid search with the real offline embedder, filters, slices,
write-back, redaction, and the embedding queue."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_notebook import Notebook
from agent_notebook.errors import InvalidInput
from agent_notebook.storage import MomentFilter, SqliteBackend
from tests.support.backends import make_backend
from tests.support.waiting import HANG_GUARD_S

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)

FACTS = [
    ("ana", "I forgot my login credentials and need to change them before Friday."),
    ("ben", "The quarterly report is due on the 14th; Priya owns the numbers."),
    ("ana", "Ticket EXP-5839 is the refund for the Lyon hotel."),
    ("ben", "Ticket EXP-5838 is the taxi receipt from the airport."),
    ("ana", "Our cat knocked the plant off the windowsill again."),
    ("ben", "Let's meet at the bakery on Rue Mercière after lunch."),
    ("ana", "The deploy failed because the staging database ran out of disk."),
    ("ben", "My sister is visiting from Osaka next month."),
]


def fill(nb: Notebook) -> tuple[str, str]:
    first = nb.start_session("Week one", started=T0)
    second = nb.start_session("Week two", started=T0 + timedelta(days=7))
    for i, (who, text) in enumerate(FACTS):
        session = first if i < 4 else second
        when = T0 + timedelta(days=7 * (i >= 4), hours=i)
        nb.record(session.id, text, speaker=who, timestamp=when)
    nb.record(
        second.id,
        "Kick-off notes, nothing decided yet.",
        speaker="ana",
        concepts=["project falcon"],
        timestamp=T0 + timedelta(days=8),
    )
    nb.reindex()
    return first.id, second.id


@pytest.fixture
def nb(backend_kind: str, tmp_path: Path) -> Iterator[Notebook]:
    notebook = Notebook(make_backend(backend_kind, tmp_path))
    try:
        yield notebook
    finally:
        notebook.close()


def texts(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.moment.content.text for h in hits]


def test_a_paraphrase_is_found_by_meaning(nb: Notebook) -> None:
    fill(nb)
    query = "reset password"  # no word in common with the fact
    assert texts(nb.search(query, limit=1, mode="vector"))[0] == FACTS[0][1]
    hits = nb.search(query, limit=3)
    assert hits[0].moment.content.text == FACTS[0][1]
    assert hits[0].explain["vector_share"] > 0
    assert nb.search(query, mode="lexical") == []  # words alone cannot find it


def test_an_exact_identifier_is_found_by_its_letters(nb: Notebook) -> None:
    fill(nb)
    hits = nb.search("EXP-5839", limit=2)
    assert hits[0].moment.content.text == FACTS[2][1]
    assert hits[0].explain["lexical_rank"] == 1


def test_a_concept_is_found_by_its_index_entry(nb: Notebook) -> None:
    fill(nb)
    hits = nb.search("project falcon", limit=3)
    assert hits[0].moment.content.text.startswith("Kick-off notes")
    assert "concept_share" in hits[0].explain
    only = nb.search("notes", concept="Project Falcon")
    assert texts(only) == ["Kick-off notes, nothing decided yet."]


def test_filters_hold_in_every_mode(nb: Notebook) -> None:
    first, _ = fill(nb)
    for mode in ("hybrid", "lexical", "vector"):
        for where in (
            {"session": first},
            {"speaker": "ben"},
            {"since": T0 + timedelta(days=7)},
            {"until": T0 + timedelta(hours=2)},
        ):
            hits = nb.search("ticket refund deploy cat sister report", mode=mode, limit=50, **where)  # type: ignore[arg-type]
            flt = MomentFilter(**where)  # type: ignore[arg-type]
            assert hits, (mode, where)
            assert all(flt.matches(h.moment) for h in hits), (mode, where)


def test_redacted_moments_never_come_back(nb: Notebook) -> None:
    fill(nb)
    target = nb.search("EXP-5839 refund Lyon hotel", limit=1)[0].moment
    nb.redact(target.id, "contains a booking reference")
    for mode in ("hybrid", "lexical", "vector"):
        found = nb.search("refund for the Lyon hotel EXP-5839", mode=mode, limit=50)
        assert target.id not in [h.moment.id for h in found], mode
    # "taxi" keeps a true match in the slice; the redacted refund is no longer one.
    items = nb.slice("refund for a hotel or a taxi", 4000).items
    assert items and all("Lyon hotel" not in i.text for i in items)
    assert f"moment:{target.id}" not in [i.source for i in items]
    kept = nb.get_moment(target.id)
    assert kept.content.text == "" and kept.redacted is not None
    assert kept.redacted.why == "contains a booking reference"
    audit = nb.get_session(target.session).decisions[-1]
    assert audit.what == f"redacted {target.id}"


def test_a_question_lends_its_score_to_its_reply(tmp_path: Path) -> None:
    """The answer to a question rarely repeats its words; the reply is found with it."""
    nb = Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=None)
    try:
        chat = nb.start_session("chat", started=T0)
        other = nb.start_session("other", started=T0)
        asked = nb.record(chat.id, "Where did you go on holiday last summer?", speaker="ben")
        reply = nb.record(chat.id, "Portugal, we drove along the coast.", speaker="ana")
        nb.record(other.id, "A holiday is overdue.", speaker="ana")  # no reply to it
        hits = nb.search("holiday last summer", limit=5)
        ids = [h.moment.id for h in hits]
        assert ids[0] == asked.id and reply.id in ids
        found = hits[ids.index(reply.id)]
        assert found.explain["reply_gain"] > 0 and "lexical_rank" not in found.explain
        assert nb.search("holiday last summer", mode="lexical", limit=5)[-1].moment.id != reply.id
        nb.config.search.spread.reply_share = 0
        assert reply.id not in [h.moment.id for h in nb.search("holiday last summer")]
    finally:
        nb.close()


def test_an_assistants_reply_takes_its_own_share(tmp_path: Path) -> None:
    """A person's reply takes ``reply_share`` of the question's score, an assistant's
    ``assistant_reply_share``: set apart, one can be off and the other on."""
    nb = Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=None)
    try:
        people = nb.start_session("people", started=T0)
        model = nb.start_session("model", started=T0)
        nb.record(people.id, "Which ferry goes to Tresco?", speaker="ben")
        person = nb.record(people.id, "The blue one, at nine.", speaker="ana")
        nb.record(model.id, "Which ferry goes to Tresco?", role="user")
        bot = nb.record(model.id, "Several companies sail there daily.", role="assistant")
        nb.config.search.spread.reply_share, nb.config.search.spread.assistant_reply_share = (
            0.5,
            0.0,
        )
        found = {h.moment.id: h for h in nb.search("ferry Tresco", limit=10)}
        assert found[person.id].explain["reply_gain"] > 0 and bot.id not in found
        nb.config.search.spread.reply_share, nb.config.search.spread.assistant_reply_share = (
            0.0,
            0.5,
        )
        found = {h.moment.id: h for h in nb.search("ferry Tresco", limit=10)}
        assert found[bot.id].explain["reply_gain"] > 0 and person.id not in found
    finally:
        nb.close()


def test_a_concept_in_most_moments_does_not_rank(tmp_path: Path) -> None:
    nb = Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=None)
    try:
        s = nb.start_session("many", started=T0)
        nb.record_many(
            s.id, [{"text": f"Note {i}.", "concepts": ["everywhere"]} for i in range(40)]
        )
        rare = nb.record(s.id, "Filed.", concepts=["everywhere", "falcon"])
        assert nb.search("everywhere", limit=5) == []  # in every moment: no signal
        assert [h.moment.id for h in nb.search("falcon and everywhere", limit=5)] == [rare.id]
        assert len(nb.search("x", concept="everywhere", limit=100)) == 0  # filter, no match
        assert len(nb.search("note", concept="everywhere", limit=100)) == 40  # filter holds
    finally:
        nb.close()


def test_vector_mode_without_an_embedder_says_so(tmp_path: Path) -> None:
    nb = Notebook(SqliteBackend(tmp_path / "notebook.db"), embedder=None)
    try:
        with pytest.raises(InvalidInput, match="doctor"):
            nb.search("anything", mode="vector")
        assert nb.search("anything") == []  # hybrid degrades to lexical
    finally:
        nb.close()


# -- slices -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Notebook]:
    notebook = Notebook.open(tmp_path_factory.mktemp("slice") / "nb")
    first, _ = fill(notebook)
    notebook.open_pending(first, "confirm the refund amount for EXP-5839")
    notebook.open_pending(first, "water the garden for the neighbours")
    notebook.decide(first, "claim the Lyon hotel refund", "the stay was cancelled")
    notebook.decide(first, "buy a new plant", "")
    try:
        yield notebook
    finally:
        notebook.close()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    budget=st.integers(min_value=1, max_value=1500),
    fmt=st.sampled_from(["markdown", "yaml"]),
    query=st.sampled_from(["Lyon hotel refund", "password", "deploy disk", "x"]),
)
def test_a_slice_never_exceeds_its_budget(
    filled: Notebook, budget: int, fmt: str, query: str
) -> None:
    found = filled.slice(query, budget, fmt=fmt)  # type: ignore[arg-type]
    assert found.tokens == filled.tokens.count(found.render())
    assert found.tokens <= budget or not found.items


def test_a_slice_carries_matches_neighbours_task_pending_and_decisions(filled: Notebook) -> None:
    found = filled.slice("refund for the Lyon hotel", 4000, audience="hermes")
    sources = [item.source for item in found.items]
    kinds = {item.kind for item in found.items}
    assert {"task", "pending", "decision", "moment", "context"} <= kinds
    match = next(i for i in found.items if i.kind == "moment")
    assert "Lyon hotel" in match.text
    text = found.render()
    assert text.startswith("# Notebook slice for hermes")
    assert "[moment:m_" in text and "claim the Lyon hotel refund" in text
    assert "buy a new plant" not in text  # a decision unrelated to the query
    assert "water the garden" not in text  # an open item unrelated to it ("the", "for" aside)
    assert len(sources) == len(set(sources))
    assert "items:" in filled.slice("refund", 4000, fmt="yaml").render()


def test_a_slice_budget_must_be_sane(filled: Notebook) -> None:
    for bad in (0, 262_145):
        with pytest.raises(InvalidInput, match="budget_tokens"):
            filled.slice("x", bad)


def test_write_back_goes_to_the_audit_log_under_the_guest(filled: Notebook) -> None:
    sid = filled.sessions()[0].id
    entry = filled.write_back("hermes", sid, "decision", "refund approved", why="policy 4.2")
    assert entry.who == "guest:hermes"
    pending = filled.write_back("hermes", sid, "pending", "send the receipt to Priya")
    assert pending.what.startswith("opened pending p_")
    escalation = filled.escalate(sid, "hermes", "needs a bigger model")
    outcome = filled.write_back(
        "hermes", sid, "escalation_outcome", "done", escalation_id=escalation.id
    )
    session = filled.get_session(sid)
    assert session.escalations[-1].outcome == "done"
    assert session.decisions[-1] == outcome and outcome.who == "guest:hermes"
    with pytest.raises(InvalidInput, match="kind"):
        filled.write_back("hermes", sid, "redact", "x")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="escalation_id"):
        filled.write_back("hermes", sid, "escalation_outcome", "x")


# -- the embedding queue ----------------------------------------------------------------------

CHILD = """
import sys
from agent_notebook import Notebook
nb = Notebook.open(sys.argv[1])
session = nb.start_session("bulk")
nb.record_many(session.id, [{"text": f"note {i} about the garden shed"} for i in range(1500)])
print("recorded", flush=True)
nb.semantic.wait_idle()
"""


@pytest.mark.slow
def test_the_embedding_queue_survives_sigkill(tmp_path: Path) -> None:
    home = tmp_path / "nb"
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(home)], stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None and child.stdout.readline().strip() == "recorded"
        time.sleep(1.0)  # the worker is embedding by now
        child.send_signal(signal.SIGKILL)
        child.wait()
    nb = Notebook.open(home)
    try:
        assert nb.backend.count_moments() == 1500  # nothing recorded was lost
        left = nb.unembedded()
        assert 0 < left < 1500, left  # killed midway: some vectors made, the rest queued
        assert nb.reindex() == left
        assert nb.unembedded() == 0
        assert len(nb.backend.get_vectors(nb.semantic.model_id)) == 1500  # type: ignore[union-attr]
        assert nb.search("tool hut in the yard", mode="vector", limit=1)
    finally:
        nb.close()


def test_the_yaml_layout_reads_its_saved_index_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Notebook.open(home, backend="yaml", background_embedding=False) as nb:
        fill(nb)
        assert nb.semantic is not None and not nb.semantic.loaded_from_file
        nb.search("reset password", mode="vector")
    assert (home / "embeddings.faiss").exists() and (home / "embeddings.faiss.json").exists()
    with Notebook.open(home, backend="yaml", background_embedding=False) as nb:
        s = nb.start_session("later")
        late = nb.record(s.id, "The plumber comes on Tuesday to fix the leaking sink.")
        nb.reindex()
        assert (
            nb.search("reset password", mode="vector", limit=1)[0].moment.content.text
            == FACTS[0][1]
        )
        assert nb.search("a water pipe repair", mode="vector", limit=1)[0].moment.id == late.id
        assert nb.semantic is not None and nb.semantic.loaded_from_file
    (home / "embeddings.faiss").write_bytes(b"not an index")  # damaged: rebuilt, not trusted
    with Notebook.open(home, backend="yaml", background_embedding=False) as nb:
        assert nb.search("a water pipe repair", mode="vector", limit=1)[0].moment.id == late.id
        assert nb.semantic is not None and not nb.semantic.loaded_from_file


def test_the_worker_does_not_rescan_the_notebook_after_each_write(tmp_path: Path) -> None:
    """Each write wakes the embedding worker; it looks only past what it already saw."""
    backend = SqliteBackend(tmp_path / "notebook.db")
    seen: list[int] = []
    unembedded = backend.unembedded

    def spy(model: str, limit: int | None = None, after: int = 0) -> list[int]:
        seen.append(after)
        return unembedded(model, limit, after)

    backend.unembedded = spy  # type: ignore[method-assign]
    nb = Notebook(backend, background_embedding=True)
    try:
        s = nb.start_session("Chat")
        for i in range(5):
            nb.record(s.id, f"Message number {i} about the weather in Lyon.")
            assert nb.semantic is not None and nb.semantic.wait_idle(HANG_GUARD_S)
        worker_scans = seen[1:]  # the first pass of a process starts at the beginning
        assert worker_scans and max(worker_scans) >= 4 and 0 not in worker_scans[-3:]
        assert nb.unembedded() == 0
    finally:
        nb.close()
