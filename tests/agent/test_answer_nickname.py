"""Asked what nickname one person uses for another, the name the first calls the second by
when speaking to them, cut short from the second's name; not what a third person calls
them, nor the full name. Synthetic turns, the real functions."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer

QUESTION = "What nickname does Tomas use for Isabella?"


def test_the_short_name_the_asker_addresses_them_by() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Isabella", "I finished the cute notes for the class, Tomas!"),
        ("Tomas", "Sounds great, Isa! Did you take any photos?"),
        ("Isabella", "A few, I'll send them."),
        ("Tomas", "Thanks, Isabella."),
    )
    assert direct_answer(QUESTION, [item]).line.split()[0] == "Isa"


def test_not_what_someone_else_calls_them() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Marta", "Sounds great, Isa!"),
        ("Tomas", "I wrote cute notes for the class."),
    )
    assert not direct_answer(QUESTION, [item]).line.startswith("Isa")
