"""The sentence after the direct answer's own, in its turn, that goes on about it by a pronoun
is quoted with it though it names none of the question's words (kbmem.agent.offline.quotation,
goes_on): "She gave it to me when I was young, and it stands for love." says what the
necklace stands for without saying "necklace". Hand-built turns through the real functions."""

from __future__ import annotations

from datetime import date

from helpers.evidence import turns_item

from kbmem.agent.offline import Reading, Sentence, question_terms, quotation
from kbmem.research.types import DirectAnswer, Said

TURN = (
    "Caroline",
    "This necklace is super special to me - a gift from my grandma in Sweden. "
    "She gave it to me when I was young, and it stands for love, faith and strength.",
)
OTHER = ("Caroline", "My hand-painted bowl reminds me of art class with my brother.")
QUESTION = "What does Caroline's necklace symbolize?"


def _quoted(dated: bool = False) -> list[str]:
    item = turns_item("s-gift", "2026-03-01T10:00:00", TURN)
    other_item = turns_item("s-bowl", "2026-03-08T10:00:00", OTHER)
    gift, gave = TURN[1].split(". ", 1)
    pool = [
        Sentence(gift + ".", "Caroline", item, 10, 11, frozenset(), 1),
        Sentence(gave, "Caroline", item, 10, 11, frozenset(), 2),
        Sentence(OTHER[1], "Caroline", other_item, 10, 11, frozenset(), 3),
    ]
    source, bowl = pool[0], pool[2]
    said = [
        Said(s.text, s.speaker, date(2026, 3, 1), s.item, s.start, s.end) for s in (source, bowl)
    ]
    direct = DirectAnswer("a gift from my grandma", said[:1], True, "thing")
    direct.ranked = said
    reading = Reading([source], [], [source, bowl], pool)
    return [q.text for q in quotation(direct, reading, set(question_terms(QUESTION)), dated)]


def test_the_sentence_going_on_about_the_answers_own_is_quoted() -> None:
    quoted = _quoted()
    assert any("love, faith and strength" in q for q in quoted), quoted


def test_not_when_the_question_asks_when() -> None:
    # The days of quotes from other sessions answer it: they keep the room.
    quoted = _quoted(dated=True)
    assert not any("love, faith and strength" in q for q in quoted), quoted
