"""The quotes under the direct answer: a sentence each, not a turn; a list's items said in
different sessions each quoted; nothing quoted twice; the turns of one quote under one
citation. On a real knowledge base, with the real indexes and model."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from helpers.pool import read_pool
from helpers.talk import memorize

from kbmem.agent.offline import (
    ANSWER_HEAD,
    OfflineAgent,
    Reading,
    Sentence,
    question_terms,
    quotation,
)
from kbmem.agent.session import ChatSession
from kbmem.memorize.template import init_kb
from kbmem.research.direct import NOTHING as NOT_SAID
from kbmem.research.said import says_nothing
from kbmem.research.types import DirectAnswer
from kbmem.store.repository import KnowledgeBase

TENANT = "acme"
CITATION = re.compile(r"\[[^\]\s]+:L\d+-L\d+\]$")


@pytest.fixture
def chats(tmp_path) -> KnowledgeBase:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        TENANT,
        {
            "s-spring": (
                "2026-03-01",
                [
                    ("Ines", "How was your weekend, Omar?"),
                    (
                        "Omar",
                        "Busy! I fixed the fence in the morning. Then we went camping by the "
                        "lake with the kids. The neighbours lent us their big tent. My brother "
                        "called about his new job too.",
                    ),
                    ("Ines", "Sounds lovely."),
                ],
            ),
            "s-summer": (
                "2026-06-14",
                [
                    ("Ines", "Any news since we last talked?"),
                    ("Omar", "We went camping in the desert last week."),
                    ("Ines", "I would love to see that."),
                ],
            ),
            "s-winter": (
                "2026-12-05",
                [
                    ("Ines", "Did you rest over the holidays?"),
                    ("Omar", "We camped in the snowy forest."),
                ],
            ),
            "s-autumn": (
                "2026-09-20",
                [
                    ("Omar", "I started a pottery class on Tuesdays."),
                    ("Ines", "Nice! Anything else?"),
                    ("Omar", "Last month we camped on a glacier."),
                ],
            ),
        },
    )
    return kb


def quotes(answer: str) -> list[str]:
    return [line for line in answer.splitlines() if line.startswith("- ")]


def test_a_list_question_quotes_each_item_from_its_own_session(chats: KnowledgeBase) -> None:
    with ChatSession(chats, TENANT) as chat:
        record = chat.send("Where has Omar gone camping?")
    shown = quotes(record.answer)
    # Each place was said once, in a session of its own: each is quoted.
    for place in ("lake", "desert", "glacier", "forest"):
        assert any(place in line for line in shown), record.answer
    # Every quote is cited, and no turn is quoted twice.
    citations = [CITATION.search(line) for line in shown]
    assert all(citations), record.answer
    assert len({c.group(0) for c in citations if c}) == len(shown), record.answer


def test_a_quote_is_the_sentence_not_the_whole_turn(chats: KnowledgeBase) -> None:
    with ChatSession(chats, TENANT) as chat:
        record = chat.send("Where has Omar gone camping?")
    lake = [line for line in quotes(record.answer) if "lake" in line]
    assert lake, record.answer
    # Omar's turn says four things; the quote is the sentence about camping.
    assert "fence" not in lake[0] and "brother" not in lake[0], record.answer


def test_no_two_quotes_say_the_same(chats: KnowledgeBase) -> None:
    memorize(
        chats,
        TENANT,
        {
            "s-repeat": (
                "2026-12-20",
                [("Omar", "We went camping in the desert last week.")],
            )
        },
    )
    with ChatSession(chats, TENANT) as chat:
        record = chat.send("Where has Omar gone camping?")
    desert = [line for line in quotes(record.answer) if "desert" in line]
    # Said twice, in two sessions, word for word: quoted once.
    assert len(desert) == 1, record.answer


# The quotes as kbmem.agent.offline.quotation chooses them, from evidence built by hand: each
# turn's sentences are read in the order said, as the agent's reading pools them.


_read = read_pool


def _quoted(pool: list[Sentence], best: Sentence, question: str, dated: bool = False) -> str:
    direct = DirectAnswer(NOT_SAID, [], False, "thing")
    reading = Reading([best], [], [best], pool)
    return OfflineAgent._quotes(
        quotation(direct, reading, set(question_terms(question)), dated), ANSWER_HEAD
    )


def test_the_sentence_that_goes_on_about_the_quoted_one_is_quoted_with_it() -> None:
    pool = _read(
        (
            "Omar",
            "This necklace is special to me - a gift from my grandma. "
            "She gave it to me when I was young, and it stands for love and strength. "
            "I wear it every day at work.",
        ),
    )
    answer = _quoted(pool, pool[0], "What does Omar's necklace stand for?")
    # "She gave it to me …" names the necklace only by a pronoun: what it stands for is said
    # there, in the same turn, under the one citation.
    assert "love and strength" in answer, answer
    assert "every day" not in answer, answer
    assert len(answer.splitlines()) == 2, answer


def test_what_the_speaker_answered_when_asked_next_is_quoted() -> None:
    pool = _read(
        ("Omar", "We celebrated my daughter's birthday with a concert in the park."),
        ("Ines", "Oh fun! Who played?"),
        ("Omar", "It was Matt Patterson, he is so talented! The kids danced all night."),
    )
    answer = _quoted(pool, pool[0], "Who played at the concert for Omar's daughter's birthday?")
    assert "Matt Patterson" in answer, answer
    # Asked when, the reply is left out: the day the quote was said answers that.
    dated = _quoted(pool, pool[0], "When did Omar celebrate his daughter's birthday?", True)
    assert "Matt Patterson" not in dated, dated


def test_a_reply_to_no_question_is_not_taken_for_an_answer() -> None:
    pool = _read(
        ("Omar", "We celebrated my daughter's birthday with a concert in the park."),
        ("Ines", "That sounds lovely."),
        ("Omar", "My brother called about his new job too."),
    )
    answer = _quoted(pool, pool[0], "Who played at the concert for Omar's daughter's birthday?")
    assert "brother" not in answer, answer


def test_thanks_and_greetings_are_never_quoted() -> None:
    pool = _read(
        ("Omar", "I wear my grandma's necklace every day."),
        ("Ines", "Lovely! Did she give it to you?"),
        ("Omar", "Thanks, Ines! Talk to you later!"),
    )
    names = {"omar", "ines"}
    assert says_nothing("Thanks, Ines!", names)
    assert says_nothing("Talk to you later!", names)
    assert says_nothing("Yeah, In!", names)  # a name cut short is still the name
    assert not says_nothing("Been only to Rome once.", names)  # a place is not a speaker
    assert not says_nothing("Luna and Oliver!", names)  # names that are not the speakers'
    assert not says_nothing("17!", names)  # a number says something
    # Offered as Omar's reply to Ines's question, it is left out: it says nothing.
    answer = _quoted(pool, pool[0], "What does Omar wear every day?")
    assert "Thanks" not in answer and "later" not in answer, answer


def test_a_sentence_already_in_a_quote_is_not_quoted_again_in_it() -> None:
    pool = _read(("Omar", "The kids loved the museum. Those moments make it worth it."))
    led = replace(pool[0], text=f"{pool[0].text} {pool[1].text}", order=pool[1].order)
    direct = DirectAnswer(NOT_SAID, [], False, "thing")
    reading = Reading([pool[1], led], [], [pool[1], led], pool)
    quoted = quotation(direct, reading, set(question_terms("What moments make it worth it?")))
    assert len(quoted) == 1 and quoted[0].text.count("Those moments") == 1, quoted
