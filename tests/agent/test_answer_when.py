"""How firmly a "when" answer is given: by whether its sentence tells the event asked, not
by how many of the question's describing words it repeats; and which event a question
asks when a light verb carries a noun ("get in a car accident")."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.direct import WEAK, direct_answer, tells_news
from kbmem.research.when import asked_event


def test_the_event_a_light_verb_carries_is_the_noun_its_phrase_ends_in() -> None:
    assert asked_event("When did Ilse get in a car accident?") == {"accid"}
    assert asked_event("When did Ilse and Tomas go to a folk festival together?") == {"festiv"}
    assert asked_event("When did Ilse go on a hike after the storm?") == {"hike"}
    assert asked_event("When did Ilse go to a fair to sell her jam?") == {"fair"}


def test_a_dated_sentence_telling_the_event_asked_is_firm() -> None:
    item = turns_item(
        "s1",
        "2024-04-25T10:00:00",
        ("Ilse", "Yesterday, I went to a fair to show off my bakery."),
        ("Tomas", "How did it go?"),
    )
    # Most of the question's words only describe the event; the sentence tells it, dated.
    answer = direct_answer(
        "When did Ilse go to a fair to get more customers for her small bakery business?", [item]
    )
    assert answer.line == "Wednesday 24 April 2024"
    assert answer.firm


def test_a_sentence_saying_only_a_modifier_of_the_event_stays_weak() -> None:
    item = turns_item(
        "s1",
        "2024-04-25T10:00:00",
        ("Ilse", "I sold my old car to a neighbour yesterday."),
        ("Tomas", "Good riddance."),
    )
    # "my old car" is no car accident: the date may be another event's.
    answer = direct_answer("When did Ilse get in a car accident on the way to the coast?", [item])
    assert answer.line.endswith(WEAK), answer.line


def test_an_event_told_as_just_done_is_firmly_around_the_day_it_was_told() -> None:
    news = turns_item(
        "s1",
        "2024-02-08T10:00:00",
        ("Ilse", "Busy weeks. I just opened a second stall at the market on the square."),
        ("Tomas", "Congrats!"),
    )
    question = "When did Ilse open a second stall at the market?"
    answer = direct_answer(question, [news])
    assert answer.line == "around 8 February 2024"
    assert answer.firm
    # Told in the simple past, the event may be long gone: the day it was told is a guess.
    recalled = turns_item(
        "s1",
        "2024-02-08T10:00:00",
        ("Ilse", "Busy weeks. I opened a second stall at the market on the square."),
        ("Tomas", "Congrats!"),
    )
    assert direct_answer(question, [recalled]).line == f"around 8 February 2024 {WEAK}"
    # A wish or a liking tells no event.
    assert not tells_news("I just wanted to tell you about the stall.")
    assert not tells_news("I've always loved the market.")


def test_asked_when_something_was_said_the_answer_is_the_day_it_was_said() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T10:00:00",
            ("Tomas", "Who painted the mural by the station?"),
            ("Ilse", "It was Lotte Brandt, years ago, in 2015!"),
        ),
        turns_item("s2", "2024-03-09T10:00:00", ("Ilse", "I painted my kitchen yesterday.")),
    ]
    # The year the sentence names is when the mural was painted, not when it was said.
    answer = direct_answer("When did Ilse mention Lotte Brandt?", items)
    assert answer.line == "Friday 1 March 2024"
    assert answer.firm


def test_a_reply_is_dated_by_the_turn_its_question_asks_about() -> None:
    item = turns_item(
        "s1",
        "2024-05-18T10:00:00",
        ("Ilse", "Here's a pic from last Friday with the choir, all of them beaming."),
        ("Tomas", "They look thrilled! What did you do to make them so happy?"),
        ("Ilse", "Thanks! We threw a small party and invited the old conductor."),
    )
    # The party is told in reply to a question about the picture of last Friday.
    answer = direct_answer("When did Ilse throw a party for the choir?", [item])
    assert answer.line.startswith("Friday 17 May 2024"), answer.line


def test_a_beginning_asked_is_told_by_the_activity_begun() -> None:
    assert asked_event("When did Ilse start reading a book on sailing?") == {"read"}
    assert asked_event("When did Ilse begin to paint portraits?") == {"paint"}
    # Begun with a noun, the beginning itself is the event.
    assert asked_event("When did Ilse start boot camp?") == {"start"}


def test_an_event_under_way_is_not_dated_by_a_time_ahead_in_its_turn() -> None:
    item = turns_item(
        "s1",
        "2024-04-03T10:00:00",
        ("Tomas", "What do you have going for the bakery?"),
        (
            "Ilse",
            "I'm expanding the bakery's delivery service to nearby towns. "
            "I'm also hosting a baking contest next month to bring in more people.",
        ),
    )
    answer = direct_answer("When did Ilse start expanding the bakery's delivery service?", [item])
    # The contest is ahead; the expansion is under way on the day it is told.
    assert answer.line.startswith("around 3 April 2024"), answer.line


def test_a_yearly_day_is_answered_by_its_day_and_month() -> None:
    item = turns_item(
        "s1",
        "2024-09-12T10:00:00",
        ("Ilse", "We celebrated my son's birthday yesterday with a picnic by the lake."),
    )
    answer = direct_answer("When is Ilse's son's birthday?", [item])
    assert answer.line.startswith("11 September"), answer.line
    # Asked when it was celebrated, the day is that day.
    answer = direct_answer("When did Ilse celebrate her son's birthday?", [item])
    assert answer.line == "Wednesday 11 September 2024"
