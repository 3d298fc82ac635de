"""Item 7 of issue 39: the cue words are English only, in one table per language
(``facts.text.RULE_LANGUAGES``); a text in a language without a table yields nothing rather
than a wrong link. Minimal pairs: the same statements in English are read, in French,
German, Spanish or Dutch they are not (numbers and names would otherwise still match)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_notebook import Notebook
from agent_notebook.config import FactSettings, NotebookConfig
from agent_notebook.facts import FactEngine, Statement
from agent_notebook.facts.text import rule_language
from agent_notebook.storage import MemoryBackend

T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)

PAIRS = {
    "en": ("The budget is $50,000 for the project.", "The budget is now $80,000 for the project."),
    "fr": (
        "Le budget est de 50 000 euros pour le projet.",
        "Le budget est maintenant de 80 000 euros pour le projet.",
    ),
    "de": ("Ich arbeite bei Deloitte in Berlin.", "Ich arbeite jetzt bei Monzo in Berlin."),
    "es": (
        "Hemos decidido ir con Casa Lucia para la fiesta.",
        "Mejor vamos con El Faro para la fiesta, no con Casa Lucia.",
    ),
    "nl": ("Ik woon in Utrecht met mijn vriendin.", "Ik woon nu in Amsterdam met mijn vriendin."),
}


def _findings(first: str, second: str) -> tuple[int, int, list[str]]:
    engine = FactEngine()
    found = [
        engine.observe(Statement(f"m_{n}", text, T0 + timedelta(days=n), "user", "Ana"))
        for n, text in enumerate((first, second), start=1)
    ]
    links = sum(len(f.links) for f in found)
    decisions = sum(len(f.decisions) for f in found)
    return links, decisions, [k for f in found for k in f.keys]


def test_english_is_read() -> None:
    links, _, keys = _findings(*PAIRS["en"])
    assert links == 1 and keys


@pytest.mark.parametrize("language", ["fr", "de", "es", "nl"])
def test_a_language_without_a_table_yields_nothing(language: str) -> None:
    assert rule_language(PAIRS[language][1]) is None
    assert _findings(*PAIRS[language]) == (0, 0, [])


@pytest.mark.parametrize(
    "text", ["Budget: $80,000", "OK, booked ✅", "Done!", "New number: 555-0199"]
)
def test_a_short_text_with_no_words_of_another_language_is_read(text: str) -> None:
    assert rule_language(text) == "en"


def test_a_notebook_files_and_links_nothing_of_a_german_chat() -> None:
    config = NotebookConfig(facts=FactSettings(enabled=True))
    with Notebook(MemoryBackend(), embedder=None, config=config) as nb:
        s = nb.start_session().id
        for n, text in enumerate(
            [
                *PAIRS["de"],
                "Wir haben entschieden, dass die Party am Samstag ist.",
                "Wir müssen noch den Raum für die Party buchen.",
            ]
        ):
            nb.record(s, text, speaker="Ana", timestamp=T0 + timedelta(hours=n))
        moments = nb.moments(s)
        assert [m.relations.links for m in moments] == [[]] * 4
        assert [m.metadata.fact_keys for m in moments] == [[]] * 4
        session = nb.get_session(s)
        assert session.decisions == [] and session.pending == []
