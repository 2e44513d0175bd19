""" "How …" answers: a stretch of time kept whole (a range, without "ago"), and the state a
linking verb says of the thing asked to be described. Synthetic sentences through the real
functions."""

from __future__ import annotations

import pytest
from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.how import described_head, manner, regard, stirred
from kbmem.research.what import effect_on


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        # "How long" asks the stretch: "ago" only places it before now.
        ("I started sailing five years ago and it's been great.", "five years"),
        # A range is the whole range, not its upper bound.
        ("I usually sail for 30-60 minutes before work.", "30-60 minutes"),
        ("I usually sail two or three hours before work.", "two or three hours"),
        ("I have been sailing for 4 years now.", "4 years"),
    ],
)
def test_how_long_is_the_stretch_said(said: str, expected: str) -> None:
    item = turns_item("s1", "2024-07-02T09:00:00", ("Tomas", said))
    line = direct_answer("How long has Tomas been sailing?", [item]).line
    assert line.split(" (")[0] == expected


@pytest.mark.parametrize(
    ("question", "head"),
    [
        ("How did Tomas describe the team bond?", "bond"),
        ("How does Ilse describe the camping trip with Max?", "trip"),
        ("How does Ilse describe the boat he built?", "boat"),
        ("How does Ilse describe the boat Tomas built?", "boat"),
        ("How is Ilse's store doing?", "store"),
        ("How was the regatta?", "regatta"),
        ("How is Ilse?", ""),
        ("How did Tomas feel?", ""),
    ],
)
def test_the_thing_asked_to_be_described_is_the_head_noun(question: str, head: str) -> None:
    assert described_head(question) == head


def test_a_thing_described_is_what_a_linking_verb_says_of_it() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Tomas", "Our team has seen the most growth in communication and bonding."),
        ("Tomas", "Our team bond is awesome and it makes all the hard work worth it."),
    )
    line = direct_answer("How did Tomas describe the team bond?", [item]).line
    assert line.split(" (")[0] == "awesome"


def test_the_state_is_said_in_the_nouns_own_clause() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Ilse", "The boat is on the trailer, but I'm staying positive."),
        ("Ilse", "Ilse's boat looks amazing."),
    )
    line = direct_answer("How does Ilse describe the boat?", [item]).line
    assert line.split(" (")[0] == "amazing"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Their words touched me; they said my story helped.", "touched"),
        ("Honestly, the ending moved me so much.", "moved"),
        # A move, no feeling: the object does not end the clause.
        ("The company moved us to a new town.", ""),
        ("We sailed at dawn.", ""),
    ],
)
def test_what_something_stirred_in_the_speaker_is_a_feeling(text: str, expected: str) -> None:
    assert stirred(text) == expected


def test_asked_how_someone_felt_a_feeling_stirred_answers() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Ilse", "Last week, someone wrote me a letter after reading my post about a hard moment."),
        ("Ilse", "Their words touched me; they said my story had brought them comfort."),
    )
    line = direct_answer("How did Ilse feel when someone wrote her a letter?", [item]).line
    assert line.split(" (")[0] == "touched"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I really respect you for that!", "respect you for that"),
        ("We admire her for sailing alone, honestly.", "admire her for sailing alone"),
        ("I respect the rules of the race.", ""),
    ],
)
def test_the_regard_the_speaker_holds_someone_in_is_a_feeling(text: str, expected: str) -> None:
    assert regard(text) == expected


def test_asked_how_someone_feels_about_another_their_regard_answers() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Tomas", "I really respect you for being able to bounce back whenever a race goes badly!"),
        ("Tomas", "It can feel like a step back sometimes."),
    )
    line = direct_answer("How does Tomas feel about Ilse's ability to bounce back?", [item]).line
    assert line.startswith("respect you for being able"), line


def test_asked_how_something_affected_someone_what_it_made_them_do_answers() -> None:
    question = "How did the voyage impact Tomas's view of the sea?"
    said = "It made me think again about sailing alone, and I loved it."
    assert effect_on(question, said) == "made me think again about sailing alone"
    assert effect_on("What did Tomas think of the voyage?", said) == ""
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Tomas", "I recently finished the voyage - it was really inspiring."),
        ("Tomas", "It made me think again about sailing alone and finding my own sea."),
    )
    line = direct_answer(question, [item]).line
    assert line.split(" (")[0].startswith("made me think again about sailing alone"), line


def test_a_state_ends_at_a_dash_that_parts_clauses() -> None:
    said = "I watched a classic film that was awesome - the story was so gripping!"
    assert manner(said, {"classic", "film"}) == "awesome"
