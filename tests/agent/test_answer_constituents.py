"""The span cut to the constituent the question's form asks for: the name a noun is given
or the phrase set beside it, the object of the asked verb when an adverb, a verb of aspect,
a particle or a possessive subject stands around it, and the last conjunct of a phrase in a
clause of its own. Synthetic sentences through the real functions."""

from __future__ import annotations

import re

import pytest
from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer
from kbmem.research.phrases import asked_verb, noun_phrase, verb_object
from kbmem.research.spans import coordinated
from kbmem.research.what import (
    equated,
    equated_noun,
    passive_agent,
    said_about,
    superlative,
)
from kbmem.research.why import reason_given


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The name given to the noun says which one it is, more than its kind.
        ('We danced a slow piece called "Tide Lines." It went well.', "Tide Lines"),
        ("Last night we played this piece Morning Star for hours.", "Morning Star"),
        # A phrase set beside the noun after a dash or a colon says what it is.
        (
            "I'm writing a new piece - a ballad set in a fishing town.",
            "a ballad set in a fishing town",
        ),
        ("I've got lots of old pieces- waltzes, reels and jigs.", "waltzes, reels and jigs"),
        # A clause after the dash is said of the noun, no name of it: the modifiers answer.
        ("We rehearsed a slow piece - it was hard.", "slow piece"),
        ("I love old pieces - check out this clip of my band playing them.", "old pieces"),
        ("It's for a good piece - to help the lifeboat crews.", "to help the lifeboat crews"),
        ("We rehearsed a slow piece on Monday.", "slow piece"),
    ],
)
def test_a_noun_is_answered_by_its_name_or_the_phrase_beside_it(text: str, expected: str) -> None:
    assert noun_phrase(text, "piece", {"piece"}) == expected


@pytest.mark.parametrize(
    ("question", "verb"),
    [
        ("What did Ilse just finish last Friday?", "finish"),
        ("What has Tomas started learning?", "learning"),
        ("What is Tomas trying out to get stronger?", "trying"),
        ("What does Ilse's ring symbolize?", "symbolize"),
        # After a form of "be", a word that is no -ing form names a state, not a deed.
        ("What is Ilse excited about?", ""),
    ],
)
def test_the_asked_verb_is_found_around_adverbs_aspect_particles_and_possessives(
    question: str, verb: str
) -> None:
    from kbmem.index.tenant import analyze

    assert asked_verb(question) == set(analyze(verb))


def test_the_asked_verb_s_object_after_its_particle() -> None:
    text = "I'm also trying out pilates to get a little stronger."
    assert verb_object("What is Tomas trying out to get stronger?", text, set()) == "pilates"
    text = "I've started learning how to play the fiddle, it's hard."
    assert verb_object("What has Tomas started learning?", text, set()) == "play the fiddle"


def test_a_phrase_in_a_clause_of_its_own_keeps_its_last_conjunct() -> None:
    tokens = "Besides classes and talks , I'm offering coaching and tuition to help them .".split()
    a = tokens.index("coaching")
    # Not an item of the list before the comma: its own conjunct, to the preposition.
    assert coordinated(tokens, a, a) == (a, tokens.index("tuition"))


@pytest.mark.parametrize(
    ("question", "noun"),
    [
        ("What was Ilse's favourite sailing memory?", "memory"),
        ("What is Tomas's main focus in local politics?", "focus"),
        ("What was grandpa's gift to Ilse?", "gift"),
        # Ending in a preposition, the question asks for its object instead.
        ("What was the talk that Ilse gave about?", ""),
        # A verb after the subject: no noun equated with the answer.
        ("What did Ilse make?", ""),
    ],
)
def test_the_noun_a_what_is_question_equates_its_answer_with(question: str, noun: str) -> None:
    assert equated_noun(question) == noun


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The complement of "be" after the noun, not its modifiers (the question's words).
        (
            "My fave memory was when our crew won the regatta at age nine.",
            "our crew won the regatta at age nine",
        ),
        # The subject "be" equates with the noun, after a dash or not.
        ("This ring is so dear to me - a gift from my grandpa.", "ring"),
        ("That compass was a gift from my grandpa.", "compass"),
        ("I love my grandpa, he gave me many a gift.", ""),
    ],
)
def test_what_a_sentence_equates_the_noun_with(text: str, expected: str) -> None:
    noun = "memory" if "memory" in text else "gift"
    assert equated(text, noun, {"fave", "memory", "gift", "grandpa"}) == expected


def test_my_in_a_line_cut_from_one_sentence_is_said_as_the_speaker_s() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Ilse", "Our puppy Rex is such a rascal."),
        ("Ilse", "He hid his ball in my boot once!"),
    )
    assert direct_answer("Where did Rex hide his ball once?", [item]).line.split(" (")[0] == (
        "Ilse's boot"
    )


def test_a_question_asking_its_verb_s_subject_is_answered_by_the_passive_s_agent() -> None:
    text = "Our old harbour was hit by a nasty storm last week."
    assert passive_agent("What disaster affected the old harbour?", text, {"harbour"}) == (
        "nasty storm"
    )
    # Asked for the verb's object, the agent is no answer.
    assert passive_agent("What did the storm hit?", text, set()) == ""


def test_a_superlative_asked_is_answered_by_the_one_the_sentence_equates_with() -> None:
    text = "I hit all kinds of snags - rigging, weather... but the worst was seasickness."
    question = "What was one of the biggest problems Tomas faced on the crossing?"
    assert superlative(question, text, set()) == "seasickness"
    assert equated_noun(question) == "problems"
    # Words in -est that are no superlative ask for none.
    assert superlative("What was Tomas's main interest?", "The interest is high.", set()) == ""


def test_a_noun_the_verb_do_takes_is_an_activity() -> None:
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Ilse", "We love sketching together lately, especially the harbour boats."),
    )
    line = direct_answer("What creative project do Ilse and her kids do together?", [item]).line
    assert line.split(" (")[0] == "sketching"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "Since" with what holds now gives a reason, which ends at the main clause.
        ("Yeah, since I'm allergic to nuts I'm baking with oat flour.", "I'm allergic to nuts"),
        ("I stay in since we don't have a car.", "we don't have a car"),
        # With a time or a past event it says when.
        ("I have sailed since I moved here in 2019.", ""),
        ("I have sailed since 2019.", ""),
        # The reason's own object pronouns do not end it.
        ("I kept it because I love it so much.", "I love it so much"),
    ],
)
def test_since_gives_a_reason_when_its_clause_says_what_holds_now(text: str, expected: str) -> None:
    assert reason_given(text) == expected


def test_a_dash_after_the_verb_sets_its_object_beside_it() -> None:
    text = "I got some great news to share - I joined a rowing club last week!"
    assert verb_object("What news did Ilse share?", text, {"news"}) == "joined a rowing club"


def test_a_clause_after_a_comma_with_a_contracted_subject_is_no_list_item() -> None:
    text = "Since we talked last, I've been writing about tides and the weather."
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    a = tokens.index("tides")
    assert coordinated(tokens, a, a) == (a, tokens.index("weather"))


def test_a_kind_asked_is_taken_from_a_near_sentence_by_the_question_s_grammar() -> None:
    # The best sentence names no topic; the next says the stranded preposition's object.
    item = turns_item(
        "s1",
        "2024-07-02T09:00:00",
        ("Tomas", "Recently, tide tables and harbour charts."),
        ("Tomas", "Since we talked last, I've been blogging about sailing and the weather."),
    )
    line = direct_answer("What topic has Tomas been blogging about recently?", [item]).line
    assert line.split(" (")[0] == "sailing and the weather"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We made bowls and cups.", "bowls and cups"),
        ("We made bowls and plates for the fair.", "bowls and plates"),
        # What follows the conjunction goes on: a clause of its own, no conjunct.
        ("We made bowls and went home.", "bowls"),
        ("We made bowls and it was fun.", "bowls"),
    ],
)
def test_the_verb_s_object_keeps_the_one_word_its_and_joins(text: str, expected: str) -> None:
    assert verb_object("What did Ilse make?", text, set()) == expected


def test_what_is_said_about_a_topic_is_the_complement_linked_to_it() -> None:
    question = "What did Tomas say about rowing at dawn?"
    text = "Rowing at dawn is the best way to start a day - trust me."
    assert said_about(question, text) == "the best way to start a day"
    # A linking verb before any word of the topic says something else.
    assert said_about(question, "It is early, but rowing at dawn helps.") == ""
    assert said_about("What did Tomas row at dawn?", text) == ""
