"""Answers a newcomer gets from the example knowledge base's kind of memory: a reason given
by "because of" is its noun phrase to its clause's end; "how much" asks for money, not
another number of the sentence. Synthetic turns through the real functions (the example
knowledge base itself: tests/agent/test_agent.py)."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer


def test_a_reason_given_by_because_of_is_its_noun_phrase_whole() -> None:
    item = turns_item(
        "s1",
        "2026-02-16T09:00:00",
        (
            "Assistant",
            "The data store decision was reversed in favour of PostgreSQL, because of the "
            "missing uniqueness guard behind the 3 February incident, and reporting.",
        ),
    )
    got = direct_answer("Why was the data store decision reversed?", [item])
    assert got.line == "the missing uniqueness guard behind the 3 February incident", got.line


def test_how_much_asks_for_the_amount_of_money_said() -> None:
    item = turns_item(
        "s1",
        "2026-02-23T09:00:00",
        ("Priya", "Three days in April, budget of about 6,000 pounds all in for seven people."),
    )
    assert direct_answer("How much is the offsite budget?", [item]).line.startswith("6,000 pounds")
