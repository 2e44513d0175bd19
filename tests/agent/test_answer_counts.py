"""A count said as an ordinal: "my third chess tournament" is the third of them so far, so
"how many" is answered by the largest ordinal said before the counted noun, named as the
question names it; asked "how many times", an occasion told again on a later day (its "last
week" reaching the day of one already counted) counts once. On synthetic turns (no index),
then end to end on a memorized conversation with the real indexes and the offline agent."""

from __future__ import annotations

import datetime
from pathlib import Path

from helpers.evidence import turns_item
from helpers.talk import memorize

from kbmem.agent.session import ChatSession
from kbmem.memorize.template import init_kb
from kbmem.research.counts import counted
from kbmem.research.direct import direct_answer
from kbmem.research.ranking import Ranking
from kbmem.research.said import read_sentences
from kbmem.research.types import EvidenceItem


def counted_line(question: str, items: list[EvidenceItem]) -> str:
    """The count with what it counts (the days, the things), which the direct answer's
    line gives alone."""
    found = counted(Ranking(question, read_sentences(items)))
    return found.line if found else ""


FIRST = "I won my first chess tournament today!"
THIRD = "Guess what, I won my third chess tournament this weekend."
QUESTION = "How many chess tournaments has Tomas won?"


def test_the_largest_ordinal_before_the_counted_noun_is_the_count() -> None:
    items = [
        turns_item("s1", "2024-03-01T09:00:00", ("Tomas", FIRST)),
        turns_item("s2", "2024-05-01T09:00:00", ("Tomas", THIRD)),
    ]
    assert counted_line(QUESTION, items) == "three chess tournaments"


def test_a_memorized_conversation_counts_by_the_ordinal_said(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        "acme",
        {
            "s-first": ("2026-03-01", [("Ilse", "Big day?"), ("Tomas", FIRST)]),
            "s-third": ("2026-05-03", [("Ilse", "You look happy!"), ("Tomas", THIRD)]),
        },
    )
    with ChatSession(kb, "acme") as chat:
        counted = chat.send(QUESTION)
    assert counted.answer.split("\n", 1)[0] == "three", counted.answer


LAKE = [
    ("2026-06-01", "Ilse", "I went to the lake today, the water was cold!"),
    ("2026-06-20", "Ilse", "I went to the lake again this morning."),
    ("2026-06-27", "Ilse", "The lake last week was so calm, I loved going there."),
]
TIMES = "How many times has Ilse gone to the lake?"


def test_an_occasion_told_again_later_counts_once() -> None:
    # The third telling's "last week" reaches 20 June, the second occasion's day.
    items = [
        turns_item(f"s{n}", f"{day}T09:00:00", (who, said))
        for n, (day, who, said) in enumerate(LAKE)
    ]
    assert counted_line(TIMES, items) == "twice: 1 June, 20 June 2026"


def test_a_memorized_conversation_counts_an_occasion_told_again_once(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        "acme",
        {
            f"s-{n}": (day, [("Tomas", "How are you?"), (who, said)])
            for n, (day, who, said) in enumerate(LAKE)
        },
    )
    with ChatSession(kb, "acme") as chat:
        counted = chat.send(TIMES)
    assert counted.answer.split("\n", 1)[0] == "twice", counted.answer


def test_a_count_said_is_kept_as_said_and_a_count_made_is_written_in_words() -> None:
    # The speaker's digits stay digits; a count made by counting days is said as a person
    # says how many times ("once", "twice", "three times").
    said = turns_item("s1", "2024-01-05T09:00:00", ("Ilse", "I own 3 kayaks now, all red."))
    assert counted_line("How many kayaks does Ilse own?", [said]) == "3 kayaks"
    once = [turns_item("s1", "2026-06-01T09:00:00", ("Ilse", LAKE[0][2]))]
    assert counted_line(TIMES, once) == "once: 1 June 2026"
    # Things counted are named as the question names them, one in the singular.
    ridge = [turns_item("s1", "2024-01-01T09:00:00", ("Ilse", "I climbed the Storr ridge."))]
    assert counted_line("How many ridges has Ilse climbed?", ridge).startswith("one ridge: ")


def test_once_and_twice_said_are_counts_of_times() -> None:
    # "Twice" is two times in one word: said of the thing asked, it is the count, as "three
    # times" is; "once or twice a year" is a frequency, and "once I'm there" a conjunction.
    def answered(said: str) -> str:
        return counted_line(TIMES, [turns_item("s1", "2026-06-01T09:00:00", ("Ilse", said))])

    assert answered("I have been to the lake twice this summer.") == "twice"
    assert answered("I went to the lake once, last June.") == "once"
    assert answered("We go to the lake once or twice a year.") == "once: 1 June 2026"
    assert answered("Once I get to the lake I relax.") == "once: 1 June 2026"
    assert answered("I swim in the lake once in a while.") == "once: 1 June 2026"


def test_a_count_said_grows_by_each_later_telling_of_one_more() -> None:
    # "My first tournament" counts one on its day; "another chess tournament" told on a
    # later day is one more. "Another great memory" is one more of something else, and a
    # telling before the count said is already in it.
    def answered(*said: tuple[str, str]) -> str:
        items = [
            turns_item(f"s{n}", f"{day}T09:00:00", ("Tomas", text))
            for n, (day, text) in enumerate(said)
        ]
        return counted_line(QUESTION, items)

    again = ("2024-05-01", "Won another chess tournament this weekend!")
    assert answered(("2024-03-01", FIRST), again) == "two chess tournaments"
    other = ("2024-05-01", "My third chess tournament win was amazing, another great memory.")
    assert answered(("2024-03-01", THIRD), other) == "three chess tournaments"
    assert answered(("2024-01-01", again[1]), ("2024-03-01", FIRST)) == "one chess tournament"


def test_what_may_happen_is_not_an_occasion_that_happened() -> None:
    # Asked how many times, a telling of what will or may happen ("a few will be
    # rejected", "if I can find one") is not a time it happened.
    said = [
        ("2026-06-01", "My script got rejected by a big studio, what a blow."),
        ("2026-07-01", "Another rejection today: my script got rejected again."),
        ("2026-08-01", "I sent my script to ten studios, I assume a few will be rejected."),
    ]
    items = [
        turns_item(f"s{n}", f"{day}T09:00:00", ("Ilse", text), ("Nate", "Your script is great!"))
        for n, (day, text) in enumerate(said)
    ]
    asked = "How many times was Ilse's script rejected?"
    assert counted_line(asked, items) == "twice: 1 June, 1 July 2026"


def test_an_occasion_is_told_by_every_noun_the_question_names_it_by() -> None:
    # "Taken his turtles on a walk" is not told by walking a dog, though "walk" is the
    # rarer of the question's nouns.
    said = [
        ("2026-06-01", "I took my turtles out for a walk by the pond."),
        ("2026-06-05", "My turtles love their new tank."),
        ("2026-06-10", "I took my dog Max for a walk in the park."),
        ("2026-06-15", "I fed my turtles some strawberries."),
        ("2026-06-20", "I took the turtles for a walk again, they loved the sun."),
    ]
    items = [
        turns_item(f"s{n}", f"{day}T09:00:00", ("Nate", text)) for n, (day, text) in enumerate(said)
    ]
    asked = "How many times has Nate taken his turtles on a walk?"
    assert counted_line(asked, items) == "twice: 1 June, 20 June 2026"


def test_no_number_said_each_day_telling_of_one_counts_one() -> None:
    # Nobody says how many letters: each day the asked person tells of receiving one, in
    # their own words, is one more letter; a letter only hoped for is none.
    said = [
        ("2026-06-01", "I got a rejection letter from a big studio today."),
        ("2026-07-01", "Someone wrote me a lovely letter after reading my blog post."),
        ("2026-08-01", "Maybe a producer will send me a letter soon."),
    ]
    items = [
        turns_item(f"s{n}", f"{day}T09:00:00", ("Ilse", text), ("Nate", "That's amazing!"))
        for n, (day, text) in enumerate(said)
    ]
    letters = counted_line("How many letters has Ilse received?", items)
    assert letters == "two letters: 1 June, 1 July 2026"


def test_a_count_holds_its_number_what_it_counts_and_the_days_apart() -> None:
    # The count alone and the count with its days are both written from the same parts,
    # not one read back out of the other.
    said = [
        ("2026-06-01", "I got a rejection letter from a big studio today."),
        ("2026-07-01", "Someone wrote me a lovely letter after reading my blog post."),
    ]
    items = [
        turns_item(f"s{n}", f"{day}T09:00:00", ("Ilse", text)) for n, (day, text) in enumerate(said)
    ]
    found = counted(Ranking("How many letters has Ilse received?", read_sentences(items)))
    assert found is not None
    assert (found.written, found.noun) == ("two", "letters")
    assert found.days == (datetime.date(2026, 6, 1), datetime.date(2026, 7, 1))
    assert [s.day for s in found.sources] == list(found.days)


def test_the_direct_answer_is_the_count_alone() -> None:
    # The question names what it counts: "how many turtles?" is answered "three", "how many
    # times?" "twice" or "three times"; the days and things counted are in the sentences.
    turtles = [turns_item("s1", "2024-01-05T09:00:00", ("Nate", "I have three turtles now."))]
    assert direct_answer("How many turtles does Nate have?", turtles).line == "three"
    items = [
        turns_item(f"s{n}", f"{day}T09:00:00", (who, said))
        for n, (day, who, said) in enumerate(LAKE)
    ]
    assert direct_answer(TIMES, items).line == "twice"
    thrice = [
        turns_item(f"s{n}", f"2026-0{n + 1}-01T09:00:00", ("Ilse", "I went to the lake today."))
        for n in range(3)
    ]
    assert direct_answer(TIMES, thrice).line == "three times"


_COUNT_IN_A_PROCESS = """
import sys
from helpers.evidence import turns_item
from kbmem.research.counts import counted
from kbmem.research.ranking import Ranking
from kbmem.research.said import read_sentences
items = [
    turns_item("s1", "2026-06-01T09:00:00",
               ("Ilse", "I took the dog to the lake today, so much fun!")),
    turns_item("s2", "2026-06-20T09:00:00",
               ("Ilse", "The dog was great today, and next week we will see the lake.")),
]
question = "How many times has Ilse taken the dog to the lake?"
found = counted(Ranking(question, read_sentences(items)))
print(found.line if found else "")
"""


def test_a_count_is_the_same_in_every_process() -> None:
    """ "dog" and "lake" weigh alike here, and which one the count follows decides whether
    the second day (the lake only to come) counts: the choice must not hang on the order
    of a set, which changes with each process's hash seed."""
    import os
    import subprocess
    import sys

    tests = Path(__file__).resolve().parents[1]
    lines = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        env["PYTHONPATH"] = os.pathsep.join(
            [str(tests), str(tests.parent), env.get("PYTHONPATH", "")]
        )
        done = subprocess.run(
            [sys.executable, "-c", _COUNT_IN_A_PROCESS],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        lines.add(done.stdout.strip())
    assert len(lines) == 1, lines


def test_a_thing_named_as_already_known_is_not_another_one() -> None:
    # "The screenplay I sent in" is the one finished before, not a second one; "another
    # one" and "a screenplay" introduce new ones.
    said = [
        ("2026-01-23", "I finally finished my first full screenplay last Friday."),
        ("2026-02-07", "The screenplay I sent in to the festival has been on my mind all day."),
        ("2026-02-25", "I loved the screenplay, so I just started writing another one."),
        ("2026-06-05", "I wrote a few bits for a screenplay that appeared on TV yesterday!"),
    ]
    items = [
        turns_item(f"s{n}", f"{day}T09:00:00", ("Ilse", text)) for n, (day, text) in enumerate(said)
    ]
    written = counted_line("How many screenplays has Ilse written?", items)
    assert written == "three screenplays: 23 January, 25 February, 5 June 2026"


def test_a_hope_or_plan_is_not_an_occasion_that_happened() -> None:
    # "Hoping to get back to the lake" tells what Ilse wants to happen, not a time she went.
    said = [
        ("2026-06-01", "I went to the lake today, the water was cold!"),
        ("2026-06-20", "I'm really hoping to get back to the lake soon."),
        ("2026-07-01", "I went to the lake again this morning."),
    ]
    items = [
        turns_item(f"s{n}", f"{day}T09:00:00", ("Ilse", text)) for n, (day, text) in enumerate(said)
    ]
    assert counted_line(TIMES, items) == "twice: 1 June, 1 July 2026"


def test_an_occasion_is_told_by_the_head_noun_of_the_question_s_phrase() -> None:
    # "The old lighthouse" is a lighthouse: a telling of "the lighthouse" names it, and the
    # word before the head only qualifies it.
    said = [
        ("2026-06-01", "I walked up to the lighthouse today, what a view!"),
        ("2026-07-01", "I went to the lighthouse again, windy as ever."),
    ]
    items = [
        turns_item(f"s{n}", f"{day}T09:00:00", ("Ilse", text)) for n, (day, text) in enumerate(said)
    ]
    asked = "How many times has Ilse been to the old lighthouse?"
    assert counted_line(asked, items) == "twice: 1 June, 1 July 2026"


def test_how_many_of_counts_the_days_what_is_asked_is_told_as_done() -> None:
    # "How many of her scripts …" names the things by a class the speaker does not repeat
    # ("a screenplay", "another movie script"); each day she tells, as done, that one made
    # it to the big screen is one of them. A hope is none, nor is a "big" boost.
    said = [
        ("2026-06-05", "I wrote a few bits for a screenplay that appeared on the big screen!"),
        ("2026-10-25", "Another movie script I worked on was shown on the big screen Sunday!"),
        ("2026-11-07", "I'm writing a new one and I'm hoping to get it on the big screen."),
        ("2026-11-09", "The pitch went well and it gave me a big confidence boost!"),
    ]
    items = [
        turns_item(f"s{n}", f"{day}T09:00:00", ("Ilse", text), ("Nate", "Wow, congrats!"))
        for n, (day, text) in enumerate(said)
    ]
    asked = "How many of Ilse's scripts have made it to the big screen?"
    assert counted_line(asked, items) == "two: 5 June, 25 October 2026"
