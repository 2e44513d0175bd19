"""The listener called by name ("It was so inspiring, Mel!") is spoken to, not spoken of:
asked who did something, the sentence's vocative is never the answer. Synthetic turns
through the real functions."""

from __future__ import annotations

import pytest
from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.who import addressed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("It was so inspiring, Mel!", {"Mel"}),
        ("Jon, that looks great.", {"Jon"}),
        ("Hey Mel, how are you?", {"Mel"}),
        ("Thanks, Caroline!", {"Caroline"}),
        # Named inside the sentence, or after an interjection alone: no one is called.
        ("I met Rob at the gym.", set()),
        ("Yes, Rob came too.", set()),
        ("Sure, I will.", set()),
    ],
)
def test_addressed(text: str, expected: set[str]) -> None:
    assert addressed(text) == expected


def _gala(line: str) -> str:
    items = [
        turns_item(
            "s1",
            "2024-05-04T19:00:00",
            ("Marta", "How was the spring gala at the harbour?"),
            ("Ilse", line),
        )
    ]
    return direct_answer("Who performed at the spring gala at the harbour?", items).line


def test_the_listener_called_by_name_does_not_answer_who_performed() -> None:
    assert "Marta" not in _gala("The spring gala at the harbour was so inspiring, Marta!")


def test_a_name_told_of_beside_the_vocative_answers() -> None:
    line = _gala("Tomas Berg performed at the spring gala at the harbour, Marta!")
    assert line.startswith("Tomas Berg")
