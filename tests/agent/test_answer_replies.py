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


def test_a_reply_whose_pronoun_the_question_names_answers_it() -> None:
    # "How did they react?" — "They were thrilled": both "they" are Ilse's nieces, whom
    # Ilse named in the turn before the question, as the question asked of memory does.
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Ilse", "Last week we had a wonderful afternoon at the maritime museum."),
        ("Ilse", "It made a real impression on my nieces. [shares an image: two girls, a ship]"),
        ("Tomas", "That's so lovely! How did they react when they saw it?"),
        ("Ilse", "They were thrilled and wanted to sail at once."),
        ("Tomas", "Museums are great for kids, I remember the maritime museum from school."),
    )
    question = "How did Ilse describe her nieces' reaction at the maritime museum?"
    ranking = Ranking(question, read_sentences([item]))
    assert ranking.best().text.startswith("They were thrilled"), [
        (round(sc, 3), s.text) for sc, _sh, s in ranking.ranked
    ]
    assert "thrilled" in direct_answer(question, [item]).line


def test_a_pronoun_with_nothing_told_before_it_lends_no_words() -> None:
    # The reply points back, but the question it replies to names what it asks.
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Tomas", "Did the nieces like the maritime museum?"),
        ("Ilse", "They loved it."),
    )
    said = read_sentences([item])
    ranking = Ranking("How did Ilse's nieces like the maritime museum?", said)
    assert ranking.told_before == {}


def test_thanks_alone_answers_no_question_but_a_yes_or_no() -> None:
    # "Thanks, Tomas!" replies to the question and so takes its words; it says nothing.
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Tomas", "Your new puppy is so sweet! Do she and your old dog get along?"),
        ("Ilse", "Thanks, Tomas! Her name is Pepper, and they play all day."),
    )
    said = read_sentences([item])
    asked_what = Ranking("What is the name of Ilse's new puppy?", said)
    assert "Thanks, Tomas!" not in [s.text for _sc, _sh, s in asked_what.ranked]
    assert asked_what.best().text.startswith("Her name is Pepper")
    asked_whether = Ranking("Does Ilse's new puppy get along with her old dog?", said)
    assert "Thanks, Tomas!" in [s.text for _sc, _sh, s in asked_whether.ranked]
