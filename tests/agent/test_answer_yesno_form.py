"""A yes or no is not denied by a sentence that only says the speaker does not know ("I
can't say if …") or offers both answers ("… or not"); and a note after the question on the
form of its answer ("Answer yes or no.") is no choice offered. Synthetic turns, the real
functions."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.answer_types import question_kind, without_form_note
from kbmem.research.direct import direct_answer

QUESTION = "Would Tomas enjoy the pottery class at the harbour?"
UNKNOWING = "I can't say if I will enjoy the pottery class at the harbour, we will see."
OR_NOT = "Whether I enjoy the pottery class at the harbour or not, I'm going."
DENIAL = "I don't enjoy the pottery class at the harbour at all."


def _line(sentence: str) -> str:
    item = turns_item("s1", "2024-07-02T09:00:00", ("Tomas", sentence))
    return direct_answer(QUESTION, [item]).line


def test_not_knowing_whether_is_no_no() -> None:
    assert _line(UNKNOWING).startswith("Likely yes")


def test_or_not_is_no_no() -> None:
    assert _line(OR_NOT).startswith("Likely yes")


def test_a_plain_denial_still_is() -> None:
    assert _line(DENIAL).startswith("Likely no")


def test_a_note_on_the_answer_s_form_is_not_part_of_the_question() -> None:
    asked = "Was March a good month for Tomas? Answer yes or no."
    assert without_form_note(asked) == "Was March a good month for Tomas?"
    assert question_kind(without_form_note(asked)) == "yesno"
    item = turns_item("s1", "2024-03-30T09:00:00", ("Tomas", "March was a good month for me."))
    assert direct_answer(asked, [item]).line.startswith("Yes")


def test_a_real_choice_keeps_its_alternatives() -> None:
    asked = "Would Tomas rather go to the beach or the mountains?"
    assert without_form_note(asked) == asked
