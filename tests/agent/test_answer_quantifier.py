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
