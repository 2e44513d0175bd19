"""Extractors read past the best sentence only among those near it (Ranking.near): a
sentence weighing less than half the best's score says little of what was asked, whatever
else it has that an extractor looks for. Synthetic turns through the real functions."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.direct import NOTHING, direct_answer
from kbmem.research.ranking import NEAR, Ranking
from kbmem.research.said import read_sentences
from kbmem.research.types import EvidenceItem

QUESTION = "Where did Ilse go hiking with her brother last summer?"


def _items(later: str) -> list[EvidenceItem]:
    return [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "Went hiking with my brother last summer, loved every minute."),
        ),
        turns_item("s2", "2024-04-01T09:00:00", ("Marta", "How is he?"), ("Ilse", later)),
    ]


def test_near_keeps_the_ranked_sentences_within_half_the_best_score() -> None:
    ranking = Ranking(QUESTION, read_sentences(_items("My brother is in the city this week.")))
    top = ranking.ranked[0][0]
    scores = {s.text: score for score, _share, s in ranking.ranked}
    near = ranking.near()
    assert near[0] is ranking.best()
    assert [s.text for s in near] == [t for t, score in scores.items() if score >= NEAR * top][:3]
    # The sentence about where the brother is now weighs under half the best.
    assert "My brother is in the city this week." in scores
    assert "My brother is in the city this week." not in [s.text for s in near]


def test_a_place_said_far_below_the_best_sentence_does_not_answer_where() -> None:
    # Where the brother is this week says nothing of where they hiked last summer.
    answer = direct_answer(QUESTION, _items("My brother is in the city this week."))
    assert "city" not in answer.line
    assert answer.line == NOTHING


def test_a_place_said_near_the_best_sentence_still_answers_where() -> None:
    answer = direct_answer(QUESTION, _items("Last summer my brother lived at the coast."))
    assert answer.line.startswith("the coast")
