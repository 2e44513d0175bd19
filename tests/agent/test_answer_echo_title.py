"""Two cuts of a "what" line: a lead that only repeats the question before a comma is
dropped (the appositive says what the thing is), and a sentence naming a title in quotes
is read for the title, not for the question it replies to. Synthetic sentences through the
real functions."""

from __future__ import annotations

import pytest
from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer, echo_lead_dropped

STAMP = "2024-07-02T09:00:00"


def _line(question: str, *turns: tuple[str, str]) -> str:
    return direct_answer(question, [turns_item("s1", STAMP, *turns)]).line.split(" (")[0]


@pytest.mark.parametrize(
    ("line", "question", "expected"),
    [
        (
            "my prized possession, a kite signed by my uncle",
            "What does Omar have that is his prized possession?",
            "a kite signed by my uncle",
        ),
        # The lead says something the question does not: kept.
        ("a red kite, a blue one", "What does Omar have?", "a red kite, a blue one"),
        # Nothing after the comma: kept.
        ("my prized possession, ", "What is his prized possession?", "my prized possession, "),
        ("a kite", "What does Omar have?", "a kite"),
    ],
)
def test_a_lead_echoing_the_question_is_dropped(line: str, question: str, expected: str) -> None:
    assert echo_lead_dropped(line, question) == expected


def test_a_reply_naming_a_title_in_quotes_is_read_for_the_title() -> None:
    line = _line(
        "What did Lena watch and recommend to Omar?",
        ("Omar", "Seen any good films lately? Any good ones you'd recommend?"),
        ("Lena", 'I just watched "Paper Moon" and it was amazing!'),
    )
    assert line == "Paper Moon"
