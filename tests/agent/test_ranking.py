"""The one ranking of the briefing's sentences (kbmem.research.ranking): its signals on turns
written for these tests (real page text, the real bundled model), and the offline agent's
quotes following it on the example knowledge base (real index, real research)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.evidence import turns_item
from helpers.talk import memorize
from helpers.turns import TENANT

from kbmem.agent.session import ChatSession
from kbmem.research.direct import direct_answer
from kbmem.research.ranking import Ranking
from kbmem.research.researcher import Researcher
from kbmem.research.said import read_sentences
from kbmem.store.repository import KnowledgeBase


def test_a_turn_that_answers_a_question_is_read_as_a_reply() -> None:
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Tomas", "The boathouse looks new. What made you pick that green?"),
        ("Ilse", "It matches the pines. I also fixed the door."),
    )
    said = read_sentences([item])
    assert [(s.text, s.replies) for s in said] == [
        ("The boathouse looks new.", False),
        ("What made you pick that green?", False),
        ("It matches the pines.", True),
        ("I also fixed the door.", False),
    ]


def test_a_reply_that_opens_with_thanks_answers_in_its_next_sentence() -> None:
    # Asked with a shared image after the question; answered after "Thanks, Tomas!".
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Tomas", "How often do you row? [shares an image: a photo of a boat]"),
        ("Ilse", "Thanks, Tomas! Three times a week, it keeps me fit."),
    )
    said = read_sentences([item])
    assert [(s.text, s.replies, s.before) for s in said[1:]] == [
        ("Thanks, Tomas!", True, said[0].text),
        ("Three times a week, it keeps me fit.", True, said[0].text),
    ]


def test_a_reply_after_an_acknowledgement_ranks_for_the_question_it_answers() -> None:
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Ilse", "The regatta was wild, my crew raced the whole lake."),
        ("Tomas", "Any songs that keep your crew going when you race?"),
        ("Ilse", "Yeah totally! Rolling in the Deep by Adele has a lot of meaning for us."),
        ("Ilse", "We also race on the lake in May."),
    )
    ranking = Ranking("Which song keeps Ilse's crew going in a race?", read_sentences([item]))
    assert "Adele" in ranking.best().text, [(sc, s.text) for sc, _sh, s in ranking.ranked]


def test_a_compound_written_whole_says_the_question_s_words_written_apart() -> None:
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Ilse", "We did a long roadtrip along the coast last month."),
        ("Tomas", "The coast is lovely in spring."),
        ("Ilse", "The trip ended badly, the van broke down on the road."),
    )
    ranking = Ranking("Where did Ilse go on her road trip?", read_sentences([item]))
    assert "roadtrip" in ranking.best().text, [(sc, s.text) for sc, _sh, s in ranking.ranked]


def test_a_reply_says_the_words_of_the_question_it_answers() -> None:
    # "Charades and a scavenger hunt." says no word of the question; it answers it.
    item = turns_item(
        "s1",
        "2024-03-01T09:00:00",
        ("Ilse", "We had a picnic by the lake with the church group, it was great."),
        ("Tomas", "What games did you play at the picnic?"),
        ("Ilse", "Charades and a scavenger hunt."),
    )
    answer = direct_answer("What games did Ilse play at the picnic?", [item])
    assert "scavenger hunt" in answer.line


def test_asked_about_a_speaker_their_words_come_before_another_s() -> None:
    # Tomas's sentence says more of the question's words, and comes first; Ilse's is hers.
    items = [
        turns_item(
            "s1", "2024-03-01T09:00:00", ("Tomas", "We baked rye bread for the harbour fair.")
        ),
        turns_item("s2", "2024-03-02T09:00:00", ("Ilse", "I made a plum tart for the fair.")),
    ]
    ranking = Ranking("What did Ilse bake for the harbour fair?", read_sentences(items))
    assert ranking.best().speaker == "Ilse", [(sc, s.text) for sc, _sh, s in ranking.ranked]


def test_a_year_the_correction_states_too_is_no_stale_value() -> None:
    # "21 April 2026, not 14 April 2026": 14 April is stale, 2026 is not.
    item = turns_item(
        "s1",
        "2026-02-23T09:00:00",
        ("Priya", "Correction: the launch is Tuesday 21 April 2026, not Tuesday 14 April 2026."),
        ("Priya", "The offsite was pencilled in for a spring week after the launch."),
        ("Priya", "The offsite is booked for Tuesday 28 April 2026."),
    )
    ranking = Ranking("When is the offsite?", read_sentences([item]))
    assert ranking.best().text == "The offsite is booked for Tuesday 28 April 2026."


def test_a_replaced_value_said_again_in_the_correction_still_states_the_other_thing() -> None:
    # "…, not 14 April; 14 April is the Expo": the first 14 April is replaced, the second
    # says when the Expo is.
    item = turns_item(
        "s1",
        "2026-02-23T09:00:00",
        (
            "Priya",
            "Correction: the launch is Tuesday 21 April 2026, not 14 April; 14 April is the "
            "Maritime Expo preview in Inverness.",
        ),
    )
    got = direct_answer("When is the Maritime Expo preview?", [item]).line
    assert got.startswith("Tuesday 14 April 2026"), got


def test_the_quotes_follow_the_direct_answer_s_ranking(kb: KnowledgeBase) -> None:
    question = "When is the offsite?"
    researcher = Researcher(kb, TENANT)
    try:
        ranked = researcher.research(question).answer.ranked  # type: ignore[union-attr]
    finally:
        researcher.close()
    with ChatSession(kb, TENANT) as chat:
        answer = chat.send(question).answer
    quotes = [line for line in answer.splitlines() if line.startswith("- ")]
    places = [
        next((n for n, s in enumerate(ranked) if " ".join(s.text.split()[:4]) in q), None)
        for q in quotes
    ]
    assert quotes and places[0] == 0, (answer, [s.text for s in ranked[:5]])
    found = [p for p in places if p is not None]
    assert found == sorted(found), (answer, [s.text for s in ranked[:5]])


def test_a_speaker_s_sentence_counts_for_them_in_any_person(empty_kb: KnowledgeBase) -> None:
    # Ilse names her goats without saying "I" or "my", and Tomas's sentence shares more of
    # the question's words: her sentences still answer a question about her goats.
    memorize(
        empty_kb,
        TENANT,
        {
            "s-goats": (
                "2026-03-01",
                [
                    ("Tomas", "Goats everywhere at the fair, the goats even had names on tags."),
                    ("Ilse", "We keep two goats at the boathouse now."),
                    ("Ilse", "The old one is Pepper, and Juniper butts everyone."),
                ],
            )
        },
    )
    researcher = Researcher(empty_kb, TENANT)
    try:
        answer = researcher.research("What are the names of Ilse's goats?").answer
    finally:
        researcher.close()
    assert answer is not None
    assert "Pepper" in answer.line and "Juniper" in answer.line, answer.line
    said = read_sentences([turns_item("s1", "2026-03-01T10:00:00", ("Ilse", "We keep goats."))])
    own = Ranking("What goats does Ilse keep?", said).weigher
    # "We" opens the sentence: it is Ilse's, in the first person, and says all of it.
    assert own.share(said[0]) == pytest.approx(1.0)  # a sum over a set: any order


_SHARES_PROBE = """
from helpers.evidence import turns_item
from kbmem.research.ranking import Weigher
from kbmem.research.said import read_sentences
texts = [
    "The harbour regatta near Ghent had violins, lanterns, pancakes and a brass band, kites,"
    " tulips, waffles and ferries.",
    "Lanterns and pancakes at a regatta sound lovely.", "Kites and tulips.",
    "Waffles, ferries and violins.",
]
item = turns_item(
    "s1", "2024-03-01T09:00:00",
    *[("Ilse" if n % 2 == 0 else "Tomas", t) for n, t in enumerate(texts)],
)
sentences = read_sentences([item])
weigher = Weigher(
    "Which violins, lanterns, pancakes, regatta, harbour, brass band, kites, tulips, waffles,"
    " ferries did Ilse enjoy near Ghent?",
    sentences,
)
print(repr(weigher.whole), [repr(weigher.share(s)) for s in sentences])
"""


def test_a_sentence_s_share_is_the_same_in_every_process() -> None:
    # The question's terms are a set, iterated in an order that string hashing salts per
    # process; a share summed in that order differed in its last bits from run to run, and a
    # share landing on a threshold made one answer firm in one run and weak in another.
    tests_dir = str(Path(__file__).resolve().parents[1])
    outputs = set()
    for seed in range(8):
        env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": tests_dir}
        done = subprocess.run(
            [sys.executable, "-c", _SHARES_PROBE],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1, outputs
