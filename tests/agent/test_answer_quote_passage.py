"""When the direct answer is weak, the quotes under it look first in the passage it was taken
from (kbmem.agent.offline.quotation, same_passage): a conversation tells a thing over a few
turns, so the rest of the answer is more often said around the weak line's sentence than in
the passage the ranking puts next. Hand-built turns through the real functions."""

from __future__ import annotations

from datetime import date

from helpers.evidence import turns_item

from kbmem.agent.offline import Reading, Sentence, question_terms, quotation
from kbmem.research.types import DirectAnswer, Said

# Sentences long enough that the budget holds two of them with their citations, not three.
TRIP = (
    (
        "Lena",
        "I finally went on the trip to the mountains with my old friends from school, the "
        "ones I had not seen since we all moved away to different cities years ago.",
    ),
    ("Ravi", "How lovely."),
    ("Lena", "Thanks."),
    ("Ravi", "Anything else?"),
    (
        "Lena",
        "The best part of the whole trip was the sunrise we watched together from the top of "
        "the ridge, wrapped in blankets, with hot tea from the flask my mother gave me.",
    ),
)
OTHER = (
    (
        "Lena",
        "My brother is planning a trip to the coast with his colleagues next summer, and he "
        "keeps asking me which of the small towns along the shore has the best beaches.",
    ),
)
QUESTION = "What was the best part of Lena's trip?"


def _sentences(session: str, turns: tuple[tuple[str, str], ...]) -> list[Sentence]:
    item = turns_item(session, "2026-03-01T10:00:00", *turns)
    return [
        Sentence(text, speaker, item, 10 + 3 * n, 11 + 3 * n, frozenset(), n + 1)
        for n, (speaker, text) in enumerate(turns)
    ]


def _said(sentence: Sentence) -> Said:
    return Said(
        sentence.text,
        sentence.speaker,
        date(2026, 3, 1),
        sentence.item,
        sentence.start,
        sentence.end,
    )


def _quoted(firm: bool, dated: bool = False) -> list[str]:
    trip, other = _sentences("s-trip", TRIP), _sentences("s-work", OTHER)
    source, sunrise, brother = trip[0], trip[4], other[0]
    ranked = [source, brother, sunrise]  # the ranking puts the other passage second
    direct = DirectAnswer("the mountains", [_said(source)], firm, "thing")
    direct.ranked = [_said(s) for s in ranked]
    reading = Reading([source], [], ranked, trip + other)
    quotes = quotation(direct, reading, set(question_terms(QUESTION)), dated)
    return [q.text for q in quotes]


def test_a_weak_answer_is_quoted_with_more_of_its_own_passage() -> None:
    quoted = _quoted(firm=False)
    assert any("sunrise" in q for q in quoted), quoted
    assert not any("brother" in q for q in quoted), quoted


def test_a_firm_answer_keeps_the_ranking_order() -> None:
    quoted = _quoted(firm=True)
    assert any("brother" in q for q in quoted), quoted


def test_asked_when_the_quotes_keep_other_passages_days() -> None:
    quoted = _quoted(firm=False, dated=True)
    assert any("brother" in q for q in quoted), quoted
