"""Ranking that finds what matters (issue 16): a dialogue-long query's newest words, no
match on stopwords alone, the top of the results spanning sessions, moments found by the
dates they speak of. Small made-up conversations on real backends."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from agent_notebook import Notebook
from agent_notebook.config import NotebookConfig, SearchSettings
from agent_notebook.core.dates import relative_dates
from agent_notebook.core.enrich import enrich
from agent_notebook.core.lexical import terms, tokenize
from agent_notebook.search.hybrid import (
    Fused,
    cover_query,
    cover_scores,
    named_speakers,
    session_evidence,
)
from agent_notebook.search.query import dialogue_words, latest_turns, query_dates
from agent_notebook.search.ranking import Ranked, spread_sessions
from agent_notebook.storage import MomentBrief, MomentFilter, SqliteBackend
from tests.support import ROOT
from tests.support.backends import make_backend

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday

#: A dialogue so far, speaker-tagged, 70+ distinct stems before its last turn.
EARLIER_TURNS = [
    "Ana: Morning! I spent the whole weekend repainting the garden fence and the shed.",
    "Bo: Nice, which colour did you pick for the fence in the end, the green or the grey?",
    "Ana: Grey, although my neighbour complained about the smell of the paint all Sunday.",
    "Bo: Neighbours always complain. Mine keeps parking his van across our driveway.",
    "Ana: Did you ever talk to him about it, or leave a note on the windscreen?",
    "Bo: A note, twice. He apologised, then did it again on Thursday before my dentist.",
    "Ana: Typical. Anyway, are we still driving to the lake house on Friday evening?",
    "Bo: Yes, I booked the ferry for seven, and my sister lends us her roof rack.",
    "Ana: Perfect, I will bring sandwiches, sunscreen, the tent, towels and the camera.",
]
LATEST_TURN = "Bo: And did you remember the kayak?"


@pytest.fixture(params=["sqlite-file", "memory", "yaml"])
def lexical_nb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Notebook]:
    with Notebook(make_backend(str(request.param), tmp_path), embedder=None) as nb:
        yield nb


def test_the_dialogue_has_seventy_stems_before_its_newest_turn() -> None:
    assert len(set(terms("\n".join(EARLIER_TURNS)))) >= 70


def test_the_newest_turns_rare_word_wins_over_seventy_earlier_stems(lexical_nb: Notebook) -> None:
    nb = lexical_nb
    session = nb.start_session("Weekend", started=T0)
    for i, text in enumerate(
        [
            "Ana repainted the garden fence grey on Sunday; the neighbour complained.",
            "Bo's neighbour parks his van across the driveway again, even on Thursday.",
            "We booked the ferry to the lake house for Friday at seven.",
            "Bring sandwiches, sunscreen, towels and the tent to the lake house.",
            "The kayak is in Bo's garage, behind the bicycles.",
            "Bo's sister lends us her roof rack for the weekend drive.",
        ]
    ):
        nb.record(session.id, text, timestamp=T0 + timedelta(minutes=i))
    query = "\n".join([*EARLIER_TURNS, LATEST_TURN])
    for mode in ("lexical", "hybrid"):
        hits = nb.search(query, mode=mode, limit=3)  # hybrid is lexical without an embedder
        assert hits[0].moment.content.text.startswith("The kayak"), mode


def test_query_terms_are_chosen_by_weight_not_position(tmp_path: Path) -> None:
    # The backend alone: the 70th distinct stem of a query is still searched by.
    backend = SqliteBackend(tmp_path / "terms.db")
    with Notebook(backend, embedder=None) as nb:
        session = nb.start_session("Terms")
        nb.record(session.id, "The kayak is in the garage.")
        nb.record(session.id, "The fence is grey.")
        query = " ".join(EARLIER_TURNS) + " " + LATEST_TURN
        found = backend.search_text(query, MomentFilter(), 10)
        assert "m_1" in [mid for mid, _ in found]


def test_a_match_on_stopwords_alone_is_no_match(lexical_nb: Notebook) -> None:
    nb = lexical_nb
    session = nb.start_session("Trip")
    nb.record(session.id, "We need to plan the trip to Lyon")
    nb.record(session.id, "I want to eat somewhere quiet")
    for mode in ("lexical", "hybrid"):  # no embedder: words are all there is to judge by
        hits = nb.search("somewhere to eat without meat", mode=mode, min_score=0)
        assert [h.moment.id for h in hits] == ["m_2"], mode


# -- the README's example, by meaning -------------------------------------------------------


def test_the_readme_example_puts_the_vegetarian_moments_first(tmp_path: Path) -> None:
    from agent_notebook.embed import default_embedder
    from agent_notebook.ingest import parse_file

    if default_embedder() is None:
        pytest.skip("the offline embedder is not installed")
    trip = ROOT / "examples" / "trip.jsonl"
    with Notebook(SqliteBackend(tmp_path / "trip.db")) as nb:
        nb.ingest(parse_file(trip))
        nb.reindex()
        hits = nb.search("somewhere to eat without meat", limit=3)
        texts = [h.moment.content.text for h in hits]
        assert texts and all("vegetarian" in t for t in texts[:2]), texts


# -- several sessions -----------------------------------------------------------------------


def _two_sessions(nb: Notebook) -> tuple[str, str]:
    """Ana's walks fill one session; what Bo adopted is one turn of another; Bo also
    speaks in a third, unrelated one (so his name alone finds little)."""
    work = nb.start_session("Work", started=T0 - timedelta(days=30))
    for i, text in enumerate(
        [
            "Bo finished the quarterly report.",
            "Bo says the printer is broken again.",
            "Bo is late because of the train strike.",
            "Bo ordered pizza for the team.",
            "Bo moved the meeting to Thursday.",
            "Bo fixed the login bug.",
            "Bo will present the budget.",
            "Bo took the afternoon off.",
            "Bo shared the slides.",
            "Bo asked about the holiday rota.",
        ]
    ):
        nb.record(work.id, text, speaker="Bo", timestamp=work.started + timedelta(minutes=i))
    walks = nb.start_session("Walks", started=T0)
    for i, text in enumerate(
        [
            "Ana walks her dog Rex in the park every morning.",
            "Ana says the dog loves the walk along the river.",
            "Rex the dog pulls Ana when they walk past the ducks.",
            "Ana walked the dog in the rain today.",
            "The dog walk is Ana's favourite part of the day.",
            "Ana bought a lead to walk the dog.",
        ]
    ):
        nb.record(walks.id, text, speaker="Ana", timestamp=T0 + timedelta(minutes=i))
    shelter = nb.start_session("Shelter", started=T0 + timedelta(days=20))
    nb.record(
        shelter.id,
        "Bo adopted a kitten from the shelter on Elm Street.",
        speaker="Bo",
        timestamp=shelter.started,
    )
    return walks.id, shelter.id


def test_a_two_session_question_gets_both_sessions_in_its_top_5(lexical_nb: Notebook) -> None:
    nb = lexical_nb
    walks, shelter = _two_sessions(nb)
    question = "Where does Ana walk her dog, and what did Bo adopt?"
    hits = nb.search(question, limit=5)  # the defaults
    assert {h.moment.session for h in hits} == {walks, shelter}
    assert hits[0].moment.session == walks  # the session that matches most still leads
    # Without query coverage the walks fill the top 5: session evidence lifts them all,
    # and "adopt", the one word only Bo's turn has, is not enough to come up.
    nb.config = NotebookConfig(search=SearchSettings(coverage_gain=0))
    assert {h.moment.session for h in nb.search(question, limit=5)} == {walks}


def test_query_coverage_takes_the_candidate_with_the_words_the_better_ones_lack() -> None:
    scores = [1.0, 0.9, 0.85, 0.5, 0.45]
    covers = [{"ana", "dog"}, {"ana", "dog"}, {"ana", "dog"}, {"bo"}, {"ana", "adopt"}]
    weights = {"ana": 0.5, "dog": 1.0, "bo": 0.5, "adopt": 2.0}
    # Off, the order of the scores; on, after the first, the one with "adopt" (weight 2 of
    # 4: 0.45 + 1 * 2 / 4 > 0.9), but not the one with "bo" (0.5 + 0.5 / 4 < 0.85).
    assert cover_query(scores, covers, weights, gain=0, limit=5) == [0, 1, 2, 3, 4]
    assert cover_query(scores, covers, weights, gain=1.0, limit=5) == [0, 4, 1, 2, 3]
    assert cover_query(scores, covers, weights, gain=2.0, limit=3) == [0, 4, 1]
    # Every word covered by the best one: nothing to gain, the order stays.
    assert cover_query(scores, [set(weights)] * 5, weights, gain=4.0, limit=5) == [0, 1, 2, 3, 4]


def test_query_coverage_scores_fall_in_its_order() -> None:
    """The score a candidate is taken with is its own plus what its words add: the order
    taken is the order of those scores (issue 31: the printed score explains the order)."""
    scores = [1.0, 0.9, 0.85, 0.5, 0.45]
    covers = [{"ana", "dog"}, {"ana", "dog"}, {"ana", "dog"}, {"bo"}, {"ana", "adopt"}]
    weights = {"ana": 0.5, "dog": 1.0, "bo": 0.5, "adopt": 2.0}
    taken = cover_scores(scores, covers, weights, gain=1.0, limit=5)
    assert [i for i, _ in taken] == [0, 4, 1, 2, 3]
    final = [score for _, score in taken]
    assert final == sorted(final, reverse=True)
    assert final[1] == pytest.approx(0.45 + 1.0 * 2 / 4)  # "adopt" added half the top score
    assert all(score >= scores[i] for i, score in taken)


def test_spreading_over_sessions_gives_each_hit_the_score_it_was_taken_with() -> None:
    briefs = {
        f"m_{n}": MomentBrief(n, session, T0, "user", "Ana", 0.5, 0.0, False, False)
        for n, session in [(1, "a"), (2, "a"), (3, "a"), (4, "b")]
    }
    hits = [
        Ranked(score, n, Fused(f"m_{n}", score), {})
        for n, score in [(1, 1.0), (2, 0.9), (3, 0.8), (4, 0.5)]
    ]
    spread = spread_sessions(hits, briefs, decay=0.5, free=1, limit=4)
    assert [h.number for h in spread] == [1, 4, 2, 3]  # a's second and third halve, quarter
    assert [h.score for h in spread] == pytest.approx([1.0, 0.5, 0.45, 0.2])
    assert spread[2].factors["spread"] == pytest.approx(0.5)
    short = spread_sessions(hits, briefs, decay=0.5, free=1, limit=2)
    assert [h.score for h in short] == sorted((h.score for h in short), reverse=True)


def test_session_evidence_lifts_the_turns_of_a_session_that_matches_as_a_whole() -> None:
    fused = {"m_1": Fused("m_1", 0.10), "m_2": Fused("m_2", 0.05), "m_3": Fused("m_3", 0.10)}
    session_of = {"m_1": "s1", "m_2": "s1", "m_3": "s2"}
    session_evidence(fused, session_of, share=0.2, best=3)
    assert fused["m_1"].score > fused["m_3"].score  # tied before: s1 has two good turns
    assert fused["m_1"].score == pytest.approx(0.10 + 0.2 * 0.15)
    assert fused["m_3"].score == pytest.approx(0.10 + 0.2 * 0.10)
    unchanged = {"m_1": Fused("m_1", 0.1)}
    session_evidence(unchanged, session_of, share=0.0, best=3)
    assert unchanged["m_1"].score == 0.1


# -- dates ------------------------------------------------------------------------------------


def test_relative_dates_resolve_against_the_day_they_were_said() -> None:
    monday = date(2023, 5, 8)
    assert relative_dates("We went climbing last Saturday", monday) == ["2023-05-06"]
    assert relative_dates("yesterday", monday) == ["2023-05-07"]
    assert relative_dates("two weeks ago", monday) == ["2023-04-24", "2023-04"]
    assert relative_dates("3 days ago", monday) == ["2023-05-05"]
    assert relative_dates("last month", monday) == ["2023-04"]
    assert relative_dates("last year", monday) == ["2022"]
    assert relative_dates("last weekend", monday) == ["2023-05-06", "2023-05-07"]
    assert relative_dates("next Friday", monday) == ["2023-05-12"]
    assert relative_dates("last Monday", monday) == ["2023-05-01"]  # not the same day
    assert relative_dates("a lovely Saturday", monday) == []


def test_enrich_keys_a_moment_by_the_dates_it_speaks_of() -> None:
    found = enrich("We went climbing last Saturday, and on 2 May 2023 too.", when=date(2023, 5, 8))
    assert found.dates == ["2023-05-02", "2023-05-06"]
    assert {"2023-05-02", "2023-05-06"} <= set(found.retrieval_keys)
    assert enrich("We went climbing last Saturday.").dates == []  # said when? unknown


def test_query_dates_are_days_and_months() -> None:
    assert [d.key for d in query_dates("What did Ana do on 6 May 2023, or in June 2023?")] == [
        "2023-05-06",
        "2023-06",
    ]
    assert query_dates("What did Ana do on May 6?") == []  # which year?


def test_a_last_saturday_turn_is_found_by_its_absolute_date(lexical_nb: Notebook) -> None:
    nb = lexical_nb
    session = nb.start_session("Catching up", started=T0)
    for i, text in enumerate(
        [
            "Ana: How was your week?",
            "Bo: We finally tried the climbing gym last Saturday, my arms still hurt.",
            "Ana: I did the Saturday market in May, lots of cheese.",
            "Bo: We should do something in May again.",
        ]
    ):
        nb.record(session.id, text, timestamp=T0 + timedelta(minutes=i))
    hits = nb.search("What did Bo do on 6 May 2023?", limit=3)
    assert hits[0].moment.id == "m_2"
    assert "2023-05-06" in hits[0].moment.metadata.concepts


def test_moments_said_on_the_day_the_query_names_come_first(lexical_nb: Notebook) -> None:
    nb = lexical_nb
    for day, text in [(0, "Bo baked bread with Ana."), (3, "Bo baked a cake with Ana.")]:
        when = T0 + timedelta(days=day)
        session = nb.start_session(f"Day {day}", started=when)
        nb.record(session.id, text, timestamp=when)
    assert nb.search("What did Bo bake on 11 May 2023?")[0].moment.id == "m_2"
    assert nb.search("What did Bo bake on 8 May 2023?")[0].moment.id == "m_1"


def test_latest_turns_are_the_last_lines_of_a_dialogue_without_who_speaks() -> None:
    assert latest_turns("Ana: hi\nBo: hello\n\nAna: the kayak?", 1) == "the kayak?"
    assert latest_turns("Ana: hi\nBo: hello\nAna: the kayak?", 2) == "hello\nthe kayak?"
    assert latest_turns("Ana: hi\nBo: the kayak?", 2) is None  # all of it already
    assert latest_turns("one line", 1) is None
    # Lines that do not start with who speaks keep their first words.
    assert latest_turns("Note: one\nplain two\nplain three", 1) == "plain three"
    assert dialogue_words("[User] hi\n[Bot] the kayak?") == "hi\nthe kayak?"


QUESTION = "Where does Ana walk her dog, and what did Bo adopt?"


def test_explain_shows_what_query_coverage_did(lexical_nb: Notebook) -> None:
    """Each hit says where it stood before the coverage step and how far it moved, and
    which of the query's words it has; Bo's turn, the only one with "adopt", moved up."""
    _two_sessions(lexical_nb)
    hits = lexical_nb.search(QUESTION, limit=5)
    adopted = next(h for h in hits if "adopted" in h.moment.content.text)
    assert adopted.covered == ["bo", "adopt"]
    assert adopted.explain["coverage_move"] > 0 and adopted.explain["coverage_added"] > 0
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)  # the order is the order of the scores
    before = [int(h.explain["coverage_before"]) for h in hits]
    moves = [int(h.explain["coverage_move"]) for h in hits]
    assert [b - m for b, m in zip(before, moves, strict=True)] == [1, 2, 3, 4, 5]  # places now
    assert hits[0].explain["coverage_move"] == 0 and "walk" in hits[0].covered
    assert adopted.without_explain().covered == [] and adopted.without_explain().explain == {}
    # a dialogue-long query is not a list of things asked: no coverage step, nothing shown
    dialogue = "\n".join([*EARLIER_TURNS, LATEST_TURN])
    assert all(
        not h.covered and "coverage_move" not in h.explain
        for h in lexical_nb.search(dialogue, limit=5)
    )


def test_search_explain_on_the_command_line_shows_the_coverage_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.clirun import cli, cli_process, data

    home = tmp_path / "nb"
    no_embedder = {"AGENT_NOTEBOOK_EMBEDDER": "none"}
    assert cli(home, "init", env=no_embedder).returncode == 0
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")
    with Notebook.open(home) as nb:
        _two_sessions(nb)
    # the table whole, not cut to a terminal: a process of its own, since the console of
    # this one took its width when it was made
    wide = {**no_embedder, "COLUMNS": "400"}
    shown = cli_process(home, "search", QUESTION, "--limit", "5", "--explain", env=wide)
    assert shown.returncode == 0, shown.stderr
    blocks = shown.stdout.decode().split("\n\n")  # a block a hit
    block = next(b for b in blocks if "adopted" in b)
    assert "query coverage" in block and "bo,adopt" in block and "->#" in block
    found = data(cli(home, "search", QUESTION, "-f", "json", "--explain", env=no_embedder))
    adopted = next(h for h in found if "adopted" in h["moment"]["content"]["text"])
    assert adopted["covered"] == ["bo", "adopt"] and adopted["explain"]["coverage_move"] > 0
    plain = data(cli(home, "search", QUESTION, "-f", "json", env=no_embedder))
    assert all(h["covered"] == [] and h["explain"] == {} for h in plain)


# -- speakers ---------------------------------------------------------------------------------


def test_named_speakers_are_those_whose_every_word_the_query_has() -> None:
    words = tokenize("What did Caroline's friend Ana Ruiz research?")
    speakers = ["Caroline", "Ana Ruiz", "Ana Lopez", "Melanie", ""]
    assert named_speakers(words, speakers) == {"Caroline", "Ana Ruiz"}
    assert named_speakers(tokenize("what was researched?"), speakers) == set()


def test_a_question_naming_a_speaker_lifts_what_that_speaker_said(lexical_nb: Notebook) -> None:
    nb = lexical_nb
    chat = nb.start_session("chat", started=T0)
    said = [
        ("Melanie", "I painted a sunset last week; painting calms me, I paint every Sunday."),
        ("Caroline", "I painted a lake at dawn."),
        ("Melanie", "The kids loved the museum."),
    ]
    ids = [
        nb.record(chat.id, text, speaker=who, timestamp=T0 + timedelta(minutes=i)).id
        for i, (who, text) in enumerate(said)
    ]
    question = "What did Caroline paint?"
    # off (and another person's words about themselves not lowered either)
    nb.config = NotebookConfig(
        search=SearchSettings(speaker_bonus=0, priors={"other_person_weight": 1})
    )
    off = nb.search(question, limit=3)
    assert [h.moment.id for h in off][:2] == [ids[0], ids[1]]  # Melanie's words match more
    nb.config = NotebookConfig()  # the default, 0.1
    on = nb.search(question, limit=3)
    assert [h.moment.id for h in on][:2] == [ids[1], ids[0]]
    assert on[0].explain["speaker_prior"] == pytest.approx(1.1)
    assert "speaker_prior" not in on[1].explain
    # A question naming no speaker is ranked as before.
    assert [h.moment.id for h in nb.search("What was painted?", limit=3)][:2] == [ids[0], ids[1]]
    # Nor is a query of several lines (a dialogue so far).
    hits = nb.search("We talked about art.\nWhat did Caroline paint?", limit=3)
    assert hits and not any("speaker_prior" in h.explain for h in hits)
