"""A list question's items: a name or a title is one of the things asked even where its
sentence does not say the question's words ("a short trip to Porto" for "which cities has
Ilse been to?"); a phrase naming the class asked ("instruments") is no item once a member
is found; an item ends at a dash; a time is no name ("Last August"); "who have …?" asks
for several people, gathered. On synthetic turns (no index), then end to end on a
memorized conversation with the real indexes and the offline agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.evidence import line_items, turns_item
from helpers.talk import memorize

from kbmem.agent.session import ChatSession
from kbmem.memorize.template import init_kb
from kbmem.research.answer_types import question_kind
from kbmem.research.direct import direct_answer


def test_a_name_is_an_item_without_the_question_s_words() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "I spent a week in Ghent with my sister, the canals were lovely."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Ilse", "I took a short trip to Porto to clear my head."),
        ),
    ]
    assert sorted(line_items(direct_answer("Which cities has Ilse been to?", items).line)) == [
        "Ghent",
        "Porto",
    ]


def test_the_class_asked_is_no_item_once_a_member_is_named() -> None:
    items = [
        turns_item("s1", "2024-03-01T09:00:00", ("Tomas", "I play the cello in a quartet.")),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Tomas", "Playing instruments keeps me calm, I have played instruments for years."),
        ),
    ]
    assert line_items(direct_answer("What instruments does Tomas play?", items).line) == ["cello"]


def test_an_item_ends_at_a_dash() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Tomas", "Lately I play the banjo - it's a learning curve."),
        ),
        turns_item("s2", "2024-04-01T09:00:00", ("Tomas", "I play the cello in a quartet.")),
    ]
    line = direct_answer("What instruments does Tomas play?", items).line
    assert sorted(line_items(line)) == ["banjo", "cello"], line


def test_a_memorized_conversation_lists_the_places_named(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        "acme",
        {
            "s-ghent": (
                "2026-03-01",
                [
                    ("Tomas", "How was the spring for you?"),
                    ("Ilse", "I spent a week in Ghent with my sister, the canals were lovely."),
                    ("Tomas", "I love discovering new cities too."),
                ],
            ),
            "s-porto": (
                "2026-04-12",
                [
                    ("Tomas", "You look rested!"),
                    ("Ilse", "Last April I took a short trip to Porto to clear my head."),
                    ("Tomas", "The river there is famous."),
                ],
            ),
        },
    )
    with ChatSession(kb, "acme") as chat:
        visited = chat.send("Which cities has Ilse been to?")
    assert sorted(line_items(visited.answer)) == ["Ghent", "Porto"], visited.answer


@pytest.mark.parametrize(
    "question",
    ["Who have written letters to Ilse?", "What people has Ilse met at the harbour?"],
)
def test_a_plural_who_gathers_the_names(question: str) -> None:
    assert question_kind(question) == "names"


def test_the_people_a_plural_who_asks_for_are_gathered_across_sessions() -> None:
    items = [
        turns_item(
            "s1", "2024-03-01T09:00:00", ("Ilse", "I got a letter written by Marta on the island.")
        ),
        turns_item(
            "s2", "2024-04-01T09:00:00", ("Ilse", "Today a letter written by Jonas came too!")
        ),
    ]
    line = direct_answer("Who have written letters to Ilse?", items).line
    assert sorted(line_items(line)) == ["Jonas", "Marta"], line


def test_a_time_capitalised_at_a_sentence_s_start_is_no_name() -> None:
    item = turns_item("s1", "2024-09-01T09:00:00", ("Ilse", "Last August I spent a week in Ghent."))
    assert line_items(direct_answer("Which cities has Ilse been to?", [item]).line) == ["Ghent"]


def _painted() -> list:
    return [
        turns_item("s1", "2024-03-01T09:00:00", ("Ilse", "I painted a harbour at dawn!")),
        turns_item("s2", "2024-03-08T09:00:00", ("Ilse", "Painting on the balcony calms me.")),
        turns_item(
            "s3", "2024-04-01T09:00:00", ("Ilse", "Here is my lighthouse painting from Sunday.")
        ),
        turns_item("s4", "2024-05-01T09:00:00", ("Ilse", "I finished a painting of a fox.")),
        turns_item("s5", "2024-06-01T09:00:00", ("Ilse", "Painting helps me unwind after work.")),
        turns_item(
            "s6", "2024-07-01T09:00:00", ("Ilse", "These tulips I painted yesterday are for Omar.")
        ),
    ]


def test_the_things_a_verb_was_done_to_are_its_objects_in_any_form() -> None:
    # The verb's object ("painted a harbour"), the thing its noun is of ("a painting of a
    # fox"), the word qualifying its noun ("my lighthouse painting"); a form followed by a
    # preposition ("on the balcony") or by a clause ("helps me unwind") has no object; the
    # thing before a clause's subject is its object ("These tulips I painted").
    line = direct_answer("What has Ilse painted?", _painted()).line
    assert sorted(line_items(line)) == ["fox", "harbour", "lighthouse", "tulips"], line


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("What does Ilse do to unwind?", "list"),
        ("What do Ilse and Tomas do on weekends?", "list"),
        ("What does Ilse do for a living?", "thing"),
        ("What does Ilse want to do after the season?", "thing"),
        ("What does Ilse feel she could do by the sea?", "thing"),
        ("What does Ilse think about the harbour?", "thing"),
    ],
)
def test_what_someone_does_as_a_habit_is_a_list(question: str, kind: str) -> None:
    assert question_kind(question) == kind


def test_a_habit_s_activities_are_gathered_by_their_ing_forms() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "I've been swimming more to unwind, it clears my head."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Ilse", "Knitting and baking help me unwind after long shifts."),
        ),
    ]
    line = direct_answer("What does Ilse do to unwind?", items).line
    assert sorted(i.lower() for i in line_items(line)) == ["baking", "knitting", "swimming"], line


def test_the_activities_asked_are_named_by_their_ing_forms() -> None:
    items = [
        turns_item("s1", "2024-03-01T09:00:00", ("Ilse", "With my choir friends I went sailing.")),
        turns_item(
            "s2", "2024-04-01T09:00:00", ("Ilse", "My choir friends and I love hiking together.")
        ),
    ]
    line = direct_answer("What activities has Ilse done with her choir friends?", items).line
    assert sorted(line_items(line)) == ["hiking", "sailing"], line


def test_the_verb_after_a_subject_is_no_word_of_the_kind() -> None:
    # "I'm trying kundalini yoga": the words before the noun asked about are its kind only
    # up to the subject's verb.
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Wren", "These days I'm trying kundalini yoga at the studio."),
        ),
        turns_item("s2", "2024-04-01T09:00:00", ("Wren", "I also enjoy aerial yoga a lot.")),
    ]
    line = direct_answer("What types of yoga has Wren practiced?", items).line
    assert "trying" not in line and "enjoy" not in line
    assert {"kundalini", "aerial"} <= set(line.replace(",", " ").split())


def test_the_noun_every_item_ends_in_is_said_once() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Wren", "I signed up for a pottery class at the college."),
        ),
        turns_item("s2", "2024-04-01T09:00:00", ("Wren", "I took a poetry class with my aunt.")),
    ]
    line = direct_answer("What classes has Wren taken?", items).line
    assert sorted(line_items(line)) in (["poetry", "pottery class"], ["poetry class", "pottery"])


def test_a_caption_s_scene_names_no_activity() -> None:
    # "[shares an image: a man sitting by a fire]" shows a moment; what was done is told.
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            (
                "Wren",
                "My family and I love going on trips. "
                "[shares an image: a photo of a man sitting by a campfire]",
            ),
        ),
        turns_item("s2", "2024-04-01T09:00:00", ("Wren", "My family and I went kayaking.")),
    ]
    line = direct_answer("What activities has Wren done with her family?", items).line
    assert "sitting" not in line and "kayaking" in line


def test_a_quoted_title_names_no_one() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Wren", 'Our cat Juniper loves it when I read "Charlotte\'s Web" aloud.'),
        ),
        turns_item("s2", "2024-04-01T09:00:00", ("Wren", "Our dog Pepper loves her cat friend.")),
    ]
    line = direct_answer("What are Wren's pets' names?", items).line
    assert sorted(line_items(line)) == ["Juniper", "Pepper"]


def test_a_name_is_no_member_beside_members_named_with_the_noun_asked() -> None:
    items = [
        turns_item(
            "s1", "2024-03-01T09:00:00", ("Wren", "I volunteer at the animal shelter on Sundays.")
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Wren", "Volunteering at the shelter, I met Rosa, who runs the kitchen."),
        ),
    ]
    line = direct_answer("What shelters does Wren volunteer at?", items).line
    assert "Rosa" not in line and "animal" in line


def test_a_sentence_with_a_pointer_gives_the_item_of_its_own_clause() -> None:
    # "it was great" points back, but the clause before it says what was made.
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Wren", "Baking calms me down. I made some lemon tart recently, it was great."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Wren", "I made a cheesecake for my sister's birthday."),
        ),
    ]
    line = direct_answer("What desserts has Wren made?", items).line
    assert sorted(line_items(line)) == ["cheesecake", "lemon tart"], line


def test_an_item_far_in_meaning_from_the_class_asked_is_dropped() -> None:
    # "play" takes cards as well as a cello: only the cello is an instrument.
    items = [
        turns_item("s1", "2024-03-01T09:00:00", ("Tomas", "I play the cello in a quartet.")),
        turns_item("s2", "2024-04-01T09:00:00", ("Tomas", "I play cards with my uncle.")),
        turns_item("s3", "2024-05-01T09:00:00", ("Tomas", "I play the flute for fun.")),
    ]
    line = direct_answer("What instruments does Tomas play?", items).line
    assert sorted(line_items(line)) == ["cello", "flute"], line


def test_a_quoted_title_is_kept_whatever_its_words_mean() -> None:
    # The words of a title do not say that it is a book; the model cannot judge it.
    items = [
        turns_item("s1", "2024-03-01T09:00:00", ("Wren", 'I read "Quiet Rivers" on the train.')),
        turns_item(
            "s2", "2024-04-01T09:00:00", ("Wren", "I read a cookbook about bread last month.")
        ),
    ]
    line = direct_answer("What books has Wren read?", items).line
    assert "Quiet Rivers" in line_items(line), line


def test_a_name_of_the_class_asked_joins_from_a_sentence_below_the_bar() -> None:
    # "My visit to Lisbon was short" says less of the question than the Ghent sentence,
    # but Lisbon is a city by what it names.
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "I visited Ghent with my sister, the cities of Belgium are lovely."),
        ),
        turns_item("s2", "2024-04-01T09:00:00", ("Ilse", "My visit to Lisbon was short.")),
    ]
    line = direct_answer("Which cities has Ilse visited?", items).line
    assert sorted(line_items(line)) == ["Ghent", "Lisbon"], line


def test_a_member_near_the_class_asked_joins_though_its_sentence_does_not_say_it() -> None:
    # The reply names the activities without the question's words; its question says them.
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Bram", "What outdoor activities do you and your brother enjoy?"),
            ("Wren", "We love hiking and kayaking by the lake."),
        ),
    ]
    line = direct_answer("What outdoor activities does Wren enjoy?", items).line
    assert sorted(line_items(line)) == ["hiking", "kayaking"], line


def test_a_question_tells_no_member() -> None:
    # Asking "Do you play the violin …?" the asked person names what they ask about, not
    # what they play; a caption after the question mark does not make it a statement.
    items = [
        turns_item("s1", "2024-03-01T09:00:00", ("Tomas", "I play the cello in a quartet.")),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            (
                "Tomas",
                "Do you play the violin in your band? "
                "[shares an image: a photo of a violin on a chair]",
            ),
        ),
    ]
    line = direct_answer("What instruments does Tomas play?", items).line
    assert line_items(line) == ["cello"], line


def test_a_name_of_the_class_asked_joins_from_the_asked_person_s_unranked_sentence() -> None:
    # "took this pic in Spain" says none of the question's words, so the ranking leaves it
    # out; Spain is a European country by what it names, and Ilse says she was there.
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "I have been to a few European countries, Portugal was the best."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Ilse", "Last year I took a solo trip and took this pic in Spain."),
            ("Bram", "What a view!"),
        ),
        turns_item(
            "s3",
            "2024-05-01T09:00:00",
            ("Ilse", "My sister Marta has been great, she helped me move."),
        ),
    ]
    line = direct_answer("What European countries has Ilse been to?", items).line
    assert sorted(line_items(line)) == ["Portugal", "Spain"], line


def test_a_name_ends_before_a_word_that_only_begins_like_a_joining_word() -> None:
    # "la" joins "Anna de la Cruz", but "last" is no "la": the title read is "Dune", not
    # "Dune la", and a name never ends in a joining word ("Rome of course").
    items = [
        turns_item("s1", "2024-01-05T09:00:00", ("Ilse", "I finished Dune last week.")),
        turns_item("s2", "2024-02-05T09:00:00", ("Ilse", "I read Emma yesterday, loved it.")),
    ]
    assert sorted(line_items(direct_answer("What books has Ilse read?", items).line)) == [
        "Dune",
        "Emma",
    ]
    rome = [turns_item("s1", "2024-01-05T09:00:00", ("Ilse", "I loved Rome of course."))]
    assert line_items(direct_answer("What cities has Ilse loved?", rome).line) == ["Rome"]


def test_a_verb_s_object_said_by_the_class_noun_gives_its_name() -> None:
    # "this game Ludo", "a game … called "Skyward"": the object says only that it is a
    # game; the name says which game, and the question asks which.
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Odile", "We played this game Ludo at my cousin's place, it was a blast."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Odile", 'I have been playing a game nonstop lately called "Skyward".'),
        ),
    ]
    line = direct_answer("What games has Odile played?", items).line
    assert sorted(line_items(line)) == ["Ludo", "Skyward"]


def test_a_name_set_off_by_a_comma_after_the_noun_names_something_else() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Odile", "I volunteer at a homeless shelter on Sundays."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Odile", "One of the residents at the shelter, Marta, volunteers there too."),
        ),
    ]
    line = direct_answer("What shelters does Odile volunteer at?", items).line
    assert "Marta" not in line_items(line)


def test_an_adverb_closing_the_clause_is_no_word_of_the_item() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Odile", "I'm learning how to play the cello now."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Odile", "I picked up the banjo again, I play the banjo every day."),
        ),
    ]
    line = direct_answer("What instruments does Odile play?", items).line
    assert "cello" in line_items(line)
    assert not any(item.endswith((" now", " again")) for item in line_items(line))


def test_the_noun_asked_with_no_word_of_which_one_is_no_member() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Odile", "I made a new recipe last week: a lemon tart with thyme."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Odile", "Yesterday I made another recipe, a spicy lentil soup."),
        ),
        turns_item(
            "s3",
            "2024-05-01T09:00:00",
            ("Odile", "I made lentil soup again, and I also made flatbread recipes."),
        ),
    ]
    line = direct_answer("What recipes has Odile made?", items).line
    assert not {"new recipe", "another recipe"} & set(line_items(line))


def test_a_verb_of_liking_or_a_noun_in_ing_names_no_activity() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Odile", "To relax I'm loving gardening in the evenings."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Odile", "To relax, honestly, a quiet afternoon is such a blessing."),
        ),
    ]
    line = direct_answer("What does Odile do to relax?", items).line
    assert "gardening" in line_items(line)
    assert not {"loving", "blessing"} & set(line_items(line))


def test_a_word_of_quantity_alone_is_no_member() -> None:
    items = [
        turns_item("s1", "2024-03-01T09:00:00", ("Odile", "I like to collect stamps.")),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Odile", "I love that first film too, I even have the whole collection!"),
        ),
    ]
    line = direct_answer("What items does Odile collect?", items).line
    assert "whole" not in line_items(line)


def test_a_verb_taking_the_ing_form_is_no_word_of_the_activity() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Odile", "To unwind I enjoy knitting by the window."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Odile", "To unwind, I keep sketching birds in the park."),
        ),
    ]
    line = direct_answer("What does Odile do to unwind?", items).line
    assert sorted(line_items(line))[:2] == ["knitting", "sketching"]


def test_an_object_pronoun_before_the_verb_is_no_subject_of_its_clause() -> None:
    # "a photo of me painting …": "me" is the object of "of", so "a photo of" is no thing
    # painted (as "These figurines I bought" makes the figurines the thing bought).
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Odile", "Here's a photo of me painting a lighthouse by the sea."),
        ),
    ]
    line = direct_answer("What has Odile painted?", items).line
    assert line_items(line) == ["lighthouse"]


def test_an_object_ending_in_a_verb_of_naming_gives_the_name_after_it() -> None:
    # "a mystery novel called "Glass Harbour"": the words before "called" say what kind of
    # thing it is, the title says which one.
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Odile", 'I\'m reading a mystery novel called "Glass Harbour" by Ada Penn.'),
        ),
        turns_item("s2", "2024-04-01T09:00:00", ("Odile", 'I read "Salt Roads" on the train.')),
    ]
    line = direct_answer("What books has Odile read?", items).line
    assert "Glass Harbour" in line_items(line), line
    assert not any(item.endswith("called") for item in line_items(line)), line


def test_a_clause_adverb_of_time_after_a_name_is_no_word_of_it() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Odile", "We played this board game Ludo at my cousin's place."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Odile", "We played some Chess afterward, the best board game."),
        ),
    ]
    line = direct_answer("What board games has Odile played?", items).line
    assert "Chess" in line_items(line), line
    assert "Chess afterward" not in line_items(line), line


def test_the_noun_asked_modifying_the_next_noun_is_no_member() -> None:
    # "my first video game tournament": the thing won is a tournament, no video game.
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Odile", "I won my first video game tournament last week, so exciting!"),
        ),
        turns_item("s2", "2024-04-01T09:00:00", ("Odile", "I play the video game Starfall a lot.")),
    ]
    line = direct_answer("What video games does Odile play?", items).line
    assert "Starfall" in line_items(line), line
    assert not any("tournament" in item or item.endswith("video game") for item in line_items(line))


def test_a_name_the_asked_person_does_the_verb_to_joins_from_below_the_bar() -> None:
    # The later sentences say less of the question than the first, but each names what
    # Odile played: the question's verb done to a named thing tells it as one asked for.
    # Asked of Odile by someone else, a title is no member.
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Odile", "I love video games, I play the video game Starfall with my friends."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            (
                "Odile",
                'I\'m currently playing this fantasy RPG called "Ember Tide" and it is a blast!',
            ),
        ),
        turns_item(
            "s3",
            "2024-05-01T09:00:00",
            ("Bram", 'Have you played "Sky Forge" yet'),
            ("Odile", 'I played "Moon Keep" last year.'),
        ),
    ]
    line = direct_answer("What video games does Odile play?", items).line
    assert line_items(line) == ["Starfall", "Ember Tide", "Moon Keep"], line


def test_a_preposition_of_time_capitalised_at_a_sentence_s_start_is_no_word_of_a_name() -> None:
    item = turns_item(
        "s1", "2024-09-01T09:00:00", ("Ilse", "During Easter Week I spent two days in Ghent.")
    )
    items = line_items(direct_answer("Which cities has Ilse been to?", [item]).line)
    assert not any(i.startswith("During") for i in items), items


def test_a_title_whose_sentence_names_another_class_is_no_member() -> None:
    # The reply names a movie, though it answers a question about video games: a title's
    # words do not say what it names, its sentence does.
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Odile", 'I play a video game called "Skyward" every night with my brother.'),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Bram", "Any good video games you play lately?"),
            (
                "Odile",
                "Not lately, but I saw a movie about dreams, "
                'I think it was called "Harbour Lights".',
            ),
        ),
    ]
    line = direct_answer("What video games does Odile play?", items).line
    assert line_items(line) == ["Skyward"], line
