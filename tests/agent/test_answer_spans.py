"""The span the direct answer cuts from its sentence by the question's grammar: the object
of a stranded preposition ("… raise money for?"), the object of the asked verb ("What did
X make?" → "made our own bowls"), the whole list a phrase is an item of, and a name set
beside a place phrase. On synthetic turns (no index), then end to end on a memorized
conversation with the real indexes and the offline agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.evidence import turns_item
from helpers.talk import memorize

from kbmem.agent.session import ChatSession
from kbmem.memorize.template import init_kb
from kbmem.research.direct import direct_answer
from kbmem.research.phrases import done_object, gerund, stranded_object, verb_object
from kbmem.research.spans import novel_phrase, people


def test_a_stranded_preposition_asks_for_its_object() -> None:
    text = "Raising money for the lifeboat crew is so rewarding - thanks for coming!"
    assert stranded_object("What did the fun run raise money for?", text, set()) == (
        "lifeboat crew"
    )
    # Another preposition after the word, or none at the question's end: nothing.
    assert stranded_object("What did the fun run raise money with?", text, set()) == ""
    assert stranded_object("What did the fun run raise?", text, set()) == ""


def test_a_subject_named_by_a_possessive_leaves_the_verb_asked() -> None:
    text = "I'm offering workshops to local schools now."
    assert verb_object("What does Tomas's boat club offer?", text, set()) == "workshops"


def test_what_was_done_is_no_part_of_the_subject_nor_of_another_phrase() -> None:
    question = "What has Ilse baked?"
    # Before a coordinator the word is the subject's other half ("my mom and I"); an
    # adverb of company and a determiner end the thing ("bread this week").
    assert done_object(question, "My mom and I baked bread together.", set()) == "bread"
    assert done_object(question, "I baked rye bread this week.", set()) == "rye bread"


def test_a_stretch_of_time_before_the_subject_is_no_thing_done() -> None:
    # "These figurines I bought": the thing bought stands before the subject. "These days I
    # play …": the words before the subject say when, and the object comes after the verb.
    question = "What games does Ilse play?"
    assert done_object(question, "These days I play chess with my dad.", set()) == "chess"
    bought = "What has Ilse bought?"
    assert done_object(bought, "These figurines I bought yesterday.", set()) == "figurines"


def test_an_ing_form_after_a_noun_with_its_own_object_is_that_noun_s_doing() -> None:
    question = "What instruments does Ilse play?"
    text = "[shares an image: a drawing of a man playing a piano]"
    assert done_object(question, text, set()) == ""
    assert done_object(question, "I love playing the cello.", set()) == "cello"


def test_the_asked_verb_s_object_in_any_form_of_the_verb() -> None:
    text = "We all made our own bowls, it was messy and fun!"
    assert verb_object("What did Ilse and her kids make at the workshop?", text, set()) == "bowls"
    # A gerund keeps its complement; a time word ends the object.
    text = "I just started volunteering at the lifeboat station once a month."
    assert verb_object("What did Tomas start recently?", text, set()) == (
        "volunteering at the lifeboat station"
    )
    # The question names the verb's object itself: not asked this way.
    assert verb_object("What did Ilse make a quilt of?", "I made it of silk.", set()) == ""
    # The object says only what the question does: nothing new.
    assert verb_object("What did Ilse paint?", "I painted it.", set()) == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("It was a gift, and it stands for hope, luck and patience.", "hope, luck and patience"),
        (
            "We hiked the ridge, swam in the cove and even went on a boat trip.",
            "hiked the ridge, swam in the cove and even went on a boat trip",
        ),
        # Two clauses joined by "and", each with its own subject, are no list.
        ("Yes, I did go, and it was fun.", "fun"),
        ("I went to a cafe, and then I went home.", "cafe"),
    ],
)
def test_a_phrase_in_a_list_is_given_with_the_whole_list(text: str, expected: str) -> None:
    assert novel_phrase(text, set(), set()) == expected


@pytest.mark.parametrize(
    ("turns", "question", "expected"),
    [
        (  # a "what" answer gives the whole list the sentence says
            [
                ("Ilse", "My grandmother's ring is special to me."),
                (
                    "Ilse",
                    "She gave it to me as a child, and it stands for hope, luck and patience.",
                ),
            ],
            "What does Ilse's ring stand for?",
            "hope, luck and patience",
        ),
        (  # a name beside a place phrase names the place
            [("Ilse", "This brooch was a gift from my aunt, who lives in her village, Kilmory.")],
            "Which town does Ilse's aunt live in?",
            "Kilmory",
        ),
        (  # an activity is named by a verb's -ing form
            [("Tomas", "Ilse and I had a blast on our kayaking trip last summer.")],
            "What activity did Tomas and Ilse enjoy last summer?",
            "kayaking",
        ),
    ],
    ids=["list", "place-name", "activity"],
)
def test_the_span_is_what_the_question_asks_for(
    turns: list[tuple[str, str]], question: str, expected: str
) -> None:
    item = turns_item("s1", "2024-07-02T09:00:00", *turns)
    assert direct_answer(question, [item]).line.split(" (")[0] == expected


def test_a_memorized_conversation_is_answered_with_the_verb_s_object(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        "acme",
        {
            "s-clay": (
                "2026-03-01",
                [
                    ("Ilse", "The pottery workshop with the kids was on Saturday."),
                    ("Tomas", "How did it go?"),
                    ("Ilse", "We all made our own bowls, it was messy and fun!"),
                ],
            ),
            "s-sea": (
                "2026-03-08",
                [
                    ("Tomas", "I ran the harbour fun run last weekend."),
                    ("Ilse", "Raising money for the lifeboat crew is so rewarding!"),
                ],
            ),
        },
    )
    with ChatSession(kb, "acme") as chat:
        made = chat.send("What did Ilse and her kids make during the pottery workshop?")
        raised = chat.send("What did the harbour fun run raise money for?")
    assert made.answer.split("\n", 1)[0].split(" (")[0] == "bowls", made.answer
    assert raised.answer.split("\n", 1)[0].split(" (")[0] == "lifeboat crew", raised.answer


def test_an_activity_s_name_keeps_the_word_that_qualifies_it() -> None:
    # With the word that qualifies it, and none that the question says itself.
    assert gerund("I've done weight training so far.", set()) == "weight training"
    assert gerund("We went hiking during the morning.", {"hike"}) == ""


def test_an_activity_is_no_adjective_nor_what_a_noun_before_it_does() -> None:
    # After a word of degree an -ing form is an adjective; after a noun with its
    # determiner it says what that noun does, and names the activity alone.
    assert gerund("The lake was so relaxing, we went swimming.", set()) == "swimming"
    assert gerund("We had a blast exploring the caves.", set()) == "exploring"
    assert gerund("I took my fam camping last week.", set()) == "camping"


def test_a_light_verb_s_ing_form_names_no_activity() -> None:
    # "getting", "going", "thinking": what is done is named by what follows them.
    assert gerund("We're thinking about going camping.", set()) == "camping"
    assert gerund("I'm getting better every day.", set()) == ""


@pytest.mark.parametrize(
    ("text", "known", "expected"),
    [
        # Capitalised only because they open the sentence: not names.
        ("Instead of going out, we stayed in.", frozenset(), []),
        ("Lots of people came to the fair.", frozenset(), []),
        # What follows the joining words is a name when it is capitalised itself.
        ("Instead of Bergen, Ilse chose Tromsø.", frozenset(), ["Bergen", "Ilse", "Tromsø"]),
        # Another capitalised word in the phrase shows it is a name.
        ("New Haven was lovely.", frozenset(), ["New Haven"]),
        # A first word known as a name (a speaker, or capitalised inside a sentence).
        ("Ilse of Bergen sang.", frozenset({"Ilse"}), ["Ilse of Bergen"]),
        ("Tomas came too.", frozenset(), []),
        ("Tomas came too.", frozenset({"Tomas"}), ["Tomas"]),
    ],
)
def test_a_word_capitalised_by_the_sentence_s_start_is_not_a_name(
    text: str, known: frozenset[str], expected: list[str]
) -> None:
    assert people(text, set(), known) == expected


def test_a_memorized_conversation_is_counted_and_named(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        "acme",
        {
            "s-1": ("2026-03-01", [("Ilse", "We sailed to the lighthouse today, so windy!")]),
            "s-2": (
                "2026-04-12",
                [
                    ("Ilse", "Two goats came with me to the lighthouse picnic."),
                    ("Tomas", "Lots of people at the lighthouse then?"),
                    ("Ilse", "Lots of them were from Bergen. All four goats of mine loved it."),
                ],
            ),
            "s-3": ("2026-05-03", [("Tomas", "Instead of the lighthouse I sailed to Skye.")]),
        },
    )
    with ChatSession(kb, "acme") as chat:
        times = chat.send("How many times has Ilse been to the lighthouse in 2026?")
        goats = chat.send("How many goats does Ilse have?")
    assert times.answer.split("\n", 1)[0] == "twice", times.answer
    assert goats.answer.split("\n", 1)[0] == "four", goats.answer
