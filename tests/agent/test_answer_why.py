"""Single-hop answers that are feelings and means: the complement of "feel" (or of "makes
me"), what a feeling's subject is, what helps someone do the verb asked, and a "by" clause
kept whole. Synthetic sentences through the real functions."""

from __future__ import annotations

import pytest
from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.how import ASKS_FEELING, enabler, felt, manner
from kbmem.research.why import purpose_of, reason_given


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("They make me feel calm and strong.", "calm and strong"),
        ("Sailing makes me so happy, and I get to share it.", "happy"),
        ("I felt like I was flying when we left the harbour!", "like I was flying"),
        ("I was feeling really proud of the crew.", "proud of the crew"),
        # "feel" with a clause of its own says a thought, no feeling.
        ("I feel we should sail at dawn.", ""),
        ("We sailed at dawn.", ""),
    ],
)
def test_a_feeling_is_the_complement_of_feel(text: str, expected: str) -> None:
    assert felt(text) == expected


def test_asked_what_something_makes_someone_the_feeling_answers() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Tomas", "Let's make the regatta great and bring some sailing spirit to the town."),
        ("Tomas", "Sailing makes me so happy, and now I get to teach it."),
    )
    line = direct_answer("What does Tomas's sailing make him?", [item]).line
    assert line.split(" (")[0] == "happy"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Sailing helps me unwind.", "by sailing"),
        ("And long walks on the beach help me to unwind.", "long walks on the beach"),
        # What helps is said before a pronoun, and another verb is no means of the asked.
        ("It helps me unwind.", ""),
        ("That's what helps me unwind.", ""),
        ("Sailing helps me sleep.", ""),
    ],
)
def test_what_helps_someone_do_the_verb_asked_is_the_means(text: str, expected: str) -> None:
    assert enabler(text, {"unwind"}) == expected


def test_a_means_is_a_clause_as_long_as_a_reason() -> None:
    assert manner("I stay calm by reminding myself of my training and my crew.", {"calm"}) == (
        "by reminding myself of my training and my crew"
    )


def test_how_someone_does_a_thing_is_what_helps_them_do_it() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Tomas", "It's great we both love the sea, it's like having a crew."),
        ("Tomas", "Sailing helps me unwind."),
    )
    line = direct_answer("How do Tomas and Ilse like to unwind?", [item]).line
    assert line.split(" (")[0] == "by sailing"


def test_a_feeling_said_without_feel_is_what_its_subject_is() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Tomas", "Especially after the storm, I've thought a lot about the crew."),
        ("Tomas", "They mean the world to me and I'm so thankful to have them."),
    )
    line = direct_answer("How did Tomas feel after the storm?", [item]).line
    assert line.split(" (")[0] == "thankful"


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("How did Tomas feel after the storm?", True),
        ("What does Tomas's sailing make him?", True),
        # "feel" before a clause of its own asks a thought: what he could do.
        ("What does Tomas feel he could do at sea?", False),
    ],
)
def test_which_questions_ask_a_feeling(question: str, asks: bool) -> None:
    assert bool(ASKS_FEELING.search(question)) is asks


@pytest.mark.parametrize(
    ("question", "text", "by_asked", "expected"),
    [
        # The purpose is said by "to" and a verb after the deed's verb and its object.
        (
            "Why did Ilse's crew paint the boat?",
            "They painted it to show our thanks to the harbour.",
            True,
            "to show our thanks to the harbour",
        ),
        # A verb of will or aspect leads to the deed's verb.
        (
            "Why did Ilse start sketching the boats?",
            "I sketched them to remember the summer.",
            True,
            "to remember the summer",
        ),
        # "To" right after the verb opens its complement, the deed itself.
        ("Why did Ilse decide to sail?", "I decided to sail again.", True, ""),
        # "To" before a determiner or a pronoun is a preposition: where, not why.
        ("Why did Ilse give the boat away?", "I gave it to my cousin.", True, ""),
        # After a determiner the word is a noun.
        ("Why did Ilse sign the card?", "It's a sign to all of us.", True, ""),
        # The listener's deed is not the asked speaker's, nor the speaker's another's.
        ("Why did Ilse use the colours?", "I love how you use them to tell stories.", True, ""),
        ("Why did Ilse use the colours?", "I use them to tell stories.", False, ""),
        (
            "Why did Ilse use the colours?",
            "You use them to tell stories.",
            False,
            "to tell stories",
        ),
    ],
)
def test_a_purpose_is_the_infinitive_after_the_deeds_verb(
    question: str, text: str, by_asked: bool, expected: str
) -> None:
    assert purpose_of(question, text, by_asked) == expected


def test_asked_why_a_deed_was_done_its_purpose_answers() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Tomas", "Look at this flag from my crew, it's a sign of our bond."),
        ("Tomas", "They signed it to show our friendship and respect."),
    )
    line = direct_answer("Why did Tomas's crew sign the flag they gave him?", [item]).line
    assert line.split(" (")[0] == "to show our friendship and respect"


def test_a_causer_said_in_a_pseudo_cleft_is_what_comes_before_is_what() -> None:
    assert reason_given("Her brave, selfless attitude is what inspired me.") == (
        "Her brave, selfless attitude"
    )
