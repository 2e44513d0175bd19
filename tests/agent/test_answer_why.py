"""Single-hop answers that are feelings and means: the complement of "feel" (or of "makes
me"), what a feeling's subject is, what helps someone do the verb asked, and a "by" clause
kept whole. Synthetic sentences through the real functions."""

from __future__ import annotations

import pytest
from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.what import ASKS_FEELING, enabler, felt, manner


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
