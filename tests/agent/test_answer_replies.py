"""A reply to a question the listener asked in the chat answers what that question asks
(kbmem.research.ranking): the listener says the asked thing in another form of its word, or
by a pronoun standing for what the replier told just before; synthetic turns through the
real ranking and direct answer."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.ranking import Ranking, same_word
from kbmem.research.said import read_sentences


def test_a_word_and_its_derived_forms_are_one_word() -> None:
    assert same_word("react", "reaction")  # the stemmer leaves "reaction" whole
    assert same_word("focu", "focus")  # "focus" and "focusing", as the stemmer cuts them
    assert not same_word("pass", "passion")  # a short stem is no word's root
    assert not same_word("plan", "plant")


def test_a_reply_answers_the_question_asked_in_another_form_of_its_word() -> None:
    # The listener asks what Ilse has been "focusing" on; memory is asked her "focus".
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Ilse", "Writing my harbour blog about the old ships has been eye-opening."),
        ("Tomas", "What have you been focusing on lately?"),
        ("Ilse", "Recently, sail repair and rope making."),
    )
    question = "What was the focus of Ilse's recent research and writing on her blog?"
    ranking = Ranking(question, read_sentences([item]))
    assert ranking.best().text.startswith("Recently"), [
        (round(sc, 3), s.text) for sc, _sh, s in ranking.ranked
    ]
    assert "sail repair" in direct_answer(question, [item]).line
