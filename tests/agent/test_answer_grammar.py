"""The direct answer read by the question's grammar: a list question's items are things of
the kind it asks for (its verb's object, a noun of the kind asked, a title, a name), not
fragments; a "how" question is answered by a means ("by …") or by what a linking verb says
("looks amazing"); a time the question names at its end does not hide the preposition it
ends in. On synthetic turns (no index), then end to end on a memorized conversation with the
real indexes and the offline agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.evidence import turns_item
from helpers.talk import memorize

from kbmem.agent.session import ChatSession
from kbmem.memorize.template import init_kb
from kbmem.research.direct import direct_answer
from kbmem.research.grammar import asked_noun, untimed
from kbmem.research.how import manner


def _line(answer: str) -> str:
    """The first line without its "(weak evidence)" tag."""
    return answer.split("\n", 1)[0].split(" (")[0]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "What kind of job did Ilse get accepted for on 3 May, 2024?",
            "What kind of job did Ilse get accepted for?",
        ),
        ("What did Tomas do last weekend?", "What did Tomas do?"),
        ("What did Ilse take part in in July 2024?", "What did Ilse take part in?"),
        # A preposition the question ends in with no time after it stays.
        ("What is Tomas working on?", "What is Tomas working on?"),
    ],
)
def test_a_time_at_the_question_s_end_is_read_apart(question: str, expected: str) -> None:
    assert untimed(question) == expected


def test_the_noun_asked_about_comes_before_a_phrase_that_qualifies_it() -> None:
    assert asked_noun("What events for veterans has Tomas joined?") == "events"
    assert asked_noun("What kind of flooring does Ilse want?") == "flooring"


def test_how_is_answered_by_the_means_or_the_linking_verb_s_complement() -> None:
    assert manner("I stay calm by breathing slowly and counting my steps.", set()) == (
        "by breathing slowly and counting my steps"
    )
    assert manner("The new studio looks really amazing.", {"studio"}) == "amazing"
    # What the subject is doing is no state; what the question says is no answer.
    assert manner("I'm still searching for a place.", set()) == ""
    assert manner("The studio is a studio.", {"studio"}) == ""


@pytest.mark.parametrize(
    ("turns", "question", "expected"),
    [
        (  # "where has …?" asks for the places gathered, each once
            [
                ("Ilse", "We camped in the mountains last week, it was lovely."),
                ("Tomas", "Did you camp anywhere else?"),
                ("Ilse", "Yes, we camped at the lake and in the mountains again."),
            ],
            "Where has Ilse camped?",
            "the lake, the mountains",
        ),
        (  # a list gathers what the asked verb takes (in the order its sentences rank)
            [
                ("Ilse", "Yes, I play the cello!"),
                ("Tomas", "Your band played so well at the fair, the crowd loved the music."),
                ("Ilse", "These days I also play the banjo with my band."),
            ],
            "What instruments does Ilse play?",
            "banjo, cello",
        ),
        (  # the object of the stranded preposition, the date at the end aside
            [
                ("Ilse", "Big news - I just got accepted for a museum internship!"),
                ("Tomas", "That sounds like a wonderful kind of job."),
            ],
            "What kind of job did Ilse get accepted for on 2 July, 2024?",
            "museum internship",
        ),
        (  # "how" asks for what a linking verb says
            [
                ("Ilse", "Tomas opened his studio yesterday."),
                ("Ilse", "The pottery studio looks amazing."),
            ],
            "How does Ilse describe the pottery studio?",
            "amazing",
        ),
        (  # "how often" asks for a frequency, not the first number said
            [
                ("Tomas", "One of my kids loves the lido."),
                ("Tomas", "We go to the lido a few times a week in summer."),
            ],
            "How often does Tomas go to the lido?",
            "a few times a week",
        ),
        (
            [("Ilse", "We don't go to the coast often, usually only once or twice a year.")],
            "How often does Ilse go to the coast?",
            "once or twice a year",
        ),
        (  # the noun phrase before the question's own phrase of a preposition
            [
                ("Tomas", "How did the chess season go?"),
                ("Ilse", "Here's one of my medals from the chess club, a nice reminder."),
            ],
            "What did Ilse receive from the chess club?",
            "medals",
        ),
        (  # modifiers coordinated are the kind asked, all of them
            [
                ("Tomas", "Is the studio finished?"),
                ("Ilse", "Yes! The studio has red and purple lighting now."),
            ],
            "What kind of lighting does Ilse's studio have?",
            "red and purple lighting",
        ),
        (  # with the short phrase that completes the noun, closing its clause
            [("Ilse", "I'm hoping to build a safe, quiet place for people to rest.")],
            "What kind of place does Ilse want to build?",
            "safe, quiet place for people to rest",
        ),
        (  # "something" announces what was done; the speaker's next sentence says it,
            # the question's verb there in another form and with its preposition
            [
                ("Tomas", "Have you tried anything new lately?"),
                (
                    "Ilse",
                    "Last weekend I did something new that moved me. "
                    "I participated in a rowing regatta for the lifeboat crews.",
                ),
            ],
            "What did Ilse participate in last weekend?",
            "rowing regatta",
        ),
    ],
    ids=[
        "where-has",
        "list-of-objects",
        "stranded-before-a-date",
        "how-linking-verb",
        "how-often",
        "how-often-either",
        "head-before-its-phrase",
        "kind-coordinated-and",
        "kind-coordinated-comma",
        "announced-then-told",
    ],
)
def test_the_line_follows_the_question_s_grammar(
    turns: list[tuple[str, str]], question: str, expected: str
) -> None:
    item = turns_item("s1", "2024-07-02T09:00:00", *turns)
    assert _line(direct_answer(question, [item]).line) == expected


def test_a_memorized_conversation_is_answered_by_the_question_s_grammar(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        "acme",
        {
            "s-music": (
                "2026-03-01",
                [
                    ("Tomas", "Do you still make music?"),
                    ("Ilse", "Yes, I play the cello every evening!"),
                    ("Tomas", "The fair was lovely, the crowd sang along all night."),
                    ("Tomas", "Have you tried anything new lately?"),
                    (
                        "Ilse",
                        "Last weekend I did something new that moved me. "
                        "I participated in a rowing regatta for the lifeboat crews.",
                    ),
                ],
            ),
            "s-calm": (
                "2026-03-08",
                [
                    ("Tomas", "Races make me so nervous."),
                    (
                        "Ilse",
                        "I stay calm before a race by breathing slowly and counting my steps.",
                    ),
                    ("Ilse", "Lately I play the banjo with my band too."),
                    ("Ilse", "Here's one of my trophies from the river race, a nice reminder."),
                ],
            ),
        },
    )
    with ChatSession(kb, "acme") as chat:
        played = chat.send("What instruments does Ilse play?")
        calm = chat.send("How does Ilse stay calm before a race?")
        won = chat.send("What did Ilse bring home from the river race?")
        took_part = chat.send("What did Ilse participate in last weekend?")
    assert sorted(_line(played.answer).split(", ")) == ["banjo", "cello"], played.answer
    assert _line(calm.answer) == "by breathing slowly and counting my steps", calm.answer
    assert _line(won.answer) == "trophies", won.answer
    assert _line(took_part.answer) == "rowing regatta", took_part.answer


@pytest.mark.parametrize(
    ("turns", "question", "expected"),
    [
        (  # the reason is the clause that says what the question does not
            [("Tomas", "I didn't finish the Berlin marathon, my knee gave out.")],
            "Did Tomas finish the Berlin marathon?",
            "No; my knee gave out",
        ),
        (  # a sentence saying only the question's words is its own reason
            [("Tomas", "Yes, I finished the Berlin marathon on Sunday!")],
            "Did Tomas finish the Berlin marathon?",
            "Yes; I finished the Berlin marathon on Sunday",
        ),
        (  # a picture's caption is what was shown; "look at this" says nothing itself
            [("Tomas", "Look at this! [shares an image: a photo of a medal from the marathon]")],
            "Did Tomas get a medal at the marathon?",
            "Yes; a photo of a medal from the marathon",
        ),
        (  # "would" asks for an inference: hedged
            [("Ilse", "I never want to touch clay again, the pottery class was a mess.")],
            "Would Ilse enjoy a pottery class?",
            "Likely no; I never want to touch clay again",
        ),
        (  # evidence that says little of the question gives no reason, and says it is weak
            [("Ilse", "The weather was lovely at the harbour.")],
            "Would Ilse enjoy a pottery class at the harbour?",
            "Likely yes (weak evidence)",
        ),
    ],
    ids=["negated", "echo", "caption", "hedged", "weak"],
)
def test_yes_or_no_gives_its_reason_in_the_evidence_s_words(
    turns: list[tuple[str, str]], question: str, expected: str
) -> None:
    item = turns_item("s1", "2024-07-02T09:00:00", *turns)
    assert direct_answer(question, [item]).line == expected
