"""A phrase cut after a verb keeps the second noun phrase its "and" joins (a determiner or
a possessive opens it), and leaves a clause after "and" out. Synthetic sentences through the
real functions."""

from __future__ import annotations

import pytest

from kbmem.research.what import passive_agent

QUESTION = "What inspired Ilse's new play?"
ASKED = {"inspir", "ilse", "new", "play"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "and my …" opens a second agent of the same "by"; its "of" phrase belongs to it.
        (
            "It was inspired by old letters and my own trip of discovery.",
            "old letters and my own trip of discovery",
        ),
        (
            "It was inspired by old letters and the sea.",
            "old letters and the sea",
        ),
        # A verb after the conjunct's noun makes it a clause, no second agent.
        ("It was inspired by old letters and my aunt loved them.", "old letters"),
        ("It was inspired by old letters and the cast was thrilled.", "old letters"),
    ],
)
def test_a_noun_phrase_after_and_is_a_second_item(text: str, expected: str) -> None:
    assert passive_agent(QUESTION, text, ASKED) == expected
