"""Asked "who" (or "how long"), evidence naming no one (no name, no relation, no speaker in the
first person) answers "Memory does not say.", not the words that follow the question's
(which name no one). Synthetic turns through the real functions."""

from __future__ import annotations

import pytest
from helpers.evidence import turns_item

from kbmem.research.direct import NOTHING, direct_answer
from kbmem.research.spans import SINCE, people
from kbmem.research.types import DirectAnswer


def _answer(question: str, asked: str, reply: str) -> DirectAnswer:
    """The direct answer to ``question`` from Marta asking ``asked`` and Ilse's ``reply``."""
    items = [turns_item("s1", "2024-05-04T19:00:00", ("Marta", asked), ("Ilse", reply))]
    return direct_answer(question, items)


BOILER = "Who fixed the boiler at the harbour office?"


def test_who_with_no_one_named_is_not_said() -> None:
    answer = _answer(
        BOILER,
        "Any news from the office?",
        "The boiler at the harbour office works again - what a relief for everyone.",
    )
    assert answer.line == NOTHING
    assert not answer.firm


def test_who_with_someone_named_still_answers() -> None:
    answer = _answer(
        BOILER,
        "Any news from the office?",
        "Tomas Berg fixed the boiler at the harbour office this morning.",
    )
    assert answer.line.startswith("Tomas Berg")


@pytest.mark.parametrize(
    "reply",
    [
        "I am still working on the dance studio downtown, slowly but surely.",
        # "Since we last spoke" frames the news by the talk before: no start of the opening.
        "Since we last spoke, the dance studio has kept me busy every day.",
    ],
)
def test_how_long_with_no_time_said_is_not_said(reply: str) -> None:
    answer = _answer(
        "How long did it take Ilse to open the dance studio?", "How is the studio?", reply
    )
    assert answer.line == NOTHING


@pytest.mark.parametrize(
    ("text", "start"),
    [
        # "Since we last spoke" frames news by the talk before: no start of what was asked.
        ("Since we last spoke I am still working on it.", None),
        ("Since I moved here I have rowed every week.", "Since I moved here"),
        ("I have painted since 2016.", "since 2016"),
        ("We have lived here since March.", "since March"),
        # "since then" names no start: "then" is no name, though read without case it is.
        ("It has been quiet since then.", None),
    ],
)
def test_since_gives_a_start(text: str, start: str | None) -> None:
    found = SINCE.search(text)
    assert (found.group(0) if found else None) == start


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "I'm" is the speaker, and "Last Friday" a day: neither names anyone.
        ("Now I'm passionate about art.", []),
        ("Last Friday, I went to a workshop.", []),
        ("I'm glad Rob came along.", ["Rob"]),
        ("We flew to New York with Ilse.", ["New York", "Ilse"]),
    ],
)
def test_people_are_names_not_pronouns_or_days(text: str, expected: list[str]) -> None:
    assert people(text, set()) == expected
