"""Where the fallback phrase of a "what" answer starts and ends, by the grammar of the
question's form: a thing asked is a noun phrase, so a verb before its object is no part
of it. Synthetic sentences through the real functions."""

from __future__ import annotations

import pytest

from kbmem.index.tenant import analyze
from kbmem.research.spans import (
    _noun_phrase_end,
    _object_end,
    _verb_start,
    is_novel,
    novel_phrase,
)
from kbmem.research.what import asks_noun_phrase


def _phrase(text: str, question: str) -> str:
    return novel_phrase(
        text,
        set(analyze(question)),
        {"ilse", "toma"},
        constituent=True,
        noun_asked=asks_noun_phrase(question),
    )


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What did Ilse look into?", True),
        ("What book is Ilse reading?", True),
        ("What do Ilse and Toma like?", True),
        ("What did Ilse do at the fair?", False),
        ("What is Ilse doing this spring?", False),
        ("What does Toma like to do?", False),
        ("Why did Ilse move?", False),
    ],
)
def test_which_questions_ask_for_a_noun_phrase(question: str, expected: bool) -> None:
    assert asks_noun_phrase(question) is expected


def test_a_verb_before_the_thing_asked_is_no_part_of_it() -> None:
    text = "Then I compared the harbour ferry timetables."
    assert _phrase(text, "What did Ilse look into?") == "harbour ferry timetables"


def test_an_activity_asked_keeps_its_verb() -> None:
    text = "Then I compared the harbour ferry timetables."
    assert _phrase(text, "What did Ilse do at the library?").startswith("compared")


def test_an_infinitive_keeps_its_verb() -> None:
    text = "Took a short trip to Bergen to clear my head a little."
    assert _phrase(text, "What did Toma go to Bergen for?") == "clear my head"


def test_a_noun_phrase_cut_by_the_window_runs_on_to_its_head() -> None:
    text = "I was out walking in my town when I came across this cool stone wall for the fair."
    question = "What did Ilse find in her town during her walk?"
    assert _phrase(text, question).endswith("cool stone wall")


def _marked(text: str) -> tuple[list[str], list[bool]]:
    tokens = text.split()
    return tokens, [is_novel(t, set(), set()) for t in tokens]


def test_a_noun_phrase_closed_by_a_preposition_does_not_run_on() -> None:
    tokens, marks = _marked("the bench by harbour stones")
    assert _noun_phrase_end(tokens, marks, 0, 3) == 3


def test_a_noun_phrase_runs_on_only_to_a_word_that_ends_it() -> None:
    tokens, marks = _marked("a harbour seal pup sleeping calmly everywhere")
    assert _noun_phrase_end(tokens, marks, 0, 2) == 2


def test_a_verb_cut_before_its_object_takes_it() -> None:
    tokens, marks = _marked("caring for goats and feeding their young kids at dawn")
    b = tokens.index("feeding")
    assert _object_end(tokens, marks, 0, b) == tokens.index("kids")


def test_a_degree_after_a_noun_is_no_object() -> None:
    tokens, marks = _marked("rest my legs a little")
    assert _object_end(tokens, marks, 0, tokens.index("legs")) == tokens.index("legs")


def test_an_activity_asked_starts_at_the_verb_of_its_object() -> None:
    tokens = "Last week I helped repaint a crumbling harbour shed .".split()
    assert _verb_start(tokens, tokens.index("crumbling")) == tokens.index("repaint")
    tokens = "My aunt and I made some soup together .".split()
    assert _verb_start(tokens, tokens.index("soup")) == tokens.index("made")


def test_be_and_a_preposition_are_no_activity() -> None:
    tokens = "It was a harbour festival with the local choir .".split()
    assert _verb_start(tokens, tokens.index("harbour")) == tokens.index("harbour")
    assert _verb_start(tokens, tokens.index("local")) == tokens.index("local")
