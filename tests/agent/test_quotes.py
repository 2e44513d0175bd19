"""The quotes under the direct answer: a sentence each, not a turn; a list's items said in
different sessions each quoted; nothing quoted twice; the turns of one quote under one
citation. On a real knowledge base, with the real indexes and model."""

from __future__ import annotations

import re

import pytest
from helpers.talk import memorize

from kbmem.agent.session import ChatSession
from kbmem.memorize.template import init_kb
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
