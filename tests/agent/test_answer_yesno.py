"""A yes or no takes its polarity from a sentence that says enough of the question: the
negation of a sentence about something else ("the ferry didn't run") is not the answer's.
On synthetic turns (no index), then end to end on a memorized conversation with the real
indexes and the offline agent."""

from __future__ import annotations

from pathlib import Path

from helpers.evidence import turns_item
from helpers.talk import memorize

from kbmem.agent.session import ChatSession
from kbmem.memorize.template import init_kb
from kbmem.research.direct import WEAK, direct_answer

QUESTION = "Would Tomas enjoy a pottery class at the harbour?"
ASIDE = "The ferry didn't run on Sunday, so the harbour was quiet."
REFUSAL = "I never want to touch clay again, the pottery class was a mess."


def test_a_negation_in_a_sentence_about_something_else_is_not_the_answer_s() -> None:
    item = turns_item("s1", "2024-07-02T09:00:00", ("Tomas", ASIDE))
    assert direct_answer(QUESTION, [item]).line == f"Likely yes {WEAK}"


def test_a_negation_in_a_sentence_about_the_question_is() -> None:
    item = turns_item("s1", "2024-07-02T09:00:00", ("Tomas", ASIDE), ("Tomas", REFUSAL))
    assert direct_answer(QUESTION, [item]).line.startswith("Likely no; ")


def test_a_memorized_conversation_answers_yes_or_no_from_what_is_said(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(kb, "acme", {"s-ferry": ("2026-03-01", [("Ilse", "Busy week?"), ("Tomas", ASIDE)])})
    with ChatSession(kb, "acme") as chat:
        aside = chat.send(QUESTION)
    memorize(kb, "acme", {"s-clay": ("2026-03-08", [("Ilse", "How was it?"), ("Tomas", REFUSAL)])})
    with ChatSession(kb, "acme") as chat:
        refused = chat.send(QUESTION)
    assert aside.answer.split("\n", 1)[0] == f"Likely yes {WEAK}", aside.answer
    assert refused.answer.startswith("Likely no; "), refused.answer
