"""A place named with its article ("the UK", "the Netherlands") is a name, and a name ends
where its capitalised words end ("the UK last Friday": "last" is no part of it). Synthetic
sentences through the real functions."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.spans import PLACE


def test_a_name_ends_where_its_capitalised_words_end() -> None:
    text = "We flew to the Netherlands last Monday and to the Isle of Man later."
    assert [m.group(1) for m in PLACE.finditer(text)] == ["the Netherlands", "the Isle of Man"]


def test_a_place_named_with_its_article_answers_where() -> None:
    item = turns_item(
        "s1",
        "2026-03-12T10:00:00",
        ("Ilse", "I saw an old abbey on my trip to the Netherlands last Friday, it was grand!"),
    )
    line = direct_answer("Where was Ilse in the week before 12 March 2026?", [item]).line
    assert line.split(" (")[0] == "the Netherlands", line
