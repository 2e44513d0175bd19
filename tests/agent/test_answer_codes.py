"""A code names the noun before it as a name does ("region eu-west-2", "room B12"), and a
name before the asked noun ("AWS region") says which, not what kind. Synthetic notes
through the real functions."""

from __future__ import annotations

import pytest
from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.phrases import named_by
from kbmem.research.what import compound_kind


@pytest.mark.parametrize(
    ("rest", "expected"),
    [
        (" eu-west-2.", "eu-west-2"),
        (" preference eu-west-2 (London).", "eu-west-2"),
        (" B12 on the left", "B12"),
        (" FL-212 is open", "FL-212"),
        # A number with its unit or ordinal, or a year, names nothing.
        (" at 3pm", ""),
        (" 2nd", ""),
        (" in 2023", ""),
        (" was 2 hours", ""),
    ],
)
def test_a_code_after_the_noun_names_it(rest: str, expected: str) -> None:
    assert named_by(rest, set()) == expected


def test_a_name_before_the_asked_noun_is_no_kind() -> None:
    assert compound_kind("What career path has Ilse chosen?") == "career"
    assert compound_kind("Which AWS region does Ferrylog run in?") == ""


def test_which_region_is_answered_by_the_code_the_note_gives() -> None:
    items = [
        turns_item(
            "kickoff",
            "2026-01-05T10:00:00",
            (
                "Priya",
                "Oskar brings AWS cost and on-call numbers to that review; region "
                "preference eu-west-2 (London).",
            ),
        )
    ]
    line = direct_answer("Which AWS region does Ferrylog run in?", items).line
    assert line.split(" (")[0] == "eu-west-2"
