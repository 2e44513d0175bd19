"""Asked "who", evidence naming no one (no name, no relation, no speaker saying it in the
first person) answers "Memory does not say.", not the words that follow the question's
(which name no one). Synthetic turns through the real functions."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.direct import NOTHING, direct_answer


def test_who_with_no_one_named_is_not_said() -> None:
    items = [
        turns_item(
            "s1",
            "2024-05-04T19:00:00",
            ("Marta", "Any news from the office?"),
            ("Ilse", "The boiler at the harbour office works again - what a relief for everyone."),
        )
    ]
    answer = direct_answer("Who fixed the boiler at the harbour office?", items)
    assert answer.line == NOTHING
    assert not answer.firm


def test_who_with_someone_named_still_answers() -> None:
    items = [
        turns_item(
            "s1",
            "2024-05-04T19:00:00",
            ("Marta", "Any news from the office?"),
            ("Ilse", "Tomas Berg fixed the boiler at the harbour office this morning."),
        )
    ]
    line = direct_answer("Who fixed the boiler at the harbour office?", items).line
    assert line.startswith("Tomas Berg")
