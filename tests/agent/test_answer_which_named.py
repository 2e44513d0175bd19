"""Asked "which N" (or "what N"), a phrase that says only that there is an N ("a new
team", "a few movies", "another language") does not say which: the name its speaker gives
next, or a name a sentence near the best says, answers (kbmem.research.which.named_next,
named_near); synthetic turns through the real direct answer."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.ranking import Ranking
from kbmem.research.said import read_sentences
from kbmem.research.where import place
from kbmem.research.which import told_name, unspecific


def test_a_phrase_of_determiners_and_the_questions_words_says_no_which() -> None:
    asked = {"fantasi", "novel"}
    assert unspecific("a new team", "team", asked)
    assert unspecific("a few movies", "movie", asked)
    assert unspecific("different fantasy novels", "novels", asked)
    assert not unspecific("Valorant tournament", "tournament", asked)
    assert not unspecific("mixed berry flavors", "flavors", asked)


def test_a_name_is_capitalised_words_or_a_title_not_a_word_opening_the_sentence() -> None:
    assert told_name("The Minnesota Wolves!", set(), set()) == "Minnesota Wolves"
    assert told_name('We love "Home Alone" - so funny!', set(), set()) == "Home Alone"
    assert told_name("Learning German has been tough.", set(), set()) == "German"
    assert told_name("Thanks!", set(), set()) == ""
    assert told_name("Thanks, Ilse!", {"ils"}, set()) == ""


def test_the_team_named_when_the_listener_asks_which() -> None:
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Ilse", "I just signed with a new team - excited for the season!"),
        ("Tomas", "Congrats on the new team. Which team did you sign with?"),
        ("Ilse", "The Harbour Gulls! They play on Saturdays."),
    )
    answer = direct_answer("Which team did Ilse sign with?", [item])
    assert answer.line.startswith("Harbour Gulls"), answer.line


def test_the_movie_named_in_the_rest_of_the_turn() -> None:
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Tomas", "Do you have any favourite movies you watch together?"),
        ("Ilse", 'At the harvest feast we usually watch a few movies. We love "Paper Boats".'),
        ("Tomas", "That's a classic!"),
    )
    answer = direct_answer("Which movie does Ilse watch at the harvest feast?", [item])
    assert answer.line.startswith("Paper Boats"), answer.line


def test_a_named_thing_is_kept_when_the_phrase_says_which() -> None:
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Ilse", "I won a big Valorant tournament last Saturday."),
        ("Ilse", "Next I play in Paris."),
    )
    answer = direct_answer("Which tournament did Ilse win?", [item])
    assert "Paris" not in answer.line and "Valorant" in answer.line, answer.line


def test_a_city_named_as_the_subject_of_is_answers_which_city() -> None:
    # "Barcelona is a must-visit city!" names the city asked, as "in Lisbon" would; ranked
    # first, it is read before a sentence below it that names a place after a preposition.
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Tomas", "I am going to study abroad, any tips on where to go?"),
        ("Ilse", "Barcelona is a must-visit city!"),
        ("Ilse", "I love discovering new cities - here is a pic from my trip to Lisbon!"),
    )
    ranking = Ranking("Which city did Ilse recommend to Tomas?", read_sentences([item]))
    ranking.ranked.sort(key=lambda scored: not scored[2].text.startswith("Barcelona"))
    ranking.ranked[:] = [(1.0, 1.0, s) for _score, _share, s in ranking.ranked]
    assert place(ranking)[0] == "Barcelona"


def test_a_title_in_quotes_names_the_thing_asked_by_another_noun() -> None:
    # Asked "what game", "this fantasy RPG called "Harbour Quest"" names it: the title,
    # not the "game" a picture's caption below says.
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Ilse", 'I\'m currently playing this awesome fantasy RPG called "Harbour Quest"!'),
        ("Ilse", "I recommend it. [shares an image: a photo of two nintendo game covers]"),
    )
    answer = direct_answer("What game is Ilse currently playing and recommends?", [item])
    assert answer.line.startswith("Harbour Quest"), answer.line
