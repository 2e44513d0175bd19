"""Questions that name a time but ask what, where or who: the time picks what was said
then, its words are asked of no sentence, and the kind asked is taken from what was said
in it."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.dates import time_words
from kbmem.research.direct import direct_answer
from kbmem.research.kin import kin
from kbmem.research.ranking import Weigher


def test_the_words_of_a_named_time_are_not_asked_of_memory() -> None:
    assert time_words("Who did Maria have dinner with on May 3, 2023?") == {"may", "3", "2023"}
    assert {"week", "before", "3"} <= time_words("What did John do the week before August 3?")
    assert {"two", "weeks", "before", "11"} <= time_words(
        "What is the name of the puppy she got two weeks before August 11, 2023?"
    )
    assert "evening" in time_words("What did she plan on the evening of 7 July, 2023?")
    # Words near no date stay asked.
    assert "week" not in time_words("What did she bake last week for the fair?")
    assert "between" not in time_words("What is between the two houses?")


def test_a_stretch_named_asks_no_sentence_for_its_words() -> None:
    item = turns_item(
        "s1",
        "2024-05-23T09:00:00",
        ("Tomas", "How did the interviews go?"),
        ("Ilse", "On Friday I got accepted for a fashion internship!"),
        ("Tomas", "Congrats, Ilse!"),
    )
    answer = direct_answer("What was Ilse accepted for in the week before May 23, 2024?", [item])
    # "the week before May 23" is the time, asked of no sentence: the sentence says enough
    # of the question for a firm answer.
    assert answer.line == "fashion internship", answer.line


def test_a_person_told_of_by_relation_is_written_as_a_reader_would() -> None:
    assert kin("My mom and I made some dinner together last night!", "Maria Lopez") == (
        "Maria's",
        "mother",
    )
    assert kin("We went with my best friends from school.", "") == ("my", "best friends")
    assert kin("My painting is done.", "Ilse") == ("", "")


def test_who_is_answered_by_the_relation_the_best_sentence_tells_of() -> None:
    item = turns_item(
        "s1",
        "2024-05-04T09:00:00",
        ("Tomas", "Hey Ilse, how was your week, Ilse?"),
        ("Ilse", "My mom and I made some dinner together last night!"),
        ("Tomas", "Looks delicious."),
        ("Ilse", "Wow, Tomas!"),
        ("Tomas", "Ilse, you should cook more, Ilse."),
        ("Tomas", "See you soon, Ilse."),
    )
    answer = direct_answer("Who did Ilse have dinner with on May 3, 2024?", [item])
    # Not the listener a lower sentence names: the one the dinner was had with.
    assert answer.line == "Ilse's mother", answer.line


def test_a_sentence_that_tells_of_the_asked_week_in_its_own_words_says_its_time() -> None:
    item = turns_item(
        "s1",
        "2024-08-03T09:00:00",
        ("Tomas", "Hey Tomas here, how are the kids?"),
        ("Ilse", "Last week, we had a meaningful experience at a military memorial."),
        ("Ilse", "It really made an impact on my kids."),
        ("Tomas", "It is super important to teach kids about history, Ilse."),
    )
    question = "What did Ilse do the week before August 3, 2024 involving her kids?"
    answer = direct_answer(question, [item])
    # "Last week", said on 3 August, is the week the question names: the sentence says the
    # question's time as it would say one of its words, and answers firmly.
    assert answer.line.startswith("meaningful experience"), answer.line
    assert "weak" not in answer.line, answer.line


def test_a_place_named_beside_its_description_is_given_firmly() -> None:
    item = turns_item(
        "s1",
        "2024-06-27T09:00:00",
        ("Tomas", "That necklace is lovely!"),
        ("Ilse", "It is a gift from my grandma in my home country, Norway."),
        ("Ilse", "She gave it to me when I was young."),
    )
    answer = direct_answer("What country is Ilse's grandma from?", [item])
    # "in my home country, Norway" says a place as "in Norway" does.
    assert answer.line == "Norway", answer.line


def test_a_pronoun_of_the_one_named_is_no_word_asked() -> None:
    # "his" stands for Tomas, whom the question names; read as a term its stem is the
    # greeting "hi", said in every other turn.
    terms = Weigher("What did Tomas attend with his colleagues in March 2024?", []).terms
    assert "hi" not in terms and "colleagu" in terms, terms
    assert "her" not in Weigher("What did Mel and her kids make?", []).terms
