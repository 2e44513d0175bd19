"""Who is asked: a person other than those the question names, and when no one is named,
the person a sentence opens with by relation ("My uncle …"). End to end on a memorized
conversation with the real indexes and the offline agent."""

from __future__ import annotations

from pathlib import Path

from helpers.talk import memorize

from kbmem.agent.session import ChatSession
from kbmem.memorize.template import init_kb


def test_who_is_answered_by_a_relation_when_no_one_is_named(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        "acme",
        {
            "s-1": (
                "2026-02-05",
                [
                    ("Tomas", "Thanks, Ilse."),
                    ("Ilse", "My uncle loved sailing, so I'm inspired by him to start sailing."),
                    ("Tomas", "Family is everything - Even though mine is small."),
                ],
            ),
        },
    )
    with ChatSession(kb, "acme") as chat:
        reply = chat.send("Who inspired Ilse to start sailing?")
    # The question's own name is no answer to "who", nor a capital opening a clause.
    assert reply.answer.split("\n", 1)[0].split(" (")[0] == "Ilse's uncle", reply.answer
