"""Questions asked of two people at once, and the question's own grammar words: "both"
and the pronouns that stand for the people named say nothing a sentence must say; a yes
or no asked of two people takes no reason from one person's sentence. Synthetic turns
through the real direct answer."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.joint import joint_names, shared_named
from kbmem.research.ranking import Ranking, Weigher
from kbmem.research.said import read_sentences
from kbmem.research.spans import people
from kbmem.research.types import EvidenceItem


def test_both_is_no_word_a_sentence_must_say() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Jon", "It's great we both face the same challenges with the shop."),
        ),
        turns_item("s2", "2024-04-01T09:00:00", ("Jon", "Running helps me unwind after work.")),
        turns_item("s3", "2024-04-08T09:00:00", ("Gina", "Running is how I unwind too.")),
    ]
    answer = direct_answer("How do Jon and Gina both like to unwind?", items)
    assert answer.ranked[0].text.startswith("Running")


def test_a_pronoun_of_the_question_is_no_word_a_sentence_must_say() -> None:
    # "her" stands for Ilse, whom the question names: a sentence saying "her" of someone
    # else says nothing more of the question.
    items = [turns_item("s1", "2024-03-01T09:00:00", ("Ilse", "I got a kite for my niece."))]
    weigher = Weigher("What did Ilse buy for her niece?", read_sentences(items))
    assert weigher.terms == {"ils", "bui", "niec"}


def test_one_person_s_sentence_gives_no_reason_for_two() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Tomas", "I ran the Berlin marathon in spring, my knees still hurt from it."),
        ),
        turns_item(
            "s2", "2024-04-01T09:00:00", ("Ilse", "I ran a marathon too, the one in Ghent.")
        ),
    ]
    answer = direct_answer("Did Ilse and Tomas both run a marathon?", items)
    assert answer.line.split(" (")[0] == "Yes"


def test_two_names_joined_by_and_are_asked_together() -> None:
    assert joint_names("Did Ilse and Tomas both run?") is not None
    assert joint_names("What did Mel and her kids paint?") is None


def test_a_thing_said_with_a_possessive_is_named_where_its_speaker_says_it_again() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Tomas", "I want to help rebuild my old area, Kessel Flats, next year."),
        ),
        turns_item("s2", "2024-05-01T09:00:00", ("Tomas", "My old area was hit by a nasty storm.")),
    ]
    assert direct_answer("What area was hit by a storm?", items).line.startswith("Kessel Flats")


def test_a_place_said_with_a_possessive_is_named_where_its_speaker_says_it_again() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "I still cook the food of my home country, Estonia, every week."),
        ),
        turns_item(
            "s2",
            "2024-05-01T09:00:00",
            ("Ilse", "I moved here years ago, I grew up in my home country by the sea."),
        ),
    ]
    assert "Estonia" in direct_answer("Where did Ilse grow up?", items).line


def test_a_relative_is_named_where_the_speaker_says_it_again() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "I stayed with my aunt, Rosa, on the farm."),
            ("Tomas", "Ilse, that sounds lovely. Ilse, you deserve a break. Well done, Ilse!"),
        ),
        turns_item(
            "s2",
            "2024-05-01T09:00:00",
            ("Ilse", "My aunt taught me to sew when I was little."),
        ),
    ]
    assert direct_answer("Who taught Ilse to sew?", items).line.startswith("Rosa")


def test_asked_what_two_people_share_the_place_both_name_answers() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "Last spring I visited Lisbon with my sister, and later I went to Porto."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Tomas", "I visited Porto in May, the bridges are gorgeous."),
        ),
    ]
    answer = direct_answer("Which city have both Ilse and Tomas visited?", items)
    assert answer.line.split(" (")[0] == "Porto"


def test_asked_whom_two_people_share_the_person_both_name_answers() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "My favourite singer is Nina Simone, though I love Adele too."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Tomas", "Adele is my favourite singer, her voice is unreal."),
        ),
    ]
    answer = direct_answer("Who is Ilse and Tomas's favourite singer?", items)
    assert answer.line.split(" (")[0] == "Adele"


def test_a_compound_s_kind_answers_where_no_sentence_says_its_head() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "Lately I've been looking into marine biology as a career, it's exciting."),
        ),
        turns_item("s2", "2024-04-01T09:00:00", ("Ilse", "Gonna check out career fairs soon!")),
    ]
    answer = direct_answer("What career path has Ilse decided to pursue?", items)
    assert answer.line.split(" (")[0] == "marine biology"


def test_a_thing_recalled_by_what_the_listener_did_is_the_one_they_named() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Tomas", 'I loved "The Salt Road" by Ann Vey. It gave me hope. Highly recommend it!'),
        ),
        turns_item(
            "s2",
            "2024-06-01T09:00:00",
            ("Ilse", "I loved reading picture books as a kid."),
            ("Ilse", "Been reading that book you recommended and walking to keep busy."),
        ),
    ]
    answer = direct_answer("What book did Ilse read on Tomas's advice?", items)
    assert answer.line.split(" (")[0] == "The Salt Road"


def _rain() -> EvidenceItem:
    """Ilse's phrase runs on to what only she said of the rain; Tomas says the rain too."""
    return turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Ilse", "I love the smell of rain falling on the dry fields."),
        ("Tomas", "Rain after a long summer is what I love most."),
    )


def test_asked_what_two_people_share_the_line_is_what_both_say() -> None:
    items = [_rain()]
    answer = direct_answer("What do both Ilse and Tomas love the smell of?", items)
    assert answer.line.split(" (")[0] == "rain"


def test_asked_of_one_person_the_line_is_not_cut_to_what_another_says() -> None:
    items = [_rain()]
    answer = direct_answer("What does Ilse love the smell of?", items)
    assert answer.line.split(" (")[0] == "rain falling on the dry fields"


def test_asked_whom_two_people_favour_the_name_each_says_in_their_own_words() -> None:
    # Neither says "favourite singer" of her; both name a friend too, who is no singer.
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "My favourite part of the trip was the train ride."),
            ("Ilse", "I listened to Adele the whole way, and Marta slept."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Tomas", "Say hi to Marta for me."),
            ("Tomas", "And Adele is the best, her voice is unreal."),
        ),
    ]
    answer = direct_answer("Who is Ilse and Tomas's favourite singer?", items)
    assert answer.line.split(" (")[0] == "Adele"


def test_a_name_after_a_joining_word_that_opens_a_sentence_is_a_name() -> None:
    assert people("And Adele is the best.", set()) == ["Adele"]
    assert people("So Rome was lovely.", set()) == ["Rome"]


def test_asked_what_thing_two_people_share_the_member_of_the_class_each_says() -> None:
    # The sentence that says most of the question names no animal, and the other's near
    # sentence shares its "write"; each names turtles in their own words, and both say
    # "today", which is no animal.
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            (
                "Tomas",
                "I really should start a journal, or at least write down the things my "
                "animals like a lot!",
            ),
            ("Ilse", "I started writing down my favorite memories too."),
            ("Ilse", "I would get two turtles today if I could!"),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Tomas", "My turtles ate strawberries today, so cute."),
        ),
    ]
    answer = direct_answer("What animal do both Tomas and Ilse like?", items)
    assert answer.line.split(" (")[0] == "turtles"


def test_the_shared_thing_is_said_in_full_as_far_as_both_say_it() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "So we both have similar hobbies."),
            ("Ilse", "Besides work, I enjoy reading, watching movies and hiking."),
            ("Tomas", "Playing chess and watching movies are what I do after work."),
        ),
    ]
    answer = direct_answer("What kind of hobbies do Ilse and Tomas share?", items)
    assert answer.line.split(" (")[0] == "watching movies"


def test_a_thing_of_one_person_is_not_shared_by_a_word_in_common_with_another() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "I play board games every Friday."),
            ("Tomas", "I play video games at night."),
        ),
    ]
    ranking = Ranking("What hobby do both Ilse and Tomas share?", read_sentences(items))
    phrases = {"Ilse": ["board games"], "Tomas": ["video games"]}
    assert shared_named(ranking, lambda s: phrases[s.speaker]) is None
    phrases["Tomas"] = ["board games with friends"]
    shared = shared_named(ranking, lambda s: phrases[s.speaker])
    assert shared is not None and shared[0] == "board games"
