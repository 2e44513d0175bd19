""" "How …" answers: a stretch of time kept whole (a range, without "ago"), and the state a
linking verb says of the thing asked to be described. Synthetic sentences through the real
functions."""

from __future__ import annotations

import pytest
from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        # "How long" asks the stretch: "ago" only places it before now.
        ("I started sailing five years ago and it's been great.", "five years"),
        # A range is the whole range, not its upper bound.
        ("I usually sail for 30-60 minutes before work.", "30-60 minutes"),
        ("I usually sail two or three hours before work.", "two or three hours"),
        ("I have been sailing for 4 years now.", "4 years"),
    ],
)
def test_how_long_is_the_stretch_said(said: str, expected: str) -> None:
    item = turns_item("s1", "2024-07-02T09:00:00", ("Tomas", said))
    line = direct_answer("How long has Tomas been sailing?", [item]).line
    assert line.split(" (")[0] == expected
