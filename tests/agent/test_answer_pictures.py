"""A "what" answered by what a shared picture shows (kbmem.research.shown): only when the
caption shows the very thing asked (its head is the asked noun, the question's verb points
at it, or its sentence presents it), cut to the answer; never when it only shares a word
with the question or the speaker's words name the thing. Synthetic turns through the real
functions."""

from __future__ import annotations

import pytest
from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.shown import pointed, scene_head, split_caption
from kbmem.research.spans import stem_set

STAMP = "2024-07-02T09:00:00"


def _line(question: str, *turns: tuple[str, str]) -> str:
    return direct_answer(question, [turns_item("s1", STAMP, *turns)]).line.split(" (")[0]


def test_a_caption_is_split_from_its_words_without_its_frame() -> None:
    text = "I made one too! [shares an image: a photography of a kite shaped like a fish]"
    assert split_caption(text) == ("I made one too!", "a kite shaped like a fish")
    assert split_caption("No picture here.") == ("No picture here.", "")


@pytest.mark.parametrize(
    ("scene", "head"),
    [
        ("a kite shaped like a fish", "kite"),
        ("a group of children flying kites on a beach", "children"),
        ("a banner tied to a fence saying welcome home", "banner"),
        ("a large wooden boat in a harbour", "boat"),
        ("a painting of a lighthouse at night", "painting"),
        ("a man sitting on a bench", "man"),
    ],
)
def test_the_scene_head_is_the_last_word_of_its_first_noun_phrase(scene: str, head: str) -> None:
    words, at = scene_head(scene)
    assert words[at] == head


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("We built this!", True),
        ("I built it to remember the summer.", True),
        ("It was built for the harbour festival.", True),
        # A determiner of a noun named, and "it" of arriving, point at no picture.
        ("I built this raft with my dad.", False),
        ("We made it to the top!", False),
    ],
)
def test_the_asked_verb_with_a_pointer_for_object(words: str, expected: bool) -> None:
    verb = stem_set("build") if "buil" in words else stem_set("make")
    assert pointed(words, verb) is expected


def test_what_was_made_is_the_picture_its_verb_points_at() -> None:
    line = _line(
        "What did Tomas build for the harbour festival?",
        ("Tomas", "It was built for the harbour festival and took all spring."),
        (
            "Tomas",
            "I built it to remember my grandfather's boat.\n"
            "[shares an image: a photo of a wooden model boat with red sails on a shelf]",
        ),
    )
    assert line == "a wooden model boat with red sails on a shelf"


def test_a_picture_of_the_asked_noun_answers_what_kind() -> None:
    line = _line(
        "What kind of kite did Ilse fly at the beach?",
        ("Ilse", "The beach was windy, perfect for flying."),
        ("Ilse", "The kids loved it.\n[shares an image: a photo of a kite shaped like a fish]"),
    )
    assert line == "kite shaped like a fish"


def test_the_speakers_own_words_that_name_the_kind_answer_not_the_picture() -> None:
    line = _line(
        "What kind of kite did Ilse fly at the beach?",
        ("Ilse", "We flew my old box kite at the beach."),
        ("Ilse", "The kids loved it.\n[shares an image: a photo of a kite shaped like a fish]"),
    )
    assert line == "old box kite"


def test_a_title_the_speaker_gives_answers_not_the_picture_of_its_noun() -> None:
    line = _line(
        "What book is Tomas reading?",
        ("Tomas", "I'm reading \"Salt and Sails\" at the moment, it's gripping."),
        ("Tomas", "Look!\n[shares an image: a photo of a book with a blue cover]"),
    )
    assert line == "Salt and Sails"


def test_a_picture_that_only_shares_a_word_with_the_question_answers_nothing() -> None:
    # "beach" is the question's word and the scene's, but the picture shows no kite asked.
    line = _line(
        "What kind of kite did Ilse fly at the beach?",
        ("Ilse", "We flew my old box kite on Sunday."),
        ("Ilse", "The beach was lovely.\n[shares an image: a photo of a beach with a kite]"),
    )
    assert line == "old box kite"


def test_a_named_object_is_told_in_full_by_its_picture() -> None:
    line = _line(
        "What did Ilse make for her mother's birthday?",
        ("Ilse", "I wanted her birthday to feel like the summers we had by the sea."),
        (
            "Ilse",
            "I made a quilt!\n[shares an image: a photo of a quilt with blue and white waves]",
        ),
    )
    assert line == "quilt with blue and white waves"


def test_a_presented_picture_shows_what_the_asked_verb_made() -> None:
    line = _line(
        "What did Ilse and her kids draw in their latest project?",
        ("Ilse", "We love drawing together lately."),
        (
            "Ilse",
            "Here's our latest work.\n"
            "[shares an image: a photo of a drawing of a lighthouse by the sea]",
        ),
    )
    assert line == "a lighthouse by the sea"


def test_what_a_thing_says_is_the_writing_its_picture_shows() -> None:
    line = _line(
        "What did the banners at the rally say?",
        ("Ilse", "It was a coastal rally where fishermen shared their stories through songs."),
        (
            "Ilse",
            "It was extra special because the rally was a safe place to speak up.\n"
            "[shares an image: a photo of a banner that says protect our coast]",
        ),
    )
    assert line == "protect our coast"


def test_what_a_noun_asked_of_is_follows_it_in_the_picture() -> None:
    line = _line(
        "What did Tomas receive a medal for?",
        ("Ilse", "Congrats on finishing the lifeguard course, Tomas!"),
        (
            "Tomas",
            "Since we last spoke, it's been quite a month!\n"
            "[shares an image: a photo of a medal of completion of a lifeguard course]",
        ),
    )
    assert line == "completion of a lifeguard course"


@pytest.mark.parametrize(
    "question",
    [
        "What did Priya share a photo of when talking about her weekend?",
        "What did Priya take a picture of near the harbour last summer?",
        "What did Priya share a photo of?",
    ],
)
def test_asked_what_a_photo_is_of_the_picture_shown_answers(question: str) -> None:
    # The wh-word is the object of the picture's "of": what the picture shows is the answer,
    # not the words said beside it.
    line = _line(
        question,
        (
            "Priya",
            "Reading or baking bread helps me relax at the weekend near the harbour. "
            "[shares an image: a photo of a shelf filled with old records]",
        ),
        ("Tom", "Lovely, enjoy it!"),
    )
    assert line.removeprefix("a ") == "shelf filled with old records"


def test_a_photo_of_a_named_thing_is_not_asked_as_the_picture() -> None:
    # "a photo of the cake" names what it is of: the question asks something else of it.
    line = _line(
        "What did Priya share a photo of the cake for?",
        (
            "Priya",
            "I baked this cake for my sister's birthday. "
            "[shares an image: a photo of a chocolate cake on a plate]",
        ),
    )
    assert line != "a chocolate cake on a plate"
