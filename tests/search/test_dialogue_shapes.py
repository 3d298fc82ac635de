"""A conversation pasted as the query is read as one in any common shape (issue 31): who
speaks is cut from every turn, the user's turns are told apart, and text that is not a
dialogue stays lines. Pure reading, made-up turns."""

from __future__ import annotations

import json

import pytest

from agent_notebook.search.query import Turn, dialogue, dialogue_words, speaker_turns

EXPECTED = [
    Turn("User", "I picked up a guitar in Lisbon"),
    Turn("Assistant", "Nice! When was that?"),
    Turn("User", "A year ago, on a rainy day."),
]
LANGCHAIN = "\n".join(
    [
        "================================ Human Message =================================",
        "",
        "I picked up a guitar in Lisbon",
        "",
        "================================== Ai Message ==================================",
        "",
        "Nice! When was that?",
        "================================ Human Message =================================",
        "A year ago, on a rainy day.",
    ]
)

SHAPES = {
    "name colon": "User: I picked up a guitar in Lisbon\nAssistant: Nice! When was that?\n"
    "User: A year ago, on a rainy day.",
    "angle brackets, quoted, markers": "[BEGIN DIALOGUE]\n"
    '<User>: "I picked up a guitar in Lisbon"\n<Assistant>: "Nice! When was that?"\n'
    '<User>: "A year ago,\non a rainy day."\n[END DIALOGUE]',
    "square brackets": "[User] I picked up a guitar in Lisbon\n[Assistant] Nice! When was that?\n"
    "[User]: A year ago, on a rainy day.",
    "bold": "**User**: I picked up a guitar in Lisbon\n**Assistant:** Nice! When was that?\n"
    "**User**: A year ago, on a rainy day.",
    "curly quotes and dashed markers": "--- begin conversation ---\n"
    "User: \u201cI picked up a guitar in Lisbon\u201d\nAssistant: \u201cNice! When was that?\u201d\n"
    "User: \u201cA year ago, on a rainy day.\u201d\n--- end of conversation ---",
    "xml markers, times": "<dialogue>\nUser (10:31): I picked up a guitar in Lisbon\n"
    "Assistant (10:32): Nice! When was that?\nUser (10:33): A year ago, on a rainy day.\n"
    "</dialogue>",
    "json role/content": json.dumps(
        [{"role": t.speaker.lower(), "content": t.text} for t in EXPECTED]
    ),
    "json speaker/text under messages": json.dumps(
        {"messages": [{"speaker": t.speaker, "text": t.text} for t in EXPECTED]}
    ),
    "json content parts": json.dumps(
        [{"role": t.speaker, "content": [{"type": "text", "text": t.text}]} for t in EXPECTED]
    ),
    "langchain printed messages": LANGCHAIN,
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_shape_is_read_as_one_dialogue(shape: str) -> None:
    found = dialogue(SHAPES[shape])
    assert found is not None
    assert [t.text for t in found] == [t.text for t in EXPECTED]
    # the user's side is told apart, whatever it is called (User, user, Human)
    said = speaker_turns(SHAPES[shape], "user", 3)
    assert said == "I picked up a guitar in Lisbon\nA year ago, on a rainy day."
    # the lexical signal reads the turns without who speaks
    words = dialogue_words(SHAPES[shape])
    assert "Lisbon" in words and "User" not in words and "Assistant" not in words


def test_named_speakers_keep_their_names() -> None:
    found = dialogue('<Mia>: "I went to Lisbon"\n<Tom>: "When?"')
    assert found == [Turn("Mia", "I went to Lisbon"), Turn("Tom", "When?")]
    # without a "user", the one who speaks last is whose turns are read
    assert speaker_turns('<Mia>: "Lisbon"\n<Tom>: "When?"\n<Mia>: "In May"', "user", 3) == (
        "Lisbon\nIn May"
    )


@pytest.mark.parametrize(
    "text",
    [
        "What did Ana say about the kayak?",
        "Note: one\nplain two\nplain three",  # one tag among plain lines
        "User: only one turn",
        '["a", "json", "list"]',
        "[1, 2, 3]",
        "Begin\nthe report\nEnd",
    ],
)
def test_text_that_is_not_a_dialogue_is_not_read_as_one(text: str) -> None:
    assert dialogue(text) is None
    assert speaker_turns(text, "user", 3) is None
