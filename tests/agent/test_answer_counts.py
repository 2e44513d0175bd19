"""A count said as an ordinal: "my third chess tournament" is the third of them so far, so
"how many" is answered by the largest ordinal said before the counted noun, named as the
question names it. On synthetic turns (no index), then end to end on a memorized
conversation with the real indexes and the offline agent."""

from __future__ import annotations

from pathlib import Path

from helpers.evidence import turns_item
from helpers.talk import memorize

from kbmem.agent.session import ChatSession
from kbmem.memorize.template import init_kb
from kbmem.research.direct import direct_answer

FIRST = "I won my first chess tournament today!"
THIRD = "Guess what, I won my third chess tournament this weekend."
QUESTION = "How many chess tournaments has Tomas won?"


def test_the_largest_ordinal_before_the_counted_noun_is_the_count() -> None:
    items = [
        turns_item("s1", "2024-03-01T09:00:00", ("Tomas", FIRST)),
        turns_item("s2", "2024-05-01T09:00:00", ("Tomas", THIRD)),
    ]
    assert direct_answer(QUESTION, items).line == "3 chess tournaments"


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
    assert counted.answer.startswith("3 chess tournaments"), counted.answer
