"""The constituent the question's form asks for: the subject equated with the speaker's
own, the clause that says what happened or what was realised, advice in the imperative,
what was given, and a noun phrase with the short phrase that completes it. Synthetic
sentences through the real functions."""

from __future__ import annotations

import pytest
from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.what import (
    advice,
    happened_to,
    owned_subject,
    received,
    that_clause,
    with_complement,
)


def test_a_subject_equated_with_the_speakers_own_answers_what_is_their_noun() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "I listen to all sorts of records, but jazz is my top pick."),
        )
    ]
    line = direct_answer("What is Ilse's favorite style of music?", items).line
    assert line.split(" (")[0] == "jazz"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I listen to all sorts, but jazz is my top pick.", "jazz"),
        ("Salsa is our thing.", "Salsa"),
        # A pronoun or a pointer says nothing of what it is.
        ("It is my favorite.", ""),
        ("This is my go-to spot.", ""),
    ],
)
def test_owned_subject(text: str, expected: str) -> None:
    assert owned_subject(text, set()) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The noun is the subject: what it did or underwent.
        (
            "We were all scared when my bike got stolen outside the gym.",
            "got stolen outside the gym",
        ),
        # The noun said elsewhere in its clause: the whole clause.
        (
            "Sadly, I sold my bike to a neighbour last week.",
            "I sold my bike to a neighbour last week",
        ),
        ("I went for a run.", ""),
    ],
)
def test_what_happened_to_a_noun_is_the_clause_that_says_it(text: str, expected: str) -> None:
    assert happened_to("What happened to Ilse's bike last month?", text) == expected


def test_what_happened_is_answered_by_its_clause_through_the_answer() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "We were all scared when my bike got stolen outside the gym."),
        )
    ]
    line = direct_answer("What happened to Ilse's bike?", items).line
    assert line.split(" (")[0] == "got stolen outside the gym"


def test_how_a_noun_was_affected_is_the_clause_that_says_it() -> None:
    question = "How did the storm affect the boats in the harbour?"
    text = "The wind was strong, so most of the boats were wrecked."
    assert happened_to(question, text) == "most of the boats were wrecked"


@pytest.mark.parametrize(
    ("question", "text", "expected"),
    [
        (
            "What award did Ilse receive at the fair?",
            "I judged at the fair and they gave me a silver ribbon!",
            "silver ribbon",
        ),
        ("What did Ilse win at the fair?", "The judges handed us a big trophy.", "big trophy"),
        # Another verb asked: the giving is no answer.
        ("What did Ilse bake at the fair?", "They gave me a silver ribbon.", ""),
    ],
)
def test_what_was_received_is_what_was_given(question: str, text: str, expected: str) -> None:
    assert received(question, text, set()) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm starting to realize that rest is really important.", "rest is really important"),
        ("It made me realize that we need a bigger boat - seriously.", "we need a bigger boat"),
        # "that" as a determiner opens a noun phrase, no clause.
        ("I realized that book you lent me was a first edition.", ""),
    ],
)
def test_a_verb_of_realising_takes_its_that_clause(text: str, expected: str) -> None:
    assert that_clause("What did Ilse realize after the race?", text) == expected


def test_the_asked_verbs_clause_is_found_past_the_best_sentence() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "I ran a charity race for the harbour trust last Saturday."),
            ("Tomas", "That sounds rewarding, Ilse!"),
            ("Ilse", "Thanks! I'm starting to realize that rest is really important."),
        )
    ]
    line = direct_answer("What did Ilse realize after the charity race?", items).line
    assert line.split(" (")[0] == "rest is really important"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Take your time and ask the crew first.", "Take your time and ask the crew first"),
        ("Just keep it simple!", "Just keep it simple"),
        # A statement, with its subject, is no advice given.
        ("I took my time and asked the crew.", ""),
        ("The crew is great.", ""),
    ],
)
def test_advice_is_said_in_the_imperative(text: str, expected: str) -> None:
    assert advice("What advice does Ilse give for sailing?", text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I'm keen on building a quiet, sheltered harbour for small boats to rest.",
            "quiet, sheltered harbour for small boats to rest",
        ),
        # A long phrase after it, or one with a clause of its own, is another phrase.
        (
            "I'm keen on building a quiet, sheltered harbour for the many old wooden fishing"
            " boats.",
            "quiet, sheltered harbour",
        ),
        (
            "I'm keen on building a quiet, sheltered harbour for when we retire.",
            "quiet, sheltered harbour",
        ),
    ],
)
def test_a_noun_keeps_the_short_phrase_that_completes_it(text: str, expected: str) -> None:
    assert with_complement(text, "quiet, sheltered harbour") == expected
