"""Who does what a question asks, said in the first person ("I own the sync service"), is
the speaker, not a name said further on; asked "which N was X?", a name the best sentence
says is X answers without the noun N. On synthetic turns through the real functions."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer

OWN = "I own the sync service, and for the next two weeks the Postgres migration."


def test_who_does_the_verb_asked_in_the_first_person_is_the_speaker() -> None:
    item = turns_item("s1", "2026-03-02T09:00:00", ("Tobias Ferrante", OWN))
    assert direct_answer("Who owns the sync service?", [item]).line == "Tobias Ferrante"


def test_who_is_the_object_asked_is_no_speaker() -> None:
    # "Who did Tobias meet?" asks whom he met: the name, not the one saying "I".
    item = turns_item(
        "s1", "2026-03-02T09:00:00", ("Tobias Ferrante", "I met Ines Kovacic at the harbour.")
    )
    assert direct_answer("Who did Tobias meet at the harbour?", [item]).line.startswith(
        "Ines Kovacic"
    )


def test_which_one_is_the_name_said_to_be_what_the_question_says() -> None:
    items = [
        turns_item(
            "s1",
            "2026-01-05T09:00:00",
            ("Priya", "We closed it: Skerrick Island Ferries will be our first pilot customer."),
        ),
        turns_item(
            "s2", "2026-03-20T09:00:00", ("Dara", "Inverlochy Boat Company signed a letter.")
        ),
    ]
    got = direct_answer("Which company was signed as the first pilot customer?", items)
    assert got.line == "Skerrick Island Ferries"


def test_who_is_a_named_person_is_what_memory_says_they_are() -> None:
    def asked(*turns: tuple[str, str]) -> str:
        item = turns_item("s1", "2026-03-02T09:00:00", *turns)
        return direct_answer("Who is Femi Adeyemi?", [item]).line

    # The role taken, the phrase set beside the name, whose relation they are.
    role = ("Maya", "Everyone, this is Femi Adeyemi, who joins us today as a senior engineer.")
    assert asked(role) == "a senior engineer"
    beside = ("Assistant", "Hire: Femi Adeyemi, senior backend engineer, accepted on Friday.")
    assert asked(beside) == "senior backend engineer"
    assert asked(("Dara Whitcombe", "I'm visiting my cousin Femi Adeyemi.")) == (
        "Dara Whitcombe's cousin"
    )
    # Not another person named with them, nor a request made of them by name.
    other = asked(("Maya", "Femi, can you pair with Tobias Ferrante on FL-212 today?"))
    assert "Tobias" not in other and not other.startswith("can you"), other


def test_what_things_are_called_asks_their_names() -> None:
    item = turns_item(
        "s1",
        "2026-01-05T09:00:00",
        ("Maya", "Three apps: Ferrylog Cloud, the API; Deckhand, the crew app; and Harbourmaster."),
    )
    line = direct_answer("What are the three apps called?", [item]).line
    assert line.startswith("Ferrylog Cloud, Deckhand"), line
    assert "Harbourmaster" in line, line
