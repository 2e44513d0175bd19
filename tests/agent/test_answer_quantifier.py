"""A "what" answer is a noun phrase without a leading quantifying determiner ("another",
"a few"): that says how many, not what. Synthetic lines through the real function."""

from __future__ import annotations

import pytest

from kbmem.research.direct import quantifier_dropped


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Another movie script", "movie script"),
        ("a few bits", "bits"),
        ("few sketches", "sketches"),
        ("another", "another"),
        ("another's coat", "another's coat"),
        ("a fewer kinds", "a fewer kinds"),
    ],
)
def test_a_leading_quantifier_is_dropped(line: str, expected: str) -> None:
    assert quantifier_dropped(line) == expected


def test_what_is_the_number_of_asks_a_number() -> None:
    # "the highest number of points" is an amount, as "the budget" is.
    from kbmem.research.answer_types import question_kind

    assert question_kind("What was the highest number of points Priya scored in a game?") == (
        "number"
    )
    assert question_kind("What is the number of guests invited?") == "number"
