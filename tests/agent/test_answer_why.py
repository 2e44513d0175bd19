"""Single-hop answers that a picture's caption, a reason or a feeling gives: the thing a
shared picture shows when its caption names what the question asks about. Synthetic
sentences through the real functions."""

from __future__ import annotations

import pytest
from helpers.evidence import turns_item

from kbmem.index.tenant import analyze
from kbmem.research.direct import direct_answer
from kbmem.research.extract import enabler, felt, manner, shown


@pytest.mark.parametrize(
    ("text", "asked", "expected"),
    [
        # The caption without its "a photo of": the thing shown.
        (
            "Here it is! [shares an image: a photo of a wooden kayak on a lake]",
            {"kayak", "build"},
            "a wooden kayak on a lake",
        ),
        # Asked what the thing is of or for, the caption's "of" after it says so.
        (
            "So proud! [shares an image: a photo of a diploma of completion of a sailing course]",
            {"diploma", "receiv"},
            "completion of a sailing course",
        ),
        (
            "Our latest. [shares an image: a photography of a sketch of a lighthouse at dusk]",
            {"sketch", "kid"},
            "a lighthouse at dusk",
        ),
        # A caption that names nothing the question asks shows something else.
        ("Look! [shares an image: a photo of a dog on a beach]", {"kayak"}, ""),
        # An -ing form after a noun says what someone shown does, no thing shown.
        (
            "Fun day! [shares an image: a photo of kids building sandcastles on a beach]",
            {"build"},
            "",
        ),
        ("No picture in this one.", {"kayak"}, ""),
    ],
)
def test_a_picture_s_caption_says_the_thing_shown(
    text: str, asked: set[str], expected: str
) -> None:
    assert shown(text, {term for word in asked for term in analyze(word)}) == expected


def test_a_thing_named_only_in_a_caption_answers_what() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Ilse", "Guess what I finished for the harbour festival last week!"),
        ("Ilse", "Took ages. [shares an image: a photo of a sketch of a lighthouse at dusk]"),
    )
    line = direct_answer("What did Ilse sketch for the harbour festival?", [item]).line
    assert line.split(" (")[0] == "a lighthouse at dusk"


def test_a_caption_gives_no_reason() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        (
            "Ilse",
            "Sketching the lighthouse calms me. [shares an image: a photo of a sketch of a "
            "lighthouse]",
        ),
    )
    line = direct_answer("Why does Ilse sketch the lighthouse?", [item]).line
    assert "lighthouse at" not in line


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
